"""Random oracle cases, drawn from the program's own tables, registers and packets.

Everything random comes through a ``Draw``: ``RandomDraw`` wraps a seeded random.Random, so
a case is a pure function of its seed; ``HypothesisDraw`` draws from Hypothesis, which then
shrinks a diverging case. What a case holds, per kind of target:

- every target: random entries for every table the generator can express (keys of the
  table's widths and match kinds, any of its actions with random parameters, distinct
  priorities where the table needs them), sometimes a random default action, random
  multicast groups, clone sessions and register writes;
- bmv2_tests programs: their .stf's control commands and packets as seeds (an entry's
  parameters sometimes re-drawn), packets mutated (bytes overwritten, truncated, extended,
  spliced) or pure garbage;
- the aggregation programs: the switch and 1-3 workers of one job configured as
  tests/dataplane/stf_gen.py does, mostly well-formed aggregation packets with random
  fields (fabric.py's encoders), some ARP, truncated and garbage frames;
- the IPv4 router: IPv4/UDP and ARP frames with addresses drawn from its route entries.

Key values come from small pools (0, all ones, small numbers, random) and from bits of the
case's own packets, so that entries match some packets.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from bmv2_oracle import CLI_VALUE_BITS, PORTS, Case, Cli, Default, Entry, Op, Target, pipeline
from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.matches import Exact, Lpm, Match, Range, Ternary
from p4reduce.switch.interp.tables import Table
from p4reduce.switch.stf.parser import Add, CliCommand, Expect, Packet, SetDefault, parse_stf
from p4reduce.switch.stf.runner import StfRunner
from p4reduce.switch.stf.translate import TranslateError, resolve

T = TypeVar("T")
IN_PORTS = (0, 1, 2, 3)
# commands of a seed .stf passed on as they are; meters are left unconfigured (BMv2's meters
# run on wall-clock time, ours on a virtual clock: an unconfigured meter is green on both)
PASS_CLI = {
    "mc_mgrp_create", "mc_node_create", "mc_node_associate", "mc_node_update",
    "mc_node_dissociate", "mc_node_destroy", "mc_mgrp_destroy", "mirroring_add",
    "mirroring_add_mc", "mirroring_delete", "register_write", "register_reset",
    "counter_write", "counter_reset", "table_clear",
}  # fmt: skip


class Draw(Protocol):
    def int(self, lo: int, hi: int) -> int: ...
    def choice(self, seq: Sequence[T]) -> T: ...
    def chance(self, p: float) -> bool: ...
    def bytes(self, n: int) -> bytes: ...


class RandomDraw:
    def __init__(self, seed: object) -> None:
        self.r = random.Random(str(seed))

    def int(self, lo: int, hi: int) -> int:
        return self.r.randint(lo, hi)

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.r.randrange(len(seq))]

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def bytes(self, n: int) -> bytes:
        return self.r.randbytes(n)


class HypothesisDraw:
    """Draws from a Hypothesis ``st.data()`` object, so that Hypothesis can shrink a
    diverging case (bench/fuzz_bmv2.py --hypothesis)."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self.data, self.st = data, st

    def int(self, lo: int, hi: int) -> int:
        return self.data.draw(self.st.integers(lo, hi))

    def choice(self, seq: Sequence[T]) -> T:
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, p: float) -> bool:
        return self.int(0, 999) < p * 1000

    def bytes(self, n: int) -> bytes:
        return self.data.draw(self.st.binary(min_size=n, max_size=n))


def skipped_tables(pipe: Pipeline) -> dict[str, str]:
    """Tables that get no random entries, and why."""
    out = {}
    for name, t in pipe.tables.items():
        if t.profile is not None:
            out[name] = "action profile/selector (its members are another helper's issue)"
        elif any(k.match_kind == "optional" for k in t.keys):
            out[name] = "optional key: simple_switch_CLI has no syntax for it"
        elif any(k.match_kind not in ("exact", "lpm", "ternary", "range") for k in t.keys):
            out[name] = "match kind simple_switch_CLI cannot express"
        elif t.has_const_entries:
            out[name] = "const entries"
    return out


