"""Drive two switches (the Python engine and the native one) with the same operations.

An operation is a packet or a control-plane call; ``run`` applies it to one switch and
returns what came out (the frames sent, or the error's type and message), so the two
engines' answers compare with ``==``. ``state`` collects every register and counter.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.externs import ExternError
from p4reduce.switch.interp.hashes import CrcParams
from p4reduce.switch.interp.matches import Exact, Lpm, Optional, Range, Ternary
from p4reduce.switch.interp.pre import PreError
from p4reduce.switch.interp.tables import TableError


@dataclass(frozen=True)
class Op:
    kind: str  # packet | add | delete | default | reg | grp_create | node | grp_destroy | clear
    # | meter | dmeter | dctr
    # | vs_add | vs_clear | vs_replace (parser value sets)
    # | member | member_set | member_del | group | group_del | ref_add | ref_modify (profiles)
    # | mirror | mirror_mc | mirror_del | set_group (clone sessions and P4Runtime-style groups)
    args: tuple[Any, ...]


def run(sw: Any, op: Op) -> Any:
    try:
        return _run(sw, op)
    except (TableError, ExternError, PreError, ValueError) as e:
        return (type(e).__name__, str(e))


def _run(sw: Any, op: Op) -> Any:
    a = op.args
    tables = sw.pipeline.tables
    if op.kind == "packet":
        return sw.process(a[0], a[1])
    if op.kind == "add":
        tables[a[0]].add_entry(list(a[1]), a[2], list(a[3]), a[4])
        return "ok"
    if op.kind == "delete":
        tables[a[0]].delete_entry(list(a[1]), a[2])
        return "ok"
    if op.kind == "modify":
        tables[a[0]].modify_entry(list(a[1]), a[2], a[3], list(a[4]))
        return "ok"
    if op.kind == "default":
        tables[a[0]].set_default(a[1], list(a[2]))
        return "ok"
    if op.kind == "clear":
        tables[a[0]].clear()
        return "ok"
    if op.kind == "reg":
        sw.pipeline.registers[a[0]].cp_write(a[1], a[2])
        return "ok"
    if op.kind == "vs_add":
        sw.pipeline.value_sets[a[0]].add([tuple(x) for x in a[1]])
        return "ok"
    if op.kind == "vs_clear":
        sw.pipeline.value_sets[a[0]].clear()
        return "ok"
    if op.kind == "vs_replace":  # what the P4Runtime reconcile does
        sw.pipeline.value_sets[a[0]].members = [tuple(tuple(x) for x in m) for m in a[1]]
        return "ok"
    if op.kind == "grp_create":
        sw.pre.mgrp_create(a[0])
        return "ok"
    if op.kind == "node":
        h = sw.pre.node_create(a[1], list(a[2]))
        sw.pre.node_associate(a[0], h)
        return h
    if op.kind == "grp_destroy":
        sw.pre.mgrp_destroy(a[0])
        return "ok"
    if op.kind in PROFILE_OPS:
        return _run_profile(sw, op)
    if op.kind == "mirror":
        sw.pre.mirroring_add(*a)
        return "ok"
    if op.kind == "mirror_mc":
        sw.pre.mirroring_add_mc(*a)
        return "ok"
    if op.kind == "mirror_del":
        sw.pre.mirroring_delete(a[0])
        return "ok"
    if op.kind == "set_group":  # a group above 65535 is a P4Runtime clone session's own
        sw.pre.set_group(a[0], list(a[1]), internal=a[0] > 65535)
        return "ok"
    if op.kind == "crc":
        sw.pipeline.namespace[a[0]].__self__.set_crc_params(a[1])
        return "ok"
    if op.kind == "meter":
        sw.pipeline.meters[a[0]].set_rates(a[1], list(a[2]))
        return "ok"
    if op.kind in ("dmeter", "dctr"):
        entries = tables[a[0]].entries
        if a[1] >= len(entries):
            return "no entry"
        e = entries[a[1]]
        if op.kind == "dctr":
            e.packets, e.bytes = a[2]
        elif a[2]:
            e.meter.set_rates(list(a[2]))
        else:
            e.meter.array[0].reset()
        return "ok"
    raise AssertionError(op.kind)


PROFILE_OPS = ("member", "member_set", "member_del", "group", "group_del", "ref_add", "ref_modify")


def _run_profile(sw: Any, op: Op) -> Any:
    """An action profile operation, through the calls the STF runner and the P4Runtime
    server make (``member_set`` is the server's ``profile.members[mid] = ...``)."""
    a = op.args
    p = sw.pipeline
    if op.kind in ("ref_add", "ref_modify"):
        t = p.tables[a[0]]
        member, group = (a[3], None) if a[2] == "member" else (None, a[3])
        if op.kind == "ref_add":
            t.add_entry(list(a[1]), "", [], a[4], member=member, group=group)
        else:
            t.modify_entry(list(a[1]), a[4], "", [], member=member, group=group)
        return "ok"
    prof = p.profiles[a[0]]
    if op.kind == "member":
        prof.add_member(a[1], a[2], list(a[3]))
    elif op.kind == "member_set":
        prof.members[a[1]] = prof.make_member(a[2], list(a[3]))
    elif op.kind == "member_del":
        prof.delete_member(a[1])
    elif op.kind == "group":
        prof.set_group(a[1], list(a[2]))
    else:
        prof.delete_group(a[1])
    return "ok"


def random_profile_op(rng: random.Random, pipeline: Pipeline, pool: list[int]) -> Op | None:
    """Members added, replaced and deleted, groups set (with repeats: weights) and deleted,
    entries pointing to a member or a group; ids from a small range so that they collide."""
    if not pipeline.profiles:
        return None
    name = rng.choice(sorted(pipeline.profiles))
    prof = pipeline.profiles[name]
    ids = list(range(6))
    r = rng.random()
    if r < 0.25 or not prof.members:
        action = rng.choice(sorted({a for t in prof.tables for a in t.actions}))
        spec = prof.action_spec(action)
        args = tuple(rng.choice([0, 1, (1 << w) - 1, rng.getrandbits(w)]) for _, w in spec.params)
        kind = "member_set" if rng.random() < 0.3 else "member"
        return Op(kind, (name, rng.choice(ids), action, args))
    if r < 0.3:
        return Op("member_del", (name, rng.choice(ids)))
    if r < 0.5 and prof.selector_algo is not None:
        members = sorted(prof.members) + [rng.choice(ids)]  # now and then a missing one
        chosen = [rng.choice(members) for _ in range(rng.choice([0, 1, 2, 3, 4, 5]))]
        return Op("group", (name, rng.choice(ids[:4]), tuple(chosen)))
    if r < 0.53 and prof.selector_algo is not None:
        return Op("group_del", (name, rng.choice(ids[:4])))
    t = rng.choice(prof.tables)
    if rng.random() < 0.35 or prof.selector_algo is None:
        ref = ("member", rng.choice(sorted(prof.members) + [rng.choice(ids)]))
    else:
        ref = ("group", rng.choice(sorted(prof.groups) + [rng.choice(ids)]))
    if t.entries and rng.random() < 0.3:
        e = rng.choice(t.entries)
        return Op("ref_modify", (t.name, e.matches, *ref, e.priority if t.needs_priority else None))
    matches = tuple(random_match(rng, k.match_kind, k.width, pool) for k in t.keys)
    prio = rng.randint(1, 5) if t.needs_priority else None
    return Op("ref_add", (t.name, matches, *ref, prio))


def state(sw: Any) -> dict[str, Any]:
    p = sw.pipeline
    out: dict[str, Any] = {}
    for name, r in p.registers.items():
        out[f"reg {name}"] = list(r.values)
    for name, c in p.counters.items():
        out[f"ctr {name}"] = (list(c.packets), list(c.bytes))
    for name, t in p.tables.items():
        if t.direct_counter is not None:
            out[f"dctr {name}"] = [(e.packets, e.bytes) for e in t.entries]
        if t.direct_meter is not None:
            out[f"dmtr {name}"] = [_buckets(e.meter.array[0]) for e in t.entries]
    for name, m in p.meters.items():
        out[f"mtr {name}"] = [_buckets(cell) for cell in m.array.cells]
    return out


def _buckets(cell: Any) -> list[tuple[Any, ...]]:
    """A meter cell's rates and token state (the native engine's copied back first)."""
    if hasattr(cell, "pull"):
        cell.pull()
    return [(b.rate, b.burst, b.tokens, b.tokens_last, b.color) for b in cell._buckets]


RATES = [0.0, 1e-9, 0.001, 0.01, 0.3, 1.0, 2.5, 40.0]
BURSTS = [0, 1, 2, 3, 60, 100, 1000]


def random_rates(rng: random.Random) -> tuple[tuple[float, int], ...]:
    """Committed then peak (rate per microsecond, burst); now and then a refused order."""
    a, b = rng.choice(RATES), rng.choice(RATES)
    if rng.random() < 0.9:
        a, b = min(a, b), max(a, b)
    return ((a, rng.choice(BURSTS)), (b, rng.choice(BURSTS)))


def random_meter_op(rng: random.Random, pipeline: Pipeline) -> Op | None:
    """Rates of an indexed meter cell or a table entry's direct meter, or direct counts."""
    choices = [("meter", n) for n in sorted(pipeline.meters)]
    for n, t in sorted(pipeline.tables.items()):
        if t.direct_meter is not None:
            choices.append(("dmeter", n))
        if t.direct_counter is not None:
            choices.append(("dctr", n))
    if not choices:
        return None
    kind, name = rng.choice(choices)
    if kind == "meter":
        size = pipeline.meters[name].size
        idx = rng.choice([0, size - 1, rng.randrange(max(size, 1)), size])
        return Op("meter", (name, idx, random_rates(rng)))
    k = rng.randrange(max(len(pipeline.tables[name].entries), 1) + 1)
    if kind == "dctr":
        return Op("dctr", (name, k, (rng.randrange(1000), rng.randrange(10**6))))
    return Op("dmeter", (name, k, random_rates(rng) if rng.random() < 0.85 else ()))


def random_match(rng: random.Random, kind: str, width: int, pool: list[int]) -> Any:
    def value() -> int:
        if pool and rng.random() < 0.7:
            return rng.choice(pool) & ((1 << width) - 1)
        return rng.getrandbits(width)

    if kind == "exact":
        return Exact(value())
    if kind == "lpm":
        plen = rng.randint(0, width)
        return Lpm(value() & (((1 << plen) - 1) << (width - plen)), plen)
    if kind == "ternary":
        m = rng.choice([0, (1 << width) - 1, rng.getrandbits(width)])
        return Ternary(value() & m, m)
    if kind == "range":
        lo, hi = sorted((value(), value()))
        return Range(lo, hi)
    return Optional(None if rng.random() < 0.3 else value())


def random_table_op(rng: random.Random, pipeline: Pipeline, pool: list[int]) -> Op:
    name = rng.choice(sorted(pipeline.tables))
    t = pipeline.tables[name]
    matches = tuple(random_match(rng, k.match_kind, k.width, pool) for k in t.keys)
    prio = rng.randint(1, 5) if t.needs_priority else None
    action = rng.choice(sorted(t.actions))
    args = tuple(
        rng.choice([0, 1, (1 << w) - 1, rng.getrandbits(w)]) for _, w in t.actions[action].params
    )
    r = rng.random()
    if r < 0.6 or not t.entries:
        return Op("add", (name, matches, action, args, prio))
    e = rng.choice(t.entries)
    if r < 0.75:
        return Op("delete", (name, e.matches, e.priority if t.needs_priority else None))
    if r < 0.85:
        return Op(
            "modify", (name, e.matches, e.priority if t.needs_priority else None, action, args)
        )
    if r < 0.95:
        return Op("default", (name, action, args))
    return Op("clear", (name,))


def random_crc_op(rng: random.Random, pipeline: Pipeline) -> Op | None:
    """New parameters for one of the program's custom CRCs (HashCalc.set_crc_params)."""
    names = sorted(n for n in pipeline.namespace if n.startswith("HASH_") and "_custom" in n)
    if not names:
        return None
    name = rng.choice(names)
    w = {"crc8": 8, "crc16": 16, "crc32": 32, "crc64": 64}[name[5:].split("_")[0]]
    params = CrcParams(
        rng.getrandbits(w) | 1,
        rng.choice([0, (1 << w) - 1, rng.getrandbits(w)]),
        rng.choice([0, (1 << w) - 1, rng.getrandbits(w)]),
        rng.random() < 0.5,
        rng.random() < 0.5,
    )
    return Op("crc", (name, params))


def random_control_op(
    rng: random.Random, pipeline: Pipeline, pool: list[int], clones: bool = False
) -> Op:
    if clones and rng.random() < 0.4:  # the program clones: its sessions come and go
        return random_pre_op(rng)
    if rng.random() < 0.4 and (op := random_profile_op(rng, pipeline, pool)) is not None:
        return op
    if rng.random() < 0.25 and (op := random_meter_op(rng, pipeline)) is not None:
        return op
    if rng.random() < 0.2 and (op := random_crc_op(rng, pipeline)) is not None:
        return op
    r = rng.random()
    if r < 0.5 and pipeline.tables:
        return random_table_op(rng, pipeline, pool)
    if r < 0.7 and pipeline.registers:
        name = rng.choice(sorted(pipeline.registers))
        reg = pipeline.registers[name]
        idx = rng.choice([0, reg.size - 1, rng.randrange(max(reg.size, 1)), reg.size])
        values = [0, 1, rng.getrandbits(reg.width)]
        if reg.signed:  # negative values are accepted for int<W> registers
            values += [-1, -(1 << (reg.width - 1)), -rng.getrandbits(reg.width - 1)]
        return Op("reg", (name, idx, rng.choice(values)))
    if r < 0.8 and pipeline.value_sets:
        return random_value_set_op(rng, pipeline, pool)
    g = rng.choice([1, 2, 3, 256, 257])
    if r < 0.8:
        return Op("grp_create", (g,))
    if r < 0.95:
        ports = tuple(rng.sample(range(8), rng.randint(0, 3)))
        return Op("node", (g, rng.randint(0, 5), ports))
    return Op("grp_destroy", (g,))


SESSIONS = [1, 2, 3, 4, 5, 6, 7, 9, 10]
TRUNCATIONS = [0, 0, 0, 1, 5, 9, 14, 20, 60, 4000]


def random_pre_op(rng: random.Random) -> Op:
    """A clone session added (to a port or a group, with or without truncation), replaced
    or deleted, or a group's replicas replaced (groups sessions name, internal ones too)."""
    sid = rng.choice(SESSIONS)
    r = rng.random()
    if r < 0.3:
        return Op("mirror", (sid, rng.randrange(8), rng.choice(TRUNCATIONS)))
    if r < 0.55:
        g = rng.choice([1, 2, 3, 256, 65536 + rng.choice(SESSIONS)])
        return Op("mirror_mc", (sid, g, rng.choice(TRUNCATIONS)))
    if r < 0.7:
        return Op("mirror_del", (sid,))
    g = rng.choice([1, 2, 3, 256, 65536 + rng.choice(SESSIONS)])
    reps = tuple((rng.randrange(8), rng.randrange(4)) for _ in range(rng.randint(0, 3)))
    return Op("set_group", (g, reps))


def random_value_set_op(rng: random.Random, pipeline: Pipeline, pool: list[int]) -> Op:
    name = rng.choice(sorted(pipeline.value_sets))
    vs = pipeline.value_sets[name]

    def member() -> tuple[tuple[int, int], ...]:
        out = []
        for w in vs.widths:
            full = (1 << w) - 1
            v = rng.choice(pool) & full if pool and rng.random() < 0.7 else rng.getrandbits(w)
            m = rng.choice([full, full, 0, rng.getrandbits(w)])
            if rng.random() < 0.05:
                v = full + 1  # does not fit: both engines must refuse it alike
            out.append((v, m))
        return tuple(out)

    r = rng.random()
    if r < 0.7:
        return Op("vs_add", (name, member()))
    if r < 0.85:
        return Op("vs_clear", (name,))
    n = rng.randint(0, vs.size)
    # the reconcile copies members that were validated once: values within their masks
    members = [tuple((v & m, m) for v, m in member()) for _ in range(n)]
    return Op("vs_replace", (name, members))


def mutate(rng: random.Random, frame: bytes) -> bytes:
    b = bytearray(frame)
    r = rng.random()
    if r < 0.4 and b:
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif r < 0.6:
        del b[rng.randrange(len(b) + 1) :]
    elif r < 0.75:
        b += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 40)))
    elif r < 0.9 and b:
        i = rng.randrange(len(b))
        b[i] = rng.getrandbits(8)
    else:
        return bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 120)))
    return bytes(b)
