"""A differential oracle: one case on real BMv2 ``simple_switch`` and on both embedded
engines (the interpreter and the native engine); BMv2 is the judge.

A *case* is a list of control-plane operations (table entries, default actions, and
simple_switch_CLI commands: multicast groups, clone sessions, register writes) and a list of
packets. ``run_ours`` applies it to a fresh pipeline through the same table and PRE calls as
the STF runner, ``run_bmv2`` (bmv2_run.py) through simple_switch_CLI. ``compare`` then
requires identical results:

- for every control operation, both accepted it or both refused it;
- the packets out of every attached port (``PORTS``), as a multiset per port;
- every register cell and indexed counter (packets and/or bytes, by the counter's type).

Left out of the comparison, each with its reason in ``EXCLUDED``: packets our engines send
to a port that is not attached in BMv2 (its file-based ports drop them silently), direct
counters and meters (read by entry handle / time dependent), and the tables the generator
leaves alone (``case_gen.skipped_tables``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bmv2_run import Bmv2Result, cached_json, run_bmv2
from p4reduce.switch.frontend.compiler import CompiledProgram, CompileOptions, compile_file
from p4reduce.switch.interp.builder import Pipeline, build_pipeline
from p4reduce.switch.interp.externs import ExternError
from p4reduce.switch.interp.matches import Exact, Lpm, Match, Range, Ternary
from p4reduce.switch.interp.pre import PreError
from p4reduce.switch.interp.runtime import P4RuntimeFault
from p4reduce.switch.interp.tables import TableError
from p4reduce.switch.stf.runner import StfRunner
from p4reduce.switch.stf.translate import TranslateError

ROOT = Path(__file__).resolve().parents[2]
PORTS = tuple(range(8))  # attached to BMv2 as pcap files; input ports are 0..3
ENGINES = ("python", "native")
CLI_PRIORITY_TOP = 1 << 20  # our priorities are below it
# simple_switch_CLI's Thrift register values are signed 64-bit: BMv2 reads a cell at or
# above 2**63 as 2**63 - 1, so ours are compared the same way, and writes stay below it
CLI_VALUE_BITS = 63
CLI_MAX = (1 << CLI_VALUE_BITS) - 1
COUNTER_CELLS = 256  # counters up to this size are read whole from BMv2
REGISTER_CELLS = 1024  # registers up to this size are read whole from BMv2
EXCLUDED = {
    "unattached ports": "BMv2's file ports drop packets to a port with no file; only "
    f"ports {PORTS[0]}..{PORTS[-1]} are compared",
    "direct counters and meters": "read per entry handle in BMv2 and time dependent (meters)",
    "register values from 2**63": "simple_switch_CLI reads and writes registers as Thrift "
    "i64: BMv2 reads such a cell as 2**63 - 1, ours are clamped the same way",
    "idle cells of large counters and registers": "of a counter over 256 cells, BMv2 is read "
    "at the first 256 and where either engine counted; of a register over 1024 cells at the "
    "first 16 and where either engine holds a nonzero value (one CLI call per cell; dense.p4 "
    "at K = 1024 holds 8 M cells)",
    "invalid-header reads": "a case whose divergence disappears once the packets our parser "
    "rejects are taken out: those packets read fields of headers the parser left invalid, "
    "which BMv2 leaves holding the previous packet's values (undefined in P4_16)",
}


# ---------------------------------------------------------------- programs under test
@dataclass(frozen=True)
class Target:
    name: str  # "bmv2_tests/arith_wrap", "dense-K256", "real_l3_router"
    path: Path
    includes: tuple[Path, ...] = ()
    defines: tuple[tuple[str, str], ...] = ()
    kind: str = "stf"  # "stf" (bmv2_tests: seeds from its .stf), "agg", "router"

    @property
    def stf(self) -> Path | None:
        s = self.path.with_suffix(".stf")
        return s if self.kind == "stf" and s.exists() else None


def targets(ks: Sequence[int] = (64, 256, 1024)) -> list[Target]:
    """Every bmv2_tests program but the one-line wrappers of p4src (covered as "agg"), both
    aggregation programs at each K, and the IPv4 router."""
    out = [
        Target(f"bmv2_tests/{p.stem}", p, (p.parent,))
        for p in sorted((ROOT / "bmv2_tests").glob("*.p4"))
        if not p.stem.startswith("p4reduce_")
    ]
    for prog in ("dense", "sparse"):
        for k in ks:
            out.append(
                Target(
                    f"{prog}-K{k}",
                    ROOT / "p4src" / f"{prog}.p4",
                    (ROOT / "p4src" / "include",),
                    (("K", str(k)),),
                    "agg",
                )
            )
    router = ROOT / "tests" / "frontend" / "programs" / "good" / "real_l3_router.p4"
    out.append(Target("real_l3_router", router, kind="router"))
    return out


@functools.cache
def compiled(target: Target) -> CompiledProgram:
    return compile_file(
        target.path,
        CompileOptions(include_dirs=list(target.includes), defines=dict(target.defines)),
    )


def pipeline(target: Target) -> Pipeline:
    """A fresh pipeline (empty tables, zero registers) of ``target``."""
    import random

    c = compiled(target)
    assert c.checked is not None
    return build_pipeline(c.checked, c.name, random.Random(0))


@functools.cache
def bmv2_json(target: Target) -> Path:
    return cached_json(target.path, list(target.includes), dict(target.defines))


# ---------------------------------------------------------------- the case
@dataclass(frozen=True)
class Entry:
    table: str
    matches: tuple[Match, ...]
    action: str
    args: tuple[int, ...]
    priority: int | None

    def cli(self) -> str:
        keys = " ".join(_cli_key(m) for m in self.matches)
        args = " ".join(str(a) for a in self.args)
        # BMv2 picks the entry with the LOWEST priority number, our tables (as P4Runtime)
        # the highest: the CLI gets the priority mirrored, as p4c's STF runner does
        prio = f" {CLI_PRIORITY_TOP - self.priority}" if self.priority is not None else ""
        return f"table_add {self.table} {self.action} {keys} => {args}{prio}"


@dataclass(frozen=True)
class Default:
    table: str
    action: str
    args: tuple[int, ...]

    def cli(self) -> str:
        return " ".join(["table_set_default", self.table, self.action, *map(str, self.args)])


@dataclass(frozen=True)
class Cli:
    """A simple_switch_CLI command our STF runner implements under the same name."""

    name: str
    args: tuple[str, ...]

    def cli(self) -> str:
        return " ".join([self.name, *self.args])


Op = Entry | Default | Cli


def _cli_key(m: Match) -> str:
    if isinstance(m, Exact):
        return str(m.value)
    if isinstance(m, Lpm):
        return f"{m.value}/{m.prefix_len}"
    if isinstance(m, Ternary):
        return f"{m.value}&&&{m.mask}"
    if isinstance(m, Range):
        return f"{m.low}->{m.high}"
    raise ValueError(f"no simple_switch_CLI syntax for {m}")


@dataclass
class Case:
    target: Target
    ops: list[Op]
    packets: list[tuple[int, bytes]]

    def describe(self) -> str:
        lines = [
            f"# {self.target.name}: {len(self.ops)} control operations, {len(self.packets)} packets"
        ]
        lines += [op.cli() for op in self.ops]
        lines += [f"packet {p} {d.hex()}" for p, d in self.packets]
        return "\n".join(lines)


# ---------------------------------------------------------------- outcomes
@dataclass
class Outcome:
    accepted: list[bool]  # per control operation
    outputs: dict[int, list[bytes]]
    registers: dict[str, list[int]] = field(default_factory=dict)
    counters: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    fault: str | None = None  # a runtime fault (assert...) or BMv2 exiting during the run
    unattached: int = 0  # packets to ports BMv2 has no file for (not compared)
    engine: str = "bmv2"  # the engine that really ran it
    parser_errors: list[int] = field(default_factory=list)  # inputs our parser rejected


def indexed_counters(p: Pipeline) -> dict[str, tuple[int, str]]:
    return {n: (c.size, c.unit) for n, c in p.counters.items()}


def run_ours(case: Case, engine: str) -> Outcome:
    """The case on a fresh pipeline, on ``engine`` ("python" or "native")."""
    pipe = pipeline(case.target)
    runner = StfRunner(pipe, case.target.name, engine=engine, notice=lambda _line: None)
    accepted = []
    for op in case.ops:
        try:
            _apply(runner, pipe, op)
            accepted.append(True)
        except (TableError, TranslateError, ExternError, PreError, ValueError):
            accepted.append(False)
    out = Outcome(accepted, {p: [] for p in PORTS})
    failed = _track_parser_errors(runner.switch)
    for i, (port, data) in enumerate(case.packets):
        runner.clock.now += 1
        failed[0] = False
        try:
            sent = runner.switch.process(port, data)
        except P4RuntimeFault as e:
            out.fault = f"runtime fault: {e}"
            break
        if failed[0]:
            out.parser_errors.append(i)
        for p, d in sent:
            if p in out.outputs:
                out.outputs[p].append(d)
            else:
                out.unattached += 1
    # whole arrays at once (``values[:]`` is one engine call on the native engine; a cell at
    # a time would take longer than the case for the aggregation programs' registers)
    for name, reg in pipe.registers.items():
        mask = (1 << reg.width) - 1
        out.registers[name] = [min(v & mask, CLI_MAX) for v in reg.values[:]]
    for name, c in pipe.counters.items():
        both = zip(c.packets[:], c.bytes[:], strict=True)
        out.counters[name] = [_unit(c.unit, v) for v in both]
    out.engine = runner.switch.engine
    return out


def _track_parser_errors(switch: Any) -> list[bool]:
    """A flag set whenever the interpreter's parser raises (python engine only: the native
    engine runs the same case, and the flag is read from the python run)."""
    flag = [False]
    parse = getattr(switch, "parse", None)
    if switch.engine != "python" or parse is None:
        return flag

    def tracked(S: list[Any], P: Any) -> None:
        before = S[switch._parser_error]
        parse(S, P)
        if S[switch._parser_error] != before:
            flag[0] = True

    switch.parse = tracked
    return flag


def _unit(unit: str, value: tuple[int, int]) -> tuple[int, int]:
    """(packets, bytes), with what the counter's type does not count zeroed (BMv2 counts
    both whatever the type)."""
    packets, nbytes = value
    return (packets if "packets" in unit else 0, nbytes if "bytes" in unit else 0)


def _apply(runner: StfRunner, pipe: Pipeline, op: Op) -> None:
    if isinstance(op, Entry):
        table = pipe.tables[op.table]
        table.add_entry(list(op.matches), op.action, list(op.args), op.priority)
    elif isinstance(op, Default):
        pipe.tables[op.table].set_default(op.action, list(op.args))
    else:
        getattr(runner, "cli_" + op.name)(*op.args)


def counter_cells(size: int, ours: list[Outcome], name: str) -> list[int]:
    """The cells of a counter read from BMv2: all of a small one; of a large one the first
    ``COUNTER_CELLS`` and every cell one of our engines counted in (one CLI call per cell:
    the aggregation programs' 4096 job counters would take longer than the case)."""
    if size <= COUNTER_CELLS:
        return list(range(size))
    hit = {i for o in ours for i, v in enumerate(o.counters.get(name, [])) if v != (0, 0)}
    return sorted(set(range(COUNTER_CELLS)) | hit)


def register_cells(size: int, ours: list[Outcome], name: str) -> list[int] | None:
    """The cells of a register read from BMv2: None (the whole array, one CLI call) up to
    ``REGISTER_CELLS``; of a larger one (the aggregation programs hold K lanes of 8192
    cells each) the first 16 and every cell nonzero in one of our engines."""
    if size <= REGISTER_CELLS:
        return None
    hit = {i for o in ours for i, v in enumerate(o.registers.get(name, [])) if v}
    return sorted(set(range(16)) | hit)


def run_bmv2_case(case: Case, ours: list[Outcome]) -> Outcome:
    pipe = pipeline(case.target)
    counters = indexed_counters(pipe)
    cells = {n: counter_cells(size, ours, n) for n, (size, _unit) in counters.items()}
    reg_cells = {n: register_cells(r.size, ours, n) for n, r in pipe.registers.items()}
    res: Bmv2Result = run_bmv2(
        bmv2_json(case.target),
        list(PORTS),
        [op.cli() for op in case.ops],
        case.packets,
        reg_cells,
        cells,
    )
    out = Outcome([_accepted(r) for r in res.replies], res.outputs, fault=res.died)
    for name, reg in pipe.registers.items():
        got = res.registers.get(name, [])
        read = reg_cells[name]
        if read is not None and got:  # cells not read: zero, as both our engines have them
            full = [0] * reg.size
            for i, v in zip(read, got, strict=True):
                full[i] = v
            got = full
        out.registers[name] = got
    for name, vals in res.counters.items():
        size, unit = counters[name]
        full = [(0, 0)] * size  # cells not read: zero, as both our engines have them
        for i, v in zip(cells[name], vals, strict=True):
            full[i] = _unit(unit, v)
        out.counters[name] = full
    return out


def _accepted(reply: str) -> bool:
    low = reply.lower()
    return not ("error" in low or "invalid" in low or "exception" in low)


# ---------------------------------------------------------------- comparison
@dataclass
class Divergence:
    case: Case
    engine: str
    what: list[str]

    def report(self) -> str:
        return (
            f"DIVERGENCE {self.case.target.name} ({self.engine} engine vs BMv2):\n  "
            + "\n  ".join(self.what)
            + "\n  inputs:\n    "
            + self.case.describe().replace("\n", "\n    ")
        )


def compare(case: Case, bmv2: Outcome, ours: Outcome) -> list[str]:
    diffs = []
    for i, (a, b) in enumerate(zip(bmv2.accepted, ours.accepted, strict=True)):
        if a != b:
            diffs.append(
                f"control op #{i} `{case.ops[i].cli()}`: BMv2 {'accepted' if a else 'refused'}"
                f" it, ours {'accepted' if b else 'refused'} it"
            )
    if (bmv2.fault is None) != (ours.fault is None):
        diffs.append(f"fault: BMv2 {bmv2.fault!r}, ours {ours.fault!r}")
    if bmv2.fault is not None or ours.fault is not None:
        # an assert aborts simple_switch while other threads still hold earlier packets:
        # what it wrote before dying says nothing; the fault itself is compared
        return diffs
    for port in PORTS:
        want, got = bmv2.outputs.get(port, []), ours.outputs.get(port, [])
        # a multiset per port: BMv2's order within a port is not deterministic when a packet
        # recirculates without end (BMv2 loops on, our engines drop it after MAX_PASSES)
        if sorted(want) != sorted(got):
            diffs.append(
                f"port {port}: BMv2 sent {len(want)} packet(s), ours {len(got)}"
                + "".join(f"\n      bmv2 {d.hex()}" for d in want)
                + "".join(f"\n      ours {d.hex()}" for d in got)
            )
    for name, want_r in bmv2.registers.items():
        got_r = ours.registers.get(name, [])
        if want_r != got_r:
            cells = [
                i for i in range(max(len(want_r), len(got_r))) if _at(want_r, i) != _at(got_r, i)
            ]
            shown = ", ".join(f"[{i}] {_at(want_r, i)} vs {_at(got_r, i)}" for i in cells[:6])
            diffs.append(f"register {name}: {len(cells)} cell(s) differ (BMv2 vs ours): {shown}")
    for name, want_c in bmv2.counters.items():
        got_c = ours.counters.get(name, [])
        if want_c != got_c:
            cells = [i for i in range(len(want_c)) if _at(want_c, i) != _at(got_c, i)]
            shown = ", ".join(f"[{i}] {_at(want_c, i)} vs {_at(got_c, i)}" for i in cells[:6])
            diffs.append(f"counter {name} (packets, bytes): BMv2 vs ours: {shown}")
    return diffs


def _at(seq: Sequence[Any], i: int) -> Any:
    return seq[i] if i < len(seq) else None


@dataclass
class CaseResult:
    packets: int
    engines: list[str]  # the engines that really ran (native may be refused)
    divergences: list[Divergence]
    unattached: int
    outputs: int = 0  # packets BMv2 sent on the attached ports
    accepted: int = 0  # control operations BMv2 accepted
    excluded: int = 0  # packets taken out (parser-rejected, after a divergence)
    undefined: bool = False  # the divergence was an invalid-header read (EXCLUDED)


def check_case(case: Case, retry: bool = True) -> CaseResult:
    """Run ``case`` on BMv2 and on both engines; the divergences of each engine. A case
    that diverges and holds packets our parser rejects is run again without them: if the
    divergence goes, it was an invalid-header read (``EXCLUDED``) and the case counts as
    the reduced one."""
    runs = [run_ours(case, engine) for engine in ENGINES]
    bm = run_bmv2_case(case, runs)
    result = CaseResult(len(case.packets), [], [], 0, sum(map(len, bm.outputs.values())))
    result.accepted = sum(bm.accepted)
    rejected: list[int] = []
    for ours in runs:
        rejected = rejected or ours.parser_errors
        result.engines.append(ours.engine)
        result.unattached = max(result.unattached, ours.unattached)
        what = compare(case, bm, ours)
        if what:
            result.divergences.append(Divergence(case, ours.engine, what))
    if result.divergences and rejected and retry:
        keep = [p for i, p in enumerate(case.packets) if i not in set(rejected)]
        reduced = check_case(Case(case.target, case.ops, keep), retry=False)
        reduced.excluded = len(case.packets) - len(keep)
        reduced.undefined = not reduced.divergences
        return reduced
    return result


__all__ = [
    "Case",
    "CaseResult",
    "Cli",
    "Default",
    "Divergence",
    "Entry",
    "Target",
    "check_case",
    "targets",
]