# ---------------------------------------------------------------- values
def value(d: Draw, width: int, pool: Sequence[bytes] = ()) -> int:
    full = (1 << width) - 1
    pick = d.int(0, 9)
    if pick == 0:
        return 0
    if pick == 1:
        return full
    if pick <= 4:
        return d.int(0, min(full, 7))
    if pick <= 7 and pool:
        data = d.choice(pool)
        if len(data) * 8 >= width:
            start = d.int(0, len(data) * 8 - width)
            return (int.from_bytes(data, "big") >> (len(data) * 8 - start - width)) & full
    return d.int(0, full)


def param(d: Draw, name: str, width: int) -> int:
    if width == 9 or "port" in name:  # a port: one the BMv2 run attaches, mostly
        return d.choice(PORTS) if d.chance(0.9) else d.int(0, (1 << width) - 1)
    return value(d, width)


def match(d: Draw, kind: str, width: int, pool: Sequence[bytes]) -> Match:
    full = (1 << width) - 1
    v = value(d, width, pool)
    if kind == "exact":
        return Exact(v)
    if kind == "lpm":
        plen = d.int(0, width)
        return Lpm(v & (((1 << plen) - 1) << (width - plen)), plen)
    if kind == "ternary":
        mask = d.choice([full, 0, value(d, width)])
        return Ternary(v & mask, mask)
    lo, hi = sorted((v, value(d, width, pool)))
    return Range(lo, hi)


def random_entry(d: Draw, table: Table, pool: Sequence[bytes], prios: set[int]) -> Entry | None:
    actions = [a for a, s in table.actions.items() if s.scope != "DEFAULT_ONLY"]
    if not actions:
        return None
    action = d.choice(actions)
    args = tuple(param(d, n, w) for n, w in table.actions[action].params)
    ms = tuple(match(d, k.match_kind, k.width, pool) for k in table.keys)
    prio = None
    if table.needs_priority:
        prio = d.int(1, 10_000)
        while prio in prios:  # equal priorities: the order among them is unspecified
            prio = d.int(1, 10_000)
        prios.add(prio)
    return Entry(table.name, ms, action, args, prio)


def random_default(d: Draw, table: Table) -> Default | None:
    actions = [a for a, s in table.actions.items() if s.scope != "TABLE_ONLY"]
    if table.const_default or not actions:
        return None
    action = d.choice(actions)
    return Default(
        table.name, action, tuple(param(d, n, w) for n, w in table.actions[action].params)
    )


def random_ops(
    d: Draw, pipe: Pipeline, pool: Sequence[bytes], taken: set[tuple[str, object]]
) -> list[Op]:
    ops: list[Op] = []
    skip = skipped_tables(pipe)
    for name, table in pipe.tables.items():
        if name in skip:
            continue
        prios: set[int] = set()
        for _ in range(d.int(0, 4) if table.keys else 0):
            e = random_entry(d, table, pool, prios)
            if e is not None and (name, e.matches) not in taken:
                taken.add((name, e.matches))
                ops.append(e)
        if d.chance(0.2):
            dflt = random_default(d, table)
            if dflt is not None:
                ops.append(dflt)
    ops += random_pre(d)
    for name, reg in pipe.registers.items():
        for _ in range(d.int(0, 2)):
            idx = d.int(0, reg.size - 1)
            v = value(d, min(reg.width, CLI_VALUE_BITS))  # the CLI's Thrift value is an i64
            ops.append(Cli("register_write", (name, str(idx), str(v))))
    return ops


def random_pre(d: Draw) -> list[Op]:
    """Multicast groups 1-3 with nodes on attached ports, clone sessions 1-4 to a port."""
    ops: list[Op] = []
    handle = 0
    for grp in range(1, d.int(1, 3) + 1):
        if d.chance(0.5):
            continue
        ops.append(Cli("mc_mgrp_create", (str(grp),)))
        for _ in range(d.int(1, 3)):
            ports = sorted({d.choice(PORTS) for _ in range(d.int(1, 3))})
            ops.append(Cli("mc_node_create", (str(d.int(0, 3)), *map(str, ports))))
            ops.append(Cli("mc_node_associate", (str(grp), str(handle))))
            handle += 1
    for session in range(1, 5):
        if d.chance(0.3):
            ops.append(Cli("mirroring_add", (str(session), str(d.choice(PORTS)))))
    return ops


