"""One P4Info index (p4reduce.p4info_index) under the switch's Schema and the controller's:
both see the same objects of a p4reduce program, and both refuse a broken P4Info with the same
line (the switch as INVALID_ARGUMENT, the controller as ControllerError)."""

from __future__ import annotations

import grpc
import pytest
from p4reduce.controller.errors import ControllerError
from p4reduce.controller.p4info import Schema as ControllerSchema
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.p4runtime.errors import P4RTError
from p4reduce.switch.p4runtime.schema import Schema as SwitchSchema

from p4reduce import resources
from p4reduce.p4info_index import P4InfoIndex
from p4reduce.proto import p4info_pb2


@pytest.fixture(scope="module")
def p4info() -> p4info_pb2.P4Info:
    src = resources.p4src()
    return compile_file(src / "dense.p4", CompileOptions(include_dirs=[src / "include"])).p4info


def test_both_sides_index_the_same_objects(p4info: p4info_pb2.P4Info) -> None:
    switch, ctl, index = SwitchSchema(p4info), ControllerSchema(p4info), P4InfoIndex(p4info)
    assert {i: t.name for i, t in switch.tables.items()} == {
        i: t.name for i, t in ctl.tables_by_id.items()
    }
    assert {i: a.name for i, a in switch.actions.items()} == {
        i: a.name for i, a in ctl.actions_by_id.items()
    }
    for t in switch.tables.values():
        assert ctl.tables_by_id[t.id].fields == {
            f.name: (f.id, f.bitwidth, f.match_type) for f in t.fields
        }
    assert {r.name for r in switch.registers.values()} <= set(ctl.registers)
    assert {c.name for c in switch.counters.values()} <= set(ctl.counters)
    # aliases: the controller finds an object by its short name, from the shared index
    for pid, alias in index.aliases.items():
        if pid in index.tables:
            assert ctl.tables[alias].id == pid or ctl.tables[alias].name == alias


def test_both_sides_refuse_a_broken_p4info_alike() -> None:
    info = p4info_pb2.P4Info()
    info.tables.add().preamble.name = "t"  # id 0
    with pytest.raises(P4RTError) as switch:
        SwitchSchema(info)
    assert switch.value.code == grpc.StatusCode.INVALID_ARGUMENT
    with pytest.raises(ControllerError) as ctl:
        ControllerSchema(info)
    assert "P4Info: table 't' has id 0" in str(switch.value)
    assert str(ctl.value) == "P4Info: table 't' has id 0"
