"""The loss simulator: ``ingress_loss[port]`` / ``egress_loss[port]`` thresholds, a packet
(arriving) or a result (leaving) on that port being dropped with probability
threshold / 2^32 (docs/protocol.md, "Loss simulator")."""

from __future__ import annotations

from collections.abc import Iterable

from . import program
from .errors import InvalidArgument
from .p4info import Schema
from .p4rt import MODIFY, Connection
from .slots import read_cells

DIRECTIONS = {
    "in": (program.INGRESS_LOSS,),
    "out": (program.EGRESS_LOSS,),
    "both": (program.INGRESS_LOSS, program.EGRESS_LOSS),
}


def threshold(p: float) -> int:
    """round(p * 2^32), at most 2^32 - 1 (so p = 1 drops all but one packet in 2^32)."""
    if not isinstance(p, (int, float)) or not 0.0 <= p <= 1.0:
        raise InvalidArgument(f"loss probability {p!r} is outside 0..1")
    return min(round(p * 2**32), 2**32 - 1)


def probability(t: int) -> float:
    return t / 2**32


def _ports(ports: Iterable[int] | None) -> list[int]:
    if ports is None:
        return list(range(program.PORTS))
    out = sorted(set(ports))
    for p in out:
        if not 0 <= p <= program.MAX_PORT:
            raise InvalidArgument(f"switch port {p} is outside 0..{program.MAX_PORT}")
    return out


def set_loss(
    conn: Connection,
    schema: Schema,
    p: float,
    ports: Iterable[int] | None = None,
    direction: str = "both",
) -> int:
    """Set the loss probability of the ports (None: all), per direction in/out/both; returns
    the threshold written."""
    if direction not in DIRECTIONS:
        raise InvalidArgument(f"loss direction {direction!r} is not in, out or both")
    t = threshold(p)
    ps = _ports(ports)
    updates = [
        (MODIFY, schema.register_entry(name, port, t))
        for name in DIRECTIONS[direction]
        for port in ps
    ]
    # the first update alone first: a target without RegisterEntry (simple_switch_grpc)
    # refuses one update in one line, where a thousand refused updates overflow gRPC's
    # 16 KiB limit on the error metadata
    conn.write(updates[:1], "set loss")
    conn.write(updates[1:], "set loss")
    return t


def read_loss(
    conn: Connection, schema: Schema, ports: Iterable[int] | None = None
) -> dict[int, dict[str, float]]:
    """{port: {"in": p, "out": p}} for the given ports, or for every port with loss set."""
    ins = read_cells(conn, schema, program.INGRESS_LOSS, 0, program.PORTS)
    outs = read_cells(conn, schema, program.EGRESS_LOSS, 0, program.PORTS)
    chosen = (
        _ports(ports)
        if ports is not None
        else [p for p in range(program.PORTS) if ins[p] or outs[p]]
    )
    return {p: {"in": probability(ins[p]), "out": probability(outs[p])} for p in chosen}
