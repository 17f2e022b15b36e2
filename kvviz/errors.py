"""One error type for everything a user can get wrong in a scenario or on the command line."""
from __future__ import annotations

from .format import clip, printable

MAX_MESSAGES = 20  # problems listed for one input; the rest are counted ("… and N more")
MAX_MESSAGE_CHARS = 400  # a message quoting a value (a trace's line) is cut here: one line, not a file
MAX_FIELD_CHARS = 120  # a field path (a 100,000-character unknown key) is cut in its middle here
MAX_FILE_CHARS = 300  # and so is a file name (or the command named in its place)


class ScenarioError(Exception):
    """Bad input: names the file and the field path; the CLI prints it and exits 2."""

    def __init__(self, message: str, file: str | None = None, field: str | None = None):
        # the message is for reading (the app shows it at its field); the field stays as given,
        # a path the app finds the field by, and is made readable where the line is made
        self.message, self.file, self.field = _readable(message), file, field
        self.others: list[ScenarioError] = []  # further problems found in the same input
        self.unlisted = 0  # and how many more were found but not made into messages
        super().__init__(str(self))

    def __str__(self) -> str:
        where = ": ".join(clip(printable(p), n) for p, n in ((self.file, MAX_FILE_CHARS),
                                                              (self.field, MAX_FIELD_CHARS)) if p)
        message = _readable(self.message)  # again: a caller may have added to it (a sweep's point)
        return f"{where}: {message}" if where else message

    def all_messages(self) -> list[str]:
        """At most MAX_MESSAGES lines, then one that counts the rest."""
        lines = [str(self)] + [str(o) for o in self.others[:MAX_MESSAGES - 1]]
        more = len(self.others) - (MAX_MESSAGES - 1) + self.unlisted if len(self.others) >= MAX_MESSAGES \
            else self.unlisted
        return lines + ([f"… and {more:,} more"] if more > 0 else [])


def _readable(message: str) -> str:
    """One line of at most MAX_MESSAGE_CHARS, its control characters escaped (a scenario's text
    quoted in it must not clear the screen or fake a line); kvviz's own line breaks as spaces."""
    message = printable(message.replace("\n", " "))
    return message[:MAX_MESSAGE_CHARS] + "…" if len(message) > MAX_MESSAGE_CHARS else message


class ValidatorBug(ScenarioError):
    """A model's own validator failed on odd input instead of refusing it: still bad input to
    the user (exit 2, one line), but a bug of kvviz's, which the fuzz test reports."""
