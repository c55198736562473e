"""Objects the generated code and the packet path share at run time.

The generated Python code of a program raises these exceptions and reads and writes a
``PacketContext``; nothing here knows about the program's types.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


class ParserError(Exception):
    """A parser error (``error`` member index): the parser goes to reject with it set."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class ExitPipeline(Exception):
    """``exit``: ends the current top-level control (ingress, egress, ...)."""


class P4RuntimeFault(Exception):
    """A fault BMv2 reports and stops on (failed assert/assume, stack index out of range...).

    ``where`` is ``FILE(LINE)`` of the P4 statement, so the report points at the source.
    """

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: runtime error: {message}")
        self.where = where
        self.message = message


@dataclass
class CloneRequest:
    kind: int  # 0 ingress-to-egress, 1 egress-to-egress (v1model CloneType order)
    session: int
    field_list: int | None  # preserved @field_list index, None: nothing preserved
    explicit_slots: tuple[int, ...] = ()  # deprecated clone3(data): the slots named by data


@dataclass
class PreserveRequest:
    """A resubmit or recirculate request: which metadata survives."""

    field_list: int | None
    explicit_slots: tuple[int, ...] = ()


class PacketContext:
    """Per-packet state that is not P4 storage: the bytes, the parser cursor and requests."""

    __slots__ = (
        "data",
        "pos",
        "out",
        "clone",
        "resubmit",
        "recirculate",
        "digests",
        "truncate",
        "now_us",
        "trace",
        "color",
        "length",
    )

    def __init__(self, data: bytes, now_us: int = 0) -> None:
        self.data = data  # the bytes the parser reads
        self.pos = 0  # parser cursor, in bytes
        self.out: list[bytes] = []  # the deparser's emitted headers
        self.clone: CloneRequest | None = None
        self.resubmit: PreserveRequest | None = None
        self.recirculate: PreserveRequest | None = None
        self.digests: list[tuple[str, Any]] = []
        self.truncate: int | None = None
        self.now_us = now_us
        self.trace: list[str] | None = None  # per-packet log of tables and actions, when asked
        self.color = 0  # the colour of the direct meter of the entry just hit
        self.length = len(data)  # BMv2's packet-length register (setValid/setInvalid adjust it)
