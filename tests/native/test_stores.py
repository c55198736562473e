"""The switch's objects keep their class whichever engine runs: the native engine injects
stores (switch/native/mirror*.py) into the interpreter's tables, registers, counters, meters,
value sets, PRE, profiles, entries and hash calculations, and takes them back at close."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from p4reduce.switch.interp import externs, hashes, meters, pre, tables
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.matches import Exact
from p4reduce.switch.native import mirror, mirror_externs, mirror_profiles
from p4reduce.switch.native.build import compiler
from p4reduce.switch.native.select import make_switch

SWITCH = Path(mirror.__file__).resolve().parents[1]
PROGRAM = Path(__file__).resolve().parent / "p4" / "store_ops.p4"


def class_assignments(tree: ast.AST) -> list[int]:
    """Lines that assign to an object's ``__class__`` (plain, augmented or annotated)."""
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign):
            targets = [node.target]
        stack = list(targets)
        while stack:
            t = stack.pop()
            if isinstance(t, ast.Tuple | ast.List):
                stack += t.elts
            elif isinstance(t, ast.Attribute) and t.attr == "__class__":
                lines.append(node.lineno)
    return lines


def test_the_check_finds_a_class_assignment() -> None:
    tree = ast.parse("obj.__class__ = Other\na, b.__class__ = 1, X\nsetattr(o, 'x', 1)\n")
    assert class_assignments(tree) == [1, 2]


def test_no_object_in_switch_changes_its_class() -> None:
    found = {
        f"{path.relative_to(SWITCH)}:{line}"
        for path in sorted(SWITCH.rglob("*.py"))
        for line in class_assignments(ast.parse(path.read_text(), str(path)))
    }
    assert not found, f"__class__ assignments (inject a store instead): {sorted(found)}"


@pytest.fixture
def sw():  # type: ignore[no-untyped-def]
    if compiler() is None:
        pytest.skip("no C compiler")
    s = make_switch(load_pipeline(str(PROGRAM)), "native", notice=None)
    if s.engine != "native":
        pytest.skip("the native engine is unavailable here")
    yield s
    s.close()


def test_native_engine_injects_stores_and_keeps_classes(sw) -> None:  # type: ignore[no-untyped-def]
    p = sw.pipeline
    t, u, r, c, vs = (
        p.tables["I.t"],
        p.tables["I.u"],
        p.registers["I.r"],
        p.counters["I.c"],
        (p.value_sets["P.vs"]),
    )
    prof = sw.program.objects.profile_list[0]
    cell = sw.program.objects.meter_list[0].array.cells[0]
    assert (type(t), type(r), type(c), type(vs), type(sw.pre), type(prof), type(cell)) == (
        tables.Table,
        externs.Register,
        externs.Counter,
        externs.ValueSet,
        pre.PacketReplicationEngine,
        externs.ActionProfile,
        meters.Meter,
    )
    assert isinstance(t.store, mirror.EngineTableStore)
    assert isinstance(r.store, mirror.EngineRegisterStore)
    assert isinstance(c.store, mirror.EngineCounterStore)
    assert isinstance(vs.store, mirror.EngineValueSetStore)
    assert isinstance(sw.pre.store, mirror.EnginePreStore)
    assert isinstance(prof.store, mirror_profiles.EngineProfileStore)
    assert isinstance(cell.store, mirror_externs.EngineMeterStore)

    e = t.add_entry([Exact(5)], "I.setb", [7])
    assert type(e) is tables.TableEntry and isinstance(e.counts, mirror_externs.EngineEntryCounts)
    prof.add_member(1, "I.setb", [9])
    u.add_entry([Exact(7)], "", [], member=1)
    cell.set_rates([(0.0, 1), (0.0, 1)])  # one green packet, then red
    out = sw.process(0, bytes([5, 0]))
    assert out == [(1, bytes([5, 9]))]  # t set b = 7, u's member then b = 9
    # the state the C data plane changed is read through the stores
    assert (e.packets, e.bytes) == (1, 2)
    assert r.values[0] == 5 and r.cp_read(0) == 5
    assert c.cp_read(1) == (1, 2) and list(c.packets) == [0, 1, 0, 0]
    r.cp_fill([1, 2], 3)
    assert list(r.values) == [5, 3, 3, 0]
    vs.add([(5, 0xFF)])
    assert vs.members == [((5, 0xFF),)]


def test_close_gives_the_state_back_to_python_stores(sw) -> None:  # type: ignore[no-untyped-def]
    p = sw.pipeline
    t = p.tables["I.t"]
    prof = sw.program.objects.profile_list[0]
    cell = sw.program.objects.meter_list[0].array.cells[0]
    e = t.add_entry([Exact(5)], "I.setb", [7])
    prof.add_member(3, "I.setb", [1])
    cell.set_rates([(0.0, 4), (0.0, 4)])
    sw.process(0, bytes([5, 0]))
    sw.process(0, bytes([5, 0]))
    sw.close()
    assert type(e.counts) is tables.EntryCounts and (e.packets, e.bytes) == (2, 4)
    assert type(prof.store) is externs.ProfileStore and list(prof.members) == [3]
    assert cell.store is None
    assert [b.tokens for b in cell._buckets] == [2, 2]  # two packets took a token each


def test_interpreter_objects_default_to_python_stores() -> None:
    r = externs.Register("r", 4, 8, False)
    assert type(r.values) is list  # the generated code indexes it directly
    r.cp_fill([0, 3], 255)
    assert r.values == [255, 0, 0, 255]
    r.reset()
    assert r.values == [0, 0, 0, 0]
    assert type(hashes.HashCalc("crc16_custom").store) is hashes.CrcStore
    assert type(externs.ActionProfile("ap", 4).store) is externs.ProfileStore


def test_a_store_hears_of_every_change_even_a_refused_one() -> None:
    synced: list[dict[int, list[int]]] = []

    class Spy(pre.PreStore):
        def sync(self, engine: pre.PacketReplicationEngine) -> None:
            synced.append(dict(engine.groups))

    e = pre.PacketReplicationEngine()
    e.use_store(Spy())
    e.mgrp_create(1)
    with pytest.raises(pre.PreError):
        e.mgrp_create(0)
    assert synced == [{}, {1: []}, {1: []}]  # attach, create, the refused create
