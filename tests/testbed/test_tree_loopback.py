"""Hierarchical aggregation end to end on loopback (docs/protocol.md, "Hierarchical
aggregation"), through testbed/tree_loopback.py: ToR switches and a spine, each a
p4reduce-switch process wired with UDP ports (``-i N@udp:HOST:PORT``); the controller's
``tree`` module installs one job on all of them over one P4Runtime connection each; R x W
unchanged host sessions run against their ToR: int32 exact, float32 within the quantization
bound, sparse float32, without and with loss on every link (the loss simulator of every
switch, both directions of every port); the tree read back; ``p4reduce-ctl tree``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from p4reduce.controller.tree import render_tree, show_tree
from p4reduce.testbed.tree_loopback import (
    SPINE_IP,
    SPINE_MAC,
    UPLINK,
    TreeLoopback,
    float_bound,
    tor_ip,
)

JOB = 39
# racks x workers per rack: 2 x 2 by default; P4REDUCE_TREE_FULL=1 adds the 2 x 4
# and 4 x 2 (about 20 s more)
SHAPES = [(2, 2)] + ([(2, 4), (4, 2)] if os.environ.get("P4REDUCE_TREE_FULL") == "1" else [])


@pytest.fixture(scope="module", params=SHAPES, ids=[f"{r}x{w}" for r, w in SHAPES])
def tree(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[TreeLoopback]:
    racks, per_rack = request.param
    with TreeLoopback(racks, per_rack, job_id=JOB, workdir=tmp_path_factory.mktemp("tree")) as t:
        yield t


@pytest.mark.parametrize("loss", [0.0, 0.03], ids=["no-loss", "loss-3pct"])
def test_racks_of_workers(tree: TreeLoopback, loss: float) -> None:
    tree.set_loss(loss)
    try:
        rnd = np.random.default_rng(39 + int(loss * 100))
        n = tree.n
        ints = [
            rnd.integers(-(2**31), 2**31, size=1000, dtype=np.int64).astype(np.int32)
            for _ in range(n)
        ]
        want = np.sum(np.stack(ints).astype(np.int64), axis=0).astype(np.uint32).view(np.int32)
        for got in tree.run(ints):
            np.testing.assert_array_equal(got, want)  # exact, wrapping like int32
        floats = [rnd.standard_normal(3000).astype(np.float32) * 10 for _ in range(n)]
        want_f = np.sum(np.stack(floats).astype(np.float64), axis=0)
        bound = float_bound(floats)
        results = tree.run(floats)
        for got in results:
            assert float(np.max(np.abs(got - want_f))) <= bound
            np.testing.assert_array_equal(got, results[0])  # every worker the same bits
        sparse = [np.zeros(64 * 40, np.float32) for _ in range(n)]
        for r, x in enumerate(sparse):
            x[64 * (3 * r + 1) : 64 * (3 * r + 1) + 10] = r + 1.5  # one block per rank
            x[64 * 30 + r] = -2.0  # a block all share
        want_s = np.sum(np.stack(sparse).astype(np.float64), axis=0)
        for got in tree.run(sparse, mode="sparse"):
            assert float(np.max(np.abs(got - want_s))) <= float_bound(sparse)
    finally:
        tree.set_loss(0.0)
    if loss:
        # the loss simulators dropped packets at both levels and the ToRs sent partial sums
        # up again; the sums above are exact all the same
        spine_lost = sum(s.get("loss_in") for s in tree.spine.stats(JOB))
        tor_lost = sum(s.get("loss_in") for t in tree.tors for s in t.stats(JOB))
        up_again = sum(s.get("up_retransmit") for t in tree.tors for s in t.stats(JOB))
        assert spine_lost > 0 and tor_lost > 0 and up_again > 0, (spine_lost, tor_lost, up_again)
        for t in tree.tors:
            (st,) = t.stats(JOB)
            d = st.to_dict()
            assert d["sent_up"] == d["results_from_parent"] > 0  # one of each per slot use
            assert d["aggregated"] == d["contributions"] + d["sent_up"]


def test_show_tree(tree: TreeLoopback) -> None:
    got = show_tree(tree.spine, tree.tors, JOB)
    n, w, racks = tree.n, tree.per_rack, tree.racks
    assert got["n"] == n
    assert [m["ip"] for m in got["spine"]["members"]] == [tor_ip(r) for r in range(racks)]
    assert [r["uplink"]["rank"] for r in got["racks"]] == list(range(racks))
    assert all(
        r["uplink"]["port"] == UPLINK and r["uplink"]["ip"] == SPINE_IP for r in got["racks"]
    )
    assert all(r["parent"] == {"ip": SPINE_IP, "udp_port": tree.port} for r in got["racks"])
    ranks = [[m["rank"] for m in r["members"]] for r in got["racks"]]
    assert ranks == [list(range(r * w, (r + 1) * w)) for r in range(racks)]
    text = render_tree(got)
    assert f"job {JOB}: {n} workers in {racks} racks" in text and f"rank {n - 1}:" in text


def _ctl(capsys: pytest.CaptureFixture[str], t: TreeLoopback, *args: str) -> tuple[int, str, str]:
    """p4reduce-ctl in this process, against the spine, as a second client (election id 5:
    primary while connected; the fixture's controllers are primary again afterwards)."""
    from p4reduce.controller.cli import main

    rc = main(["--grpc-addr", t.spine.conn.addr, "--election-id", "5", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_ctl_tree_create_show_delete(
    tree: TreeLoopback, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    racks = tree.rack_specs
    spec = {
        "job_id": 40, "slots": 4,
        "agg_port": tree.port,
        "spine": {"ip": SPINE_IP, "mac": SPINE_MAC, "udp_port": tree.port},
        "racks": [
            {"grpc_addr": r.ctl.conn.addr, "ip": r.ip, "mac": r.mac, "spine_port": r.spine_port,
             "uplink_port": r.uplink_port, "udp_port": r.udp_port,
             "members": [f"{m.rank}:{m.ip}:{m.udp_port}:{m.mac}:{m.switch_port}" for m in r.members]}
            for r in racks
        ],
    }  # fmt: skip
    path = tmp_path / "tree.json"
    path.write_text(json.dumps(spec))
    rc, out, err = _ctl(capsys, tree, "--json", "tree", "create", "--file", str(path))
    assert rc == 0, err
    created = json.loads(out)
    n, racks_n = tree.n, len(racks)
    assert created["job_id"] == 40 and created["n"] == n and 0 <= created["job_key"] < 2**32
    # every worker's assignment: its own ToR, the total n, the job's key
    given = created["assignments"]
    assert [a["rank"] for a in given] == list(range(n))
    assert all(a["n"] == n and a["job_key"] == created["job_key"] for a in given)
    assert [a["switch_ip"] for a in given] == [r.ip for r in racks for _ in r.members]
    assert {(a["k"], a["program"], a["agg_port"]) for a in given} == {(64, "sparse", tree.port)}
    tors = [a for r in racks for a in ("--tor", r.ctl.conn.addr)]
    rc, out, err = _ctl(capsys, tree, "tree", "show", "--job", "40", *tors)
    assert rc == 0, err
    assert out.startswith(f"job 40: {n} workers in {racks_n} racks\nspine ")
    assert out.count("  rack ") == racks_n and out.count("    rank ") == n
    # job 39 is untouched: its own index and slots on every switch
    assert show_tree(tree.spine, tree.tors, JOB)["n"] == n
    rc, out, err = _ctl(capsys, tree, "tree", "delete", "--job", "40", *tors)
    assert rc == 0 and f"job 40 deleted from the spine and {racks_n} ToRs" in out, err
    rc, out, err = _ctl(capsys, tree, "tree", "show", "--job", "40", *tors)
    assert rc == 1 and err.startswith("p4reduce-ctl: error: ") and err.count("\n") == 1, err
    # a bad description: one line, exit 1
    path.write_text(json.dumps({**spec, "racks": []}))
    rc, out, err = _ctl(capsys, tree, "tree", "create", "--file", str(path))
    assert rc == 1 and "'racks' must be a non-empty list" in err and err.count("\n") == 1, err
    path.write_text(
        json.dumps(
            {
                **spec,
                "racks": [{**spec["racks"][0], "members": ["0:1.2.3.4:9:02:00:00:00:00:01:1"] * 2}],
            }
        )
    )
    rc, out, err = _ctl(capsys, tree, "tree", "create", "--file", str(path))
    assert rc == 1 and "ranks must be 0..1, each once" in err and err.count("\n") == 1, err
