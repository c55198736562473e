"""Run an STF test against the embedded v1model interpreter, as p4c's BMv2 runner does.

Statements execute in file order; each ``packet`` runs to completion before the next line
(an in-process switch needs no waiting). Output is captured on every port named by a
``packet`` or ``expect`` line and compared per port, in order, with that port's ``expect``
lines; the counts must match (docs/stf.md, 'Semantics of the runner').
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..frontend.compiler import CompileOptions
from ..interp.builder import Pipeline
from ..interp.externs import ExternError
from ..interp.pre import PreError
from ..interp.runtime import P4RuntimeFault
from ..interp.tables import TableError, matches_for_wildcard
from .compare import format_mismatch, packet_matches
from .parser import (
    Add,
    CheckCounter,
    CliCommand,
    Command,
    Expect,
    Ignored,
    IndirectAdd,
    Packet,
    SetDefault,
)
from .translate import TranslateError, parse_int, resolve, translate_key

log = logging.getLogger("p4reduce.stf")


class StfRunError(Exception):
    """A statement that cannot be executed against this program (``FILE:LINE: error:``)."""


@dataclass
class StfOutcome:
    passed: bool
    report: list[str] = field(default_factory=list)
    fault: str | None = None  # a runtime fault of the program (assert, stack bounds...)
    packets_in: int = 0
    packets_out: int = 0


class VirtualClock:
    """Microseconds that advance only when the runner says so: meters behave the same every run."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


