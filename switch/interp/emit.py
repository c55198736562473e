"""A small helper that builds the Python source of generated functions."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager


class Emitter:
    """Indented lines of one generated function, plus fresh temporary names."""

    def __init__(self, counter: list[int]) -> None:
        self.lines: list[str] = []
        self.level = 1
        self._counter = counter  # shared by all emitters of a program: names stay unique

    def line(self, text: str) -> None:
        self.lines.append("    " * self.level + text)

    def parallel(self, targets: list[str], values: list[str]) -> None:
        """``a, b = x, y``; nothing for a value without slots (an empty struct, ``{}``)."""
        if targets:
            self.line(f"{', '.join(targets)} = {', '.join(values)}")

    @contextmanager
    def indent(self) -> Iterator[None]:
        self.level += 1
        mark = len(self.lines)
        try:
            yield
        finally:
            if len(self.lines) == mark:
                self.line("pass")
            self.level -= 1

    def temp(self, hint: str = "t") -> str:
        self._counter[0] += 1
        return f"_{hint}{self._counter[0]}"

    def source(self, header: str) -> str:
        body = self.lines or ["    pass"]
        return header + "\n" + "\n".join(body) + "\n"


def tuple_code(items: Iterable[str]) -> str:
    """A Python tuple display of ``items``; ``()`` when there are none (an empty struct)."""
    return "(" + "".join(f"{item}, " for item in items) + ")"
