"""Slot state through control messages: the way to clear and read cells on a target whose
P4Runtime server has no RegisterEntry (BMv2's simple_switch_grpc answers UNIMPLEMENTED).

Each message is one P4Runtime PacketOut, injected by the switch on its CPU port: an
aggregation frame with ``msgType = MSG_CONTROL``, the op in the rank field (``CTL_CLEAR`` or
``CTL_PEEK``) and one cell (set, absolute pool slot). The program takes it from the CPU port
only and answers each on the CPU port (a PacketIn) with the cell's state after the op:
bitmap word in ``block``, count byte in ``key``, ``exponent``, ``nonfinite``, ``next`` and,
when the request carried a payload, the K lanes (docs/protocol.md, "Control messages").

PacketOut is not acknowledged by P4Runtime, so the answers are the acknowledgement: messages
go out in a window, unanswered ones are sent again (both ops are idempotent), and a switch
that answers nothing (no ``--cpu-port``, or not a p4reduce program of this version) is one
line after a bounded wait.
"""

from __future__ import annotations

import itertools
import queue
import struct
import time
from collections.abc import Iterable
from dataclasses import dataclass

from . import program
from .errors import SwitchError
from .p4rt import Connection

WINDOW = 256  # messages in flight: far below any queue of the switch or of gRPC
ANSWER_WAIT = 1.0  # seconds without any answer before the unanswered are sent again
TRIES = 4  # sendings of one message before the switch is declared silent

_AGG = struct.Struct(">BBHHBBIIII")  # docs/protocol.md, "Aggregation header"
_ETH_IPV4 = b"\x00" * 12 + b"\x08\x00"  # both MACs zero: the frame never leaves the switch
_HEADERS = 14 + 20 + 8  # Ethernet, IPv4, UDP
_ids = itertools.count(1)


@dataclass(frozen=True)
class Cell:
    """One cell's state as a control answer reports it."""

    slot: int  # absolute pool slot
    set: int
    bitmap_word: int  # the set's 32-bit worker bitmap
    count: int  # the count byte: bits 5..0 the count, bit 7 "had a payload"
    exponent: int
    nonfinite: int
    next: int  # sparse: next_min; dense: 0
    lanes: tuple[int, ...] | None  # unsigned 32-bit words; None for a header-only request


def _ipv4_checksum(header: bytes) -> int:
    total = sum(struct.unpack(">10H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def frame(op: int, slot: int, set_: int, packet_id: int, lanes: int) -> bytes:
    """The control message for one cell; ``lanes`` > 0 asks for the K lanes in the answer
    (a payload of zeros, which the switch never adds)."""
    flags = 0 if lanes else program.FLAG_NO_PAYLOAD
    agg = _AGG.pack(
        program.MSG_CONTROL << 4 | flags, op, 0, set_ << 15 | slot, 0, 0, packet_id, 0, 0, 0
    ) + bytes(4 * lanes)
    udp_len = 8 + len(agg)
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + udp_len, 0, 0, 64, 17, 0,
                               bytes(4), bytes(4)))  # fmt: skip
    ip[10:12] = _ipv4_checksum(bytes(ip)).to_bytes(2, "big")
    udp = struct.pack(">HHHH", program.AGG_PORT, program.AGG_PORT, udp_len, 0)
    return _ETH_IPV4 + bytes(ip) + udp + agg


def parse_answer(data: bytes, lanes: int) -> tuple[int, int, Cell] | None:
    """(packet id, op, cell) of a control answer; None for any other frame on the CPU port."""
    if len(data) < _HEADERS + _AGG.size or data[12:14] != b"\x08\x00" or data[23] != 17:
        return None
    if int.from_bytes(data[36:38], "big") != program.AGG_PORT:
        return None
    b0, op, _, set_slot, exponent, nonfinite, packet_id, block, nxt, key = _AGG.unpack_from(
        data, _HEADERS
    )
    if b0 >> 4 != program.MSG_CONTROL or not b0 & program.FLAG_RESULT:
        return None
    words = None
    if not b0 & program.FLAG_NO_PAYLOAD:
        at = _HEADERS + _AGG.size
        if len(data) < at + 4 * lanes:
            return None
        words = struct.unpack_from(f">{lanes}I", data, at)
    cell = Cell(
        set_slot & 0x7FFF, set_slot >> 15, block, key & 0xFF, exponent, nonfinite, nxt, words
    )
    return packet_id, op, cell


