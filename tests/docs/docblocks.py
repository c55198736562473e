"""The examples of the Markdown documentation, as the doc tests run them.

A fenced block is an *example* when its info string is a shell (``sh``, ``bash``,
``shell``, ``console``) or Python (``python``, ``py``), or when it has no info string and
its first line is a command (``$ ...``, ``p4reduce...``, ``.venv/bin/...``, ``python ...``,
``make ...``, ``sudo ...``). Other blocks (JSON, P4, diagrams, sample output) are not run.

Each example runs unless the HTML comment just before its fence says otherwise:

    <!-- doctest: OPTION; OPTION; ... -->

with the options (``;``-separated, each ``key`` or ``key: value``):

- ``skip: REASON``  not run; the reason (the rest of the marker) is printed in the
  suite's summary;
- ``synopsis``      a usage synopsis: every ``--option`` it names must appear in the
  ``--help`` of its program (and of the subcommands its indented lines name);
- ``api: MODULE... [ALIAS=NAME]...``  an API listing: every ``name(...)`` it writes must
  exist in the modules, with the real parameters (tests/docs/docapi.py);
- ``group: NAME``   the examples of a file with one group run in order in one scratch
  directory, sharing its background processes (a walkthrough);
- ``file: NAME``    the block is written to NAME in the scratch directory, not run;
- ``setup: CMD``    a shell command run first (must succeed);
- ``background: CMD``  a process started first and kept until the group ends (as a
  command line ending in ``&`` in a shell block): the runner waits for its ``ready`` line;
- ``expect: REGEX`` the block's output must contain a match (repeatable);
- ``timeout: S``    seconds for the block (default 30).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

SHELLS = {"sh", "bash", "shell", "console"}
PYTHONS = {"python", "py"}
KEYS = {"skip", "synopsis", "api", "group", "file", "setup", "background", "expect", "timeout"}
MARKER = re.compile(r"^<!--\s*doctest:(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)(```+|~~~+)\s*([\w+-]*)")
COMMANDISH = re.compile(r"^(\$ |p4reduce|\.venv/bin/|python3? |make |sudo )")
MESSAGE = re.compile(r"^\S+( \S+)?: ")  # "prog: error: ...": a message shown, not a command


class MarkerError(ValueError):
    """A doctest marker that cannot be understood (names its file and line)."""


@dataclass
class Block:
    """One example: where it is, what it is, and how its marker says to run it."""

    path: Path
    line: int  # of the opening fence, 1-based
    lang: str  # "sh" or "python"
    text: str
    options: dict[str, list[str]] = field(default_factory=dict)

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"

    def option(self, key: str, default: str | None = None) -> str | None:
        values = self.options.get(key)
        return values[-1] if values else default

    @property
    def marked(self) -> bool:
        return bool(self.options)


def parse_marker(text: str, where: str) -> dict[str, list[str]]:
    """The options of a marker's body (``skip: why; group: g``)."""
    options: dict[str, list[str]] = {}
    parts = text.split(";")
    for n, part in enumerate(parts):
        part = part.strip()
        if not part:
            continue
        key, _, value = part.partition(":")
        key, value = key.strip(), value.strip()
        if key == "skip":  # the reason is the rest of the marker, semicolons included
            value = ";".join([value, *parts[n + 1 :]]).strip()
        if key not in KEYS:
            raise MarkerError(f"{where}: unknown doctest option {key!r} (known: {sorted(KEYS)})")
        if key == "skip" and not value:
            raise MarkerError(f"{where}: 'skip' needs a reason ('skip: needs root')")
        options.setdefault(key, []).append(value)
        if key == "skip":
            break
    if not options:
        raise MarkerError(f"{where}: empty doctest marker")
    return options


def _lang(info: str, first_line: str) -> str | None:
    info = info.lower()
    if info in SHELLS:
        return "sh"
    if info in PYTHONS:
        return "python"
    line = first_line.lstrip()
    if not info and COMMANDISH.match(line) and not MESSAGE.match(line):
        return "sh"
    return None


def blocks(path: Path) -> list[Block]:
    """Every example of a Markdown file, with its marker's options."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, fence, info = m.groups()
        body: list[str] = []
        j = i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j])
            j += 1
        if j == len(lines):
            raise MarkerError(f"{path.name}:{i + 1}: fence never closed")
        marker = MARKER.match(lines[i - 1].strip()) if i > 0 else None
        options = parse_marker(marker.group(1), f"{path.name}:{i}") if marker else {}
        lang = _lang(info, body[0] if body else "")
        if lang is not None:
            found.append(Block(path, i + 1, lang, "\n".join(body) + "\n", options))
        elif marker:
            raise MarkerError(f"{path.name}:{i}: doctest marker on a block that is not an example")
        i = j + 1
    return found


def documents(root: Path) -> list[Path]:
    """README.md and docs/*.md."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def commands(text: str) -> list[str]:
    """The command lines of a shell block: continuations joined, comments and blank lines
    dropped; in a console block (``$ `` prompts) only the prompted lines (the rest is
    output)."""
    lines = text.splitlines()
    console = any(line.startswith("$ ") for line in lines)
    out: list[str] = []
    pending = ""
    for raw in lines:
        if pending:
            line = raw.strip()
        elif console:
            if not raw.startswith("$ "):
                continue
            line = raw[2:].strip()
        else:
            line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        out.append(strip_comment(pending + line))
        pending = ""
    if pending:
        out.append(strip_comment(pending))
    return out


def strip_comment(line: str) -> str:
    """The line without a trailing ``# comment`` (a ``#`` after a space, outside quotes)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()
