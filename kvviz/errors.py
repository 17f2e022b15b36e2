"""One error type for everything a user can get wrong in a scenario or on the command line."""
from __future__ import annotations


class ScenarioError(Exception):
    """Bad input: names the file and the field path; the CLI prints it and exits 2."""

    def __init__(self, message: str, file: str | None = None, field: str | None = None):
        self.message, self.file, self.field = message, file, field
        self.others: list[ScenarioError] = []  # further problems found in the same input
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(p for p in (self.file, self.field) if p)
        return f"{where}: {self.message}" if where else self.message

    def all_messages(self) -> list[str]:
        return [str(self)] + [str(o) for o in self.others]


class ValidatorBug(ScenarioError):
    """A model's own validator failed on odd input instead of refusing it: still bad input to
    the user (exit 2, one line), but a bug of kvviz's, which the fuzz test reports."""