def exchange(
    conn: Connection, op: int, cells: Iterable[tuple[int, int]], lanes: int, what: str
) -> dict[tuple[int, int], Cell]:
    """Send ``op`` for every (absolute slot, set) and collect each cell's answer (one
    exchange per connection at a time: each takes every answer off the queue)."""
    with conn.packet_lock:
        return _exchange(conn, op, list(cells), lanes, what)


def _exchange(
    conn: Connection, op: int, todo: list[tuple[int, int]], lanes: int, what: str
) -> dict[tuple[int, int], Cell]:
    pending: dict[int, tuple[int, int]] = {}  # packet id -> cell, sent and unanswered
    tries: dict[int, int] = {}
    out: dict[tuple[int, int], Cell] = {}
    _drain(conn)
    at = 0
    while at < len(todo) or pending:
        while at < len(todo) and len(pending) < WINDOW:
            pid = next(_ids) & 0xFFFFFFFF
            pending[pid] = todo[at]
            tries[pid] = 1
            conn.packet_out(frame(op, *todo[at], pid, lanes))
            at += 1
        try:
            got = conn.packets.get(timeout=ANSWER_WAIT)
        except queue.Empty:
            _resend(conn, op, pending, tries, lanes, what)
            continue
        if isinstance(got, str):  # the switch refused a PacketOut
            raise SwitchError(f"{what}: the switch refused a control message: {got}")
        answer = parse_answer(got, lanes)
        if answer is None:
            continue
        pid, got_op, cell = answer
        want = pending.get(pid)
        if want is None or got_op != op or want != (cell.slot, cell.set):
            continue  # an answer to an earlier sending, or not ours
        del pending[pid]
        out[want] = cell
    return out


def _resend(
    conn: Connection,
    op: int,
    pending: dict[int, tuple[int, int]],
    tries: dict[int, int],
    lanes: int,
    what: str,
) -> None:
    if any(tries[pid] >= TRIES for pid in pending):
        raise SwitchError(
            f"{what}: {len(pending)} control messages to the CPU port went unanswered, each "
            f"sent {TRIES} times (is the switch started with --cpu-port {program.CPU_PORT}, "
            "running a p4reduce program with control messages?)"
        )
    for pid, cell in pending.items():
        tries[pid] += 1
        conn.packet_out(frame(op, *cell, pid, lanes))


def _drain(conn: Connection) -> None:
    """Drop answers left over from an earlier exchange that timed out."""
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        try:
            conn.packets.get_nowait()
        except queue.Empty:
            return


def slot_cells(base: int, count: int) -> list[tuple[int, int]]:
    return [(s, t) for s in range(base, base + count) for t in (0, 1)]


def clear(conn: Connection, base: int, count: int) -> None:
    """Zero both cells of slots base..base+count-1: bitmap words, counts, exponents,
    nonfinite bits, next_min and lanes (each answer says the cell is zero now)."""
    what = f"clear slots {base}..{base + count - 1}"
    got = exchange(conn, program.CTL_CLEAR, slot_cells(base, count), 0, what)
    for cell in got.values():
        if cell.bitmap_word or cell.count:
            raise SwitchError(
                f"{what}: slot {cell.slot} set {cell.set} is not zero after the clear "
                "(is the pushed program older than the control messages?)"
            )


def peek(conn: Connection, base: int, count: int, lanes: int) -> dict[tuple[int, int], Cell]:
    """Both cells of slots base..base+count-1 (``lanes`` > 0: with the K lanes)."""
    return exchange(
        conn,
        program.CTL_PEEK,
        slot_cells(base, count),
        lanes,
        f"read slots {base}..{base + count - 1}",
    )
