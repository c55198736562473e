"""Diagnostics: every user-facing error carries the original file and line.

The command line prints them the way p4c does: ``FILE(LINE): error: message`` followed by
the offending source line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourcePos:
    """A place in the original (pre-preprocessing) source."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}({self.line})"


NOWHERE = SourcePos("<unknown>", 0)


class CompileError(Exception):
    """A diagnosed problem in the user's program or its command line."""

    def __init__(self, pos: SourcePos | None, message: str) -> None:
        super().__init__(message)
        self.pos = pos or NOWHERE
        self.message = message

    def format(self) -> str:
        """p4c's layout: ``FILE(LINE): error: message`` plus the source line when readable."""
        head = f"{self.pos}: error: {self.message}" if self.pos.line else f"error: {self.message}"
        src = source_line(self.pos)
        return f"{head}\n{src}" if src is not None else head

    def __str__(self) -> str:
        return f"{self.pos}: error: {self.message}"


def source_line(pos: SourcePos) -> str | None:
    """The text of the line ``pos`` names, or None when the file cannot be read."""
    if pos.line <= 0:
        return None
    try:
        with Path(pos.file).open("rb") as f:
            for number, raw in enumerate(f, start=1):
                if number == pos.line:
                    return raw.decode("utf-8", "replace").rstrip("\r\n")
    except OSError:
        return None
    return None
