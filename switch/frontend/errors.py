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


MISSING_MAIN = "Program does not contain a `main' module"


class MissingMainError(CompileError):
    """A program without ``main``. p4c's front end accepts it (only a back end needs a
    package instance); p4c-bm2-ss writes the P4Info it was asked for (no tables: nothing is
    instantiated), prints ``warning: Program does not contain a `main' module`` and exits 1
    without a JSON. ``p4info`` carries that P4Info so the command line can do the same."""

    def __init__(self, file: str, p4info: object = None) -> None:
        super().__init__(SourcePos(file, 0), MISSING_MAIN)
        self.file = file
        self.p4info = p4info

    def format(self) -> str:
        # p4c's line, then ours: every failed compile of ours ends with an `error:` line
        return (
            f"warning: {MISSING_MAIN}\n"
            f"{self.file}: error: no pipeline for BMv2 without 'V1Switch(...) main;'"
        )

    def __str__(self) -> str:
        # where a switch refuses the program: one line naming the file and what it needs
        return f"{self.file}: error: {MISSING_MAIN}; the switch needs 'V1Switch(...) main;'"


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


@dataclass(frozen=True)
class CompileWarning:
    """A p4c-style warning: printed, never fatal. ``kind`` is p4c's diagnostic name
    (``shadow``), ``related`` the other declaration p4c shows under the message."""

    pos: SourcePos
    kind: str
    message: str
    related: SourcePos | None = None

    def head(self) -> str:
        return f"{self.pos}: [--Wwarn={self.kind}] warning: {self.message}"

    def format(self) -> str:
        """p4c's layout: the message and source line, then the related place and its line."""
        lines = [self.head()]
        for pos in (self.pos, self.related):
            if pos is None:
                continue
            if pos is self.related:
                lines.append(str(pos))
            src = source_line(pos)
            if src is not None:
                lines.append(src)
        return "\n".join(lines)
