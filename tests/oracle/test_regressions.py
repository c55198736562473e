"""Divergences the BMv2 oracle found, as minimal cases with BMv2's recorded answer, on both
engines (no BMv2 needed). Each was fixed in the engines; BMv2 (simple_switch) was the judge.
"""

from __future__ import annotations

import pytest
from bmv2_oracle import ROOT, Case, Cli, Target, run_ours

ENGINES = ["python", "native"]


def _target(name: str) -> Target:
    p = ROOT / "bmv2_tests" / f"{name}.p4"
    return Target(f"bmv2_tests/{name}", p, (p.parent,))


@pytest.mark.parametrize("engine", ENGINES)
def test_meter_out_of_range_index_leaves_the_result(engine: str) -> None:
    # meter_bytes.p4: m.execute_meter(hdr.h.idx, hdr.h.color) with a 1-cell meter; BMv2
    # sent 1446... back: index 0x14 is out of range, the colour byte 0x46 stays as it came
    data = bytes.fromhex("1446420d9d16b14f")
    out = run_ours(Case(_target("meter_bytes"), [], [(0, data)]), engine)
    assert out.outputs[1] == [data]


@pytest.mark.parametrize("engine", ENGINES)
def test_direct_meter_read_after_a_miss_leaves_the_result(engine: str) -> None:
    # meter_direct.p4: read_color (dm.read(hdr.h.color)) as the default action of an empty
    # table; BMv2 sent 02ff back unchanged (ours wrote GREEN = 0 before the fix)
    from bmv2_oracle import Default

    case = Case(
        _target("meter_direct"),
        [Default("ingress.t", "ingress.read_color", ())],
        [(2, bytes.fromhex("02ff"))],
    )
    out = run_ours(case, engine)
    assert out.accepted == [True]
    assert out.outputs[1] == [bytes.fromhex("02ff")]


@pytest.mark.parametrize("engine", ENGINES)
def test_multicast_group_created_twice_keeps_its_nodes(engine: str) -> None:
    # pre_multicast.p4 replicates to group hdr.h.grp; BMv2 accepts the second
    # mc_mgrp_create 1 and still replicates to the node associated before it
    ops = [
        Cli("mc_mgrp_create", ("1",)),
        Cli("mc_node_create", ("10", "1", "2")),
        Cli("mc_node_associate", ("1", "0")),
        Cli("mc_mgrp_create", ("1",)),
        Cli("mc_mgrp_destroy", ("7",)),
    ]
    pkt = bytes.fromhex("01") + bytes(13)
    out = run_ours(Case(_target("pre_multicast"), ops, [(0, pkt)]), engine)
    assert out.accepted == [True] * 5
    assert len(out.outputs[1]) == 1 and len(out.outputs[2]) == 1


@pytest.mark.parametrize("engine", ENGINES)
def test_direct_meter_hit_writes_the_read_field_whatever_the_action(engine: str) -> None:
    # meter_direct.p4: entry key 0xff -> NoAction (no dm.read call); BMv2 still wrote the
    # colour (GREEN = 0) into hdr.h.color, the field of the table's read(): ffff -> ff00 on
    # port 0 (NoAction leaves egress_spec at 0)
    from bmv2_oracle import Entry
    from p4reduce.switch.interp.matches import Exact

    ops = [Entry("ingress.t", (Exact(255),), "NoAction", (), None)]
    out = run_ours(Case(_target("meter_direct"), ops, [(0, bytes.fromhex("ffff"))]), engine)
    assert out.outputs[0] == [bytes.fromhex("ff00")]


@pytest.mark.parametrize("engine", ENGINES)
def test_table_with_initial_entries_is_sized_to_them(engine: str) -> None:
    # table_entries_priority.p4: t1 has 4 `entries` (not const) and no size; p4c gives BMv2
    # max_size 4, so BMv2 refused one more entry (ours accepted it into 1024 slots)
    from bmv2_oracle import Entry
    from p4reduce.switch.interp.matches import Range

    ops = [Entry("ingress.t1", (Range(0, 7),), "ingress.s1", (85,), 1_000)]
    out = run_ours(Case(_target("table_entries_priority"), ops, []), engine)
    assert out.accepted == [False]


@pytest.mark.parametrize("engine", ENGINES)
def test_register_read_out_of_range_leaves_the_result(engine: str) -> None:
    # register_control_plane.p4: op 0 reads r[idx] into res; idx 0xff of a 4-cell register:
    # BMv2 sent the packet back with res (deadbeef) untouched, ours had written 0
    data = bytes.fromhex("00ff0000ff00deadbeef")
    out = run_ours(Case(_target("register_control_plane"), [], [(0, data)]), engine)
    assert out.outputs[1] == [data]