# ---------------------------------------------------------------- packets
def mutate(d: Draw, data: bytes, pool: Sequence[bytes]) -> bytes:
    pick = d.int(0, 9)
    if pick <= 3 or not data:
        return data
    if pick <= 5:
        b = bytearray(data)
        for _ in range(d.int(1, 3)):
            b[d.int(0, len(b) - 1)] = d.choice([0, 0xFF, d.int(0, 255)])
        return bytes(b)
    if pick == 6:
        return data[: d.int(1, max(1, len(data) - 1))]
    if pick == 7:
        return data + d.bytes(d.int(1, 32))
    if pick == 8:
        other = d.choice(pool)
        cut = d.int(0, min(len(data), len(other)))
        return data[:cut] + other[cut:] or data
    return d.bytes(d.int(1, 80))


def seed_ops(
    target: Target, pipe: Pipeline, text: str, d: Draw, taken: set[tuple[str, object]]
) -> tuple[list[Op], list[tuple[int, bytes]]]:
    """The control commands and packets of an STF text, as ops (entries sometimes with
    re-drawn parameters) and (port, bytes)."""
    runner = StfRunner(pipe, target.name, engine="python", notice=lambda _l: None)
    ops: list[Op] = []
    packets: list[tuple[int, bytes]] = []
    skip = skipped_tables(pipe)
    for cmd in parse_stf(text, target.name):
        try:
            if isinstance(cmd, Add):
                table = runner.table(cmd.table)
                if table.name in skip:
                    continue
                action = resolve(cmd.action, table.actions, "action")
                args = runner.action_args(table, action, cmd.args)
                if d.chance(0.2):
                    args = [param(d, n, w) for n, w in table.actions[action].params]
                ms = tuple(runner.matches(table, cmd.keys))
                prio = (cmd.priority or 0) if table.needs_priority else None
                taken.add((table.name, ms))
                ops.append(Entry(table.name, ms, action, tuple(args), prio))
            elif isinstance(cmd, SetDefault):
                table = runner.table(cmd.table)
                action = resolve(cmd.action, table.actions, "action")
                ops.append(
                    Default(table.name, action, tuple(runner.action_args(table, action, cmd.args)))
                )
            elif isinstance(cmd, CliCommand) and cmd.name in PASS_CLI:
                args = list(cmd.args)
                if cmd.name.startswith(("register_", "counter_", "table_")):
                    kind = {"register": "registers", "counter": "counters", "table": "tables"}
                    objs = getattr(pipe, kind[cmd.name.split("_")[0]])
                    args[0] = resolve(args[0], objs, "name")  # full names for both sides
                ops.append(Cli(cmd.name, tuple(args)))
            elif isinstance(cmd, Packet):
                port = cmd.port if cmd.port in IN_PORTS else d.choice(IN_PORTS)
                packets.append((port, cmd.data))
            elif isinstance(cmd, Expect) and cmd.pattern and "*" not in cmd.pattern:
                packets.append((d.choice(IN_PORTS), bytes.fromhex(cmd.pattern)))
        except TranslateError:
            continue  # a seed line naming something this program lacks
    return ops, packets


def gen_case(target: Target, d: Draw) -> Case:
    pipe = pipeline(target)
    taken: set[tuple[str, object]] = set()
    if target.kind == "agg":
        from agg_gen import agg_seed

        ops, packets = agg_seed(target, pipe, d, taken)
        pool = [p for _, p in packets]
        if d.chance(0.3):
            ops += random_ops(d, pipe, pool, taken)
        return Case(target, ops, packets)
    if target.kind == "router":
        from agg_gen import router_case

        return router_case(target, pipe, d, taken)
    seeds: list[tuple[int, bytes]] = []
    ops: list[Op] = []
    if target.stf is not None:
        ops, seeds = seed_ops(target, pipe, target.stf.read_text(), d, taken)
    pool = [p for _, p in seeds] or [d.bytes(d.int(14, 64))]
    ops += random_ops(d, pipe, pool, taken)
    packets = []
    for _ in range(d.int(4, 14)):
        if seeds and d.chance(0.85):
            port, data = d.choice(seeds)
            packets.append((port if d.chance(0.7) else d.choice(IN_PORTS), mutate(d, data, pool)))
        else:
            packets.append((d.choice(IN_PORTS), d.bytes(d.int(1, 80))))
    return Case(target, ops, packets)
