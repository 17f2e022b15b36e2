"""One error type for everything a user can get wrong in a scenario or on the command line."""
from __future__ import annotations

MAX_MESSAGES = 20  # problems listed for one input; the rest are counted ("… and N more")
MAX_MESSAGE_CHARS = 400  # a message quoting a value (a trace's line) is cut here: one line, not a file


class ScenarioError(Exception):
    """Bad input: names the file and the field path; the CLI prints it and exits 2."""

    def __init__(self, message: str, file: str | None = None, field: str | None = None):
        if len(message) > MAX_MESSAGE_CHARS:
            message = message[:MAX_MESSAGE_CHARS] + "…"
        message = " ".join(message.splitlines()) if "\n" in message else message
        self.message, self.file, self.field = message, file, field
        self.others: list[ScenarioError] = []  # further problems found in the same input
        self.unlisted = 0  # and how many more were found but not made into messages
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(p for p in (self.file, self.field) if p)
        return f"{where}: {self.message}" if where else self.message

    def all_messages(self) -> list[str]:
        """At most MAX_MESSAGES lines, then one that counts the rest."""
        lines = [str(self)] + [str(o) for o in self.others[:MAX_MESSAGES - 1]]
        more = len(self.others) - (MAX_MESSAGES - 1) + self.unlisted if len(self.others) >= MAX_MESSAGES \
            else self.unlisted
        return lines + ([f"… and {more:,} more"] if more > 0 else [])


class ValidatorBug(ScenarioError):
    """A model's own validator failed on odd input instead of refusing it: still bad input to
    the user (exit 2, one line), but a bug of kvviz's, which the fuzz test reports."""
