"""The leaf-spine testbed (``p4reduce testbed --experiment racks``, docs/testbed.md
"Leaf-spine"): the rack layout and the experiment's shapes and verdicts everywhere; with
root and Mininet, the smallest tree (2 racks x 1 worker, a ToR each under a spine) with
p4reduce and gloo's ring through the switches and p4reduce again under loss on every link,
every result checked, nothing left behind.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from p4reduce.testbed.mininet import racks as racks_mod
from p4reduce.testbed.mininet import topology
from p4reduce.testbed.mininet.experiments import Options
from p4reduce.testbed.mininet.runner import Row

from .test_mininet_experiments import run_rows
from .test_mininet_testbed import _cmdlines, leftovers, needs_mininet


# ---------------------------------------------------------------------- everywhere
def test_placement_puts_hosts_in_racks() -> None:
    spec = topology.parse_spec(json.dumps({"hosts": 6, "racks": 3}))
    got = [topology.placement(spec, i) for i in range(1, 7)]
    assert got == [(0, 1, "p4r-t0p1"), (0, 2, "p4r-t0p2"), (1, 1, "p4r-t1p1"),
                   (1, 2, "p4r-t1p2"), (2, 1, "p4r-t2p1"), (2, 2, "p4r-t2p2")]  # fmt: skip
    assert topology.uplink_intfs(2) == ("p4r-t2up", "p4r-s3")
    # every name fits Linux's 15 characters, and the cleanup's prefix finds it
    for name in (topology.placement({"hosts": 32, "racks": 8}, 32)[2], *topology.uplink_intfs(7)):
        assert len(name) <= 15 and name.startswith(topology.SWITCH_NODE + "-")
    flat = topology.parse_spec(json.dumps({"hosts": 3}))
    assert topology.placement(flat, 3) == (0, 3, "p4r-eth3")


@pytest.mark.parametrize("spec", [{"hosts": 5, "racks": 2}, {"hosts": 9, "racks": 9}])
def test_bad_rack_layouts_are_refused(spec: dict) -> None:
    with pytest.raises(topology.TopologyError, match="racks"):
        topology.parse_spec(json.dumps(spec))


def test_default_shapes_and_loss_points() -> None:
    pts = racks_mod.racks_points(Options())
    shapes = [(p.racks, p.workers // p.racks, p.shape.loss) for p in pts]
    assert shapes == [(1, 2, 0.0), (2, 2, 0.0), (4, 2, 0.0), (4, 2, 0.01), (2, 4, 0.0),
                      (2, 4, 0.01)]  # fmt: skip
    assert all(p.k == racks_mod.K for p in pts)
    assert all(p.gloo_items == () for p in pts if p.shape.loss)  # loss: p4reduce only
    assert [p.racks for p in racks_mod.racks_points(Options(), racks=(3,), per_rack=(1,))] == [3]


def _row(racks: int, workers: int, backend: str, ms: float, ok: bool = True) -> Row:
    return Row("racks", backend, "dense" if backend == "p4reduce" else "ring", workers, 100,
               "int32", 1.0, 10.0, None, 0.0, "embedded (native)", ms / 1e3, ms / 1e3,
               ms / 1e3, 3, 0.0, None, 0.0, 0.0, ok, 0.0, extra={"racks": racks})  # fmt: skip


def test_summary_gives_the_two_ratios() -> None:
    rows = [_row(1, 2, "p4reduce", 100), _row(4, 8, "p4reduce", 110), _row(4, 8, "gloo", 200),
            _row(2, 8, "p4reduce", 150), _row(2, 8, "gloo", 200, ok=False)]  # fmt: skip
    lines = racks_mod.summary(rows)
    assert "int32, 2 per rack: time(4 racks) / time(1 rack) = 1.10 (meets <= 1.15)" in lines
    assert "int32, 4 x 2: p4reduce / gloo ring = 0.55 (meets <= 0.65)" in lines
    assert "int32, 2 x 4: p4reduce / gloo ring = 0.75 (misses <= 0.65)" in lines
    assert lines[-1].startswith("4 of 5 results right")


def test_racks_options_belong_to_the_racks_experiment(tmp_path: Path) -> None:
    from p4reduce.testbed import cli

    # the usage error comes before any root check
    args = cli.build_parser().parse_args(["testbed", "--racks", "2", "--out", str(tmp_path)])
    assert args.racks == (2,)
    with pytest.raises(SystemExit) as e:
        cli.build_parser().parse_args(["testbed", "--racks", "9"])
    assert e.value.code == 2


# ---------------------------------------------------------------------- with Mininet
@needs_mininet
@pytest.mark.timeout(400)
def test_two_racks_exact_with_gloo_and_loss(tmp_path: Path) -> None:
    """2 racks x 1 worker: int32 exact and float32 within the bound through ToR and spine,
    gloo's ring switched across them, and 5 % loss on every link (p4reduce); then nothing
    of the testbed is left."""
    rows = run_rows("--experiment", "racks", "--racks", "2", "--per-rack", "1",
                    "--elements", "3000", "--repeat", "2", "--loss", "0,0.05",
                    "--bw", "100", "--json", "--out", str(tmp_path), timeout=360)  # fmt: skip
    got = {(r["backend"], r["dtype"], r["loss"]) for r in rows}
    assert got == {("p4reduce", "int32", 0.0), ("p4reduce", "float32", 0.0),
                   ("gloo", "int32", 0.0), ("gloo", "float32", 0.0),
                   ("p4reduce", "int32", 0.05), ("p4reduce", "float32", 0.05)}  # fmt: skip
    assert all(r["ok"] and r["racks"] == 2 and r["workers"] == 2 for r in rows)
    assert all(r["max_abs_error"] == 0 for r in rows if r["dtype"] == "int32")
    assert (tmp_path / "racks.csv").exists() and (tmp_path / "racks.png").exists()
    assert leftovers() == []
    assert not [c for c in _cmdlines().values() if "testbed.mininet.tree_worker" in c]