class StfRunner:
    def __init__(
        self,
        pipeline: Pipeline,
        filename: str,
        trace: bool = False,
        engine: str = "auto",
        notice: Callable[[str], None] | None = None,
    ) -> None:
        from ..native.select import make_switch

        self.pipeline = pipeline
        self.filename = filename
        self.clock = VirtualClock()
        # native by default; a program the native engine refuses runs on the interpreter
        self.switch: Any = make_switch(
            pipeline, engine, clock=self.clock, trace=trace, notice=notice
        )
        self.trace = trace
        self.expected: dict[int, list[Expect]] = {}
        self.received: dict[int, list[bytes]] = {}
        self.ports: set[int] = set()
        self.notes: list[str] = []

    def error(self, cmd: Command, message: str) -> StfRunError:
        return StfRunError(f"{self.filename}:{cmd.line}: error: {message}")

    # ------------------------------------------------------------------ running
    def run(self, commands: list[Command]) -> StfOutcome:
        outcome = StfOutcome(True)
        for cmd in commands:
            if isinstance(cmd, Packet):
                self.ports.add(cmd.port)
                self.clock.now += 1
                outcome.packets_in += 1
                try:
                    sent = self.switch.process(cmd.port, cmd.data)
                except P4RuntimeFault as e:
                    outcome.passed = False
                    outcome.fault = f"{e} (packet at {self.filename}:{cmd.line})"
                    return outcome
                except Exception as e:  # noqa: BLE001 - an interpreter bug: report, do not crash
                    outcome.passed = False
                    outcome.fault = (
                        f"{self.filename}:{cmd.line}: internal error while processing the "
                        f"packet: {type(e).__name__}: {e}"
                    )
                    return outcome
                if self.trace:
                    self.notes.append(f"line {cmd.line}: packet on port {cmd.port}")
                    self.notes += ["  " + t for t in self.switch.last_trace]
                for port, data in sent:
                    self.received.setdefault(port, []).append(data)
                    outcome.packets_out += 1
            elif isinstance(cmd, Expect):
                self.ports.add(cmd.port)
                self.expected.setdefault(cmd.port, []).append(cmd)
            else:
                try:
                    self.control(cmd)
                except (TranslateError, TableError, ExternError, PreError) as e:
                    raise self.error(cmd, str(e)) from None
        self.compare(outcome)
        return outcome

    def compare(self, outcome: StfOutcome) -> None:
        for port in sorted(self.ports):
            exp = self.expected.get(port, [])
            got = self.received.get(port, [])
            for i in range(max(len(exp), len(got))):
                e = exp[i] if i < len(exp) else None
                g = got[i] if i < len(got) else None
                if e is None:
                    outcome.passed = False
                    outcome.report.append(
                        f"port {port}: unexpected packet #{i + 1} (no expect line left):\n  {g.hex().upper()}"
                    )
                    continue
                if g is None or not packet_matches(e.pattern, e.exact, g):
                    outcome.passed = False
                    outcome.report.append(
                        f"{self.filename}:{e.line}: expected packet #{i + 1} on port {port}\n"
                        + format_mismatch(port, e.pattern, e.exact, g)
                    )
        for port, got in sorted(self.received.items()):
            if port not in self.ports:
                self.notes.append(
                    f"port {port}: {len(got)} packet(s) on a port the test does not capture"
                )

    # ------------------------------------------------------------------ control plane
    def control(self, cmd: Command) -> None:
        if isinstance(cmd, Add):
            self.add(cmd)
        elif isinstance(cmd, SetDefault):
            table = self.direct_table(cmd.table, "setdefault", "table_set_default")
            action = resolve(cmd.action, table.actions, "action")
            table.set_default(action, self.action_args(table, action, cmd.args))
        elif isinstance(cmd, CliCommand):
            getattr(self, "cli_" + cmd.name)(*cmd.args)
        elif isinstance(cmd, IndirectAdd):
            self.indirect_add(cmd)
        elif isinstance(cmd, (CheckCounter, Ignored)):
            pass  # parsed but not executed, as by p4c's BMv2 runner

    def table(self, name: str) -> Any:
        return self.pipeline.tables[resolve(name, self.pipeline.tables, "table")]

    def action_args(self, table: Any, action: str, args: list[tuple[str, str]]) -> list[int]:
        spec = table.actions[action]
        given = {n: v for n, v in args}
        values = []
        for pname, _width in spec.params:
            if pname not in given:
                raise TranslateError(f"action {action}: missing argument {pname}")
            values.append(parse_int(given.pop(pname)))  # the table checks that it fits
        if given:
            raise TranslateError(f"action {action}: no parameter named {', '.join(given)}")
        return values

    def matches(self, table: Any, keys: list[tuple[str, str]]) -> list[Any]:
        matches = matches_for_wildcard(table.keys)
        from .translate import key_index

        for kname, value in keys:
            i = key_index(kname, table.keys)
            matches[i] = translate_key(value, table.keys[i])
        return matches

    def direct_table(self, name: str, command: str, cli: str) -> Any:
        """A table that takes actions directly: not one with an action profile or selector,
        whose entries point to members or groups. BMv2 refuses simple_switch_CLI's ``cli``
        there (Invalid table operation (WRONG_TABLE_TYPE)), and so does this runner."""
        table = self.table(name)
        if table.profile is not None:
            raise TranslateError(
                f"{command} {table.name}: the table has an action profile ({table.profile.name}):"
                " its entries point to members or groups (table_indirect_add); BMv2 refuses "
                f"{cli} there (WRONG_TABLE_TYPE)"
            )
        return table

    def add(self, cmd: Add) -> None:
        table = self.direct_table(cmd.table, "add", "table_add")
        matches = self.matches(table, cmd.keys)
        action = resolve(cmd.action, table.actions, "action")
        args = self.action_args(table, action, cmd.args)
        prio = cmd.priority if cmd.priority is not None else 0
        table.add_entry(matches, action, args, prio if table.needs_priority else None)

    def indirect_add(self, cmd: IndirectAdd) -> None:
        table = self.table(cmd.table)
        if table.profile is None:
            raise TranslateError(f"table {table.name} has no action profile or selector")
        if cmd.group and table.profile.selector_algo is None:
            raise TranslateError(f"{table.profile.name} is an action profile: it has no groups")
        matches = self.matches(table, cmd.keys)
        prio = cmd.priority if cmd.priority is not None else 0
        ref = {"group": cmd.handle} if cmd.group else {"member": cmd.handle}
        table.add_entry(matches, "", [], prio if table.needs_priority else None, **ref)

    # action profiles and selectors: handles as BMv2 gives them (the lowest free one)
    def profile(self, name: str) -> Any:
        return self.named("profiles", name)

    def profile_action(self, prof: Any, action: str) -> str:
        return resolve(action, {a for t in prof.tables for a in t.actions}, "action")

    def cli_act_prof_create_member(self, name: str, action: str, *args: str) -> None:
        prof = self.profile(name)
        handle = _lowest_free(prof.members)
        prof.add_member(handle, self.profile_action(prof, action), [parse_int(a) for a in args])

    def cli_act_prof_modify_member(self, name: str, action: str, handle: str, *args: str) -> None:
        prof = self.profile(name)
        prof.modify_member(
            parse_int(handle), self.profile_action(prof, action), [parse_int(a) for a in args]
        )

    def cli_act_prof_delete_member(self, name: str, handle: str) -> None:
        self.profile(name).delete_member(parse_int(handle))

    def selector(self, name: str) -> Any:
        prof = self.profile(name)
        if prof.selector_algo is None:
            raise TranslateError(f"{prof.name} is an action profile: it has no groups")
        return prof

    def cli_act_prof_create_group(self, name: str) -> None:
        prof = self.selector(name)
        prof.set_group(_lowest_free(prof.groups), [])

    def cli_act_prof_delete_group(self, name: str, handle: str) -> None:
        self.selector(name).delete_group(parse_int(handle))

    def group_members(self, prof: Any, group: str) -> tuple[int, set[int]]:
        g = parse_int(group)
        if g not in prof.groups:
            raise TranslateError(f"{prof.name}: no group {g}")
        return g, set(prof.groups[g])

    def cli_act_prof_add_member_to_group(self, name: str, member: str, group: str) -> None:
        # BMv2 keeps a group's members as a set, chosen in ascending handle order
        prof = self.selector(name)
        g, members = self.group_members(prof, group)
        m = parse_int(member)
        if m in members:
            raise TranslateError(f"{prof.name}: member {m} is already in group {g}")
        prof.set_group(g, sorted(members | {m}))

    def cli_act_prof_remove_member_from_group(self, name: str, member: str, group: str) -> None:
        prof = self.selector(name)
        g, members = self.group_members(prof, group)
        m = parse_int(member)
        if m not in members:
            raise TranslateError(f"{prof.name}: member {m} is not in group {g}")
        prof.set_group(g, sorted(members - {m}))

    def named(self, kind: str, name: str) -> Any:
        objects = getattr(self.pipeline, kind)
        return objects[resolve(name, objects, kind[:-1])]

    # simple_switch_CLI pass-through commands
    def cli_mc_mgrp_create(self, grp: str) -> None:
        self.switch.pre.mgrp_create(parse_int(grp))

    def cli_mc_mgrp_destroy(self, grp: str) -> None:
        self.switch.pre.mgrp_destroy(parse_int(grp))

    def cli_mc_node_create(self, rid: str, *ports: str) -> None:
        self.switch.pre.node_create(parse_int(rid), [parse_int(p) for p in ports])

    def cli_mc_node_update(self, handle: str, *ports: str) -> None:
        self.switch.pre.node_update(parse_int(handle), [parse_int(p) for p in ports])

    def cli_mc_node_destroy(self, handle: str) -> None:
        self.switch.pre.node_destroy(parse_int(handle))

    def cli_mc_node_associate(self, grp: str, handle: str) -> None:
        self.switch.pre.node_associate(parse_int(grp), parse_int(handle))

    def cli_mc_node_dissociate(self, grp: str, handle: str) -> None:
        self.switch.pre.node_dissociate(parse_int(grp), parse_int(handle))

    def cli_mirroring_add(self, session: str, port: str) -> None:
        self.switch.pre.mirroring_add(parse_int(session), parse_int(port))

    def cli_mirroring_add_mc(self, session: str, grp: str) -> None:
        self.switch.pre.mirroring_add_mc(parse_int(session), parse_int(grp))

    def cli_mirroring_delete(self, session: str) -> None:
        self.switch.pre.mirroring_delete(parse_int(session))

    def cli_mirroring_get(self, session: str) -> None:
        self.notes.append(
            f"mirroring session {session}: {self.switch.pre.sessions.get(parse_int(session))}"
        )

    def cli_register_write(self, name: str, index: str, value: str) -> None:
        self.named("registers", name).cp_write(parse_int(index), parse_int(value))

    def cli_register_read(self, name: str, index: str) -> None:
        reg = self.named("registers", name)
        self.notes.append(f"{reg.name}[{index}] = {reg.cp_read(parse_int(index))}")

    def cli_register_reset(self, name: str) -> None:
        self.named("registers", name).reset()

    def cli_counter_read(self, name: str, index: str) -> None:
        c = self.named("counters", name)
        self.notes.append(f"{c.name}[{index}] = {c.cp_read(parse_int(index))}")

    def cli_counter_write(self, name: str, index: str, packets: str, nbytes: str) -> None:
        self.named("counters", name).cp_write(
            parse_int(index), parse_int(packets), parse_int(nbytes)
        )

    def cli_counter_reset(self, name: str) -> None:
        self.named("counters", name).reset()

    def cli_meter_set_rates(self, name: str, index: str, *rates: str) -> None:
        self.named("meters", name).set_rates(parse_int(index), _rates(rates))

    def cli_meter_array_set_rates(self, name: str, *rates: str) -> None:
        self.named("meters", name).set_all_rates(_rates(rates))

    def cli_meter_get_rates(self, name: str, index: str) -> None:
        m = self.named("meters", name)
        self.notes.append(f"{m.name}[{index}] rates = {m.get_rates(parse_int(index))}")

    def cli_table_clear(self, name: str) -> None:
        self.table(name).clear()


def _lowest_free(used: Any) -> int:
    """The handle BMv2's handle manager gives next: the lowest one not in use."""
    n = 0
    while n in used:
        n += 1
    return n


def _rates(words: tuple[str, ...]) -> list[tuple[float, int]]:
    out = []
    for w in words:
        rate, burst = w.split(":", 1)
        try:
            out.append((float(rate), int(burst)))
        except ValueError:
            raise TranslateError(f"bad meter rate {w!r} (want RATE:BURST)") from None
    return out


def load_and_run(
    program: Path,
    stf: Path,
    options: CompileOptions | None = None,
    trace: bool = False,
    engine: str = "auto",
) -> tuple[StfRunner, StfOutcome]:
    """Compile ``program``, parse ``stf`` and run it (errors propagate to the caller)."""
    from ..interp.load import load_pipeline
    from .parser import parse_stf_file

    commands = parse_stf_file(stf)
    pipeline = load_pipeline(program, options)
    runner = StfRunner(pipeline, str(stf), trace, engine)
    return runner, runner.run(commands)
