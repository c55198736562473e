"""Hierarchical aggregation end to end on loopback (docs/protocol.md, "Hierarchical
aggregation"): three p4reduce-switch processes, two ToRs and a spine, wired with UDP ports
(``-i N@udp:HOST:PORT``); the controller's ``tree`` module installs one job on all three over
three P4Runtime connections; 2 racks x 2 workers run unchanged host sessions against their
ToR: int32 exact, float32 within the quantization bound, sparse float32, without and with
loss on every link (the loss simulator of each switch, both directions of every port).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from p4reduce.controller import Controller, Member
from p4reduce.controller.client import Assignment, Timeouts
from p4reduce.controller.static_config import StaticConfig
from p4reduce.controller.tree import Parent, Rack, create_tree, delete_tree, render_tree, show_tree
from p4reduce.host.api import AllreduceSession

from p4reduce.stack.agg_ports import lease_agg_port

ROOT = Path(__file__).resolve().parents[2]
SPINE_IP, SPINE_MAC = "127.0.39.1", "02:00:00:00:39:01"
TOR_IPS = [f"127.0.39.{r + 2}" for r in range(8)]
TOR_MACS = [f"02:00:00:00:39:{r + 2:02x}" for r in range(8)]
UPLINK = 40  # each ToR's port towards the spine
JOB = 39
# racks x workers per rack: 2 x 2 by default; P4REDUCE_TREE_FULL=1 adds the 2 x 4
# and 4 x 2 (about 20 s more)
SHAPES = [(2, 2)] + ([(2, 4), (4, 2)] if os.environ.get("P4REDUCE_TREE_FULL") == "1" else [])
START_TIMEOUT = 240.0  # a cold native-engine compile on a loaded machine


def _python_cli(module: str) -> list[str]:
    """Run a p4reduce command's main() with this Python (no console script needed)."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())"]


@contextlib.contextmanager
def _switch(tmp: Path, name: str, prog: Path, listen: str, peers: dict[int, tuple[str, int]]
            ) -> Iterator[str]:  # fmt: skip
    """A p4reduce-switch on ``listen`` with UDP peers; yields its P4Runtime address."""
    args = [*_python_cli("p4reduce.switch.process.cli"), str(prog)]
    for port, (ip, udp) in peers.items():
        args += ["-i", f"{port}@udp:{ip}:{udp}"]
    args += ["--udp-listen", listen, "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warn"]
    out, err = tmp / f"{name}.out", tmp / f"{name}.err"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            m = re.search(r"ready \(P4Runtime ([\d.]+:\d+)", out.read_text(errors="replace"))
            if m:
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"{name} did not start: {err.read_text(errors='replace')[-2000:]}")
            time.sleep(0.05)
        yield m[1]
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module", params=SHAPES, ids=[f"{r}x{w}" for r, w in SHAPES])
def tree(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[dict]:
    RACKS, PER_RACK = request.param  # noqa: N806 - the shape, constant for this fixture
    tmp = tmp_path_factory.mktemp("tree")
    with lease_agg_port() as lease, contextlib.ExitStack() as stack:
        port = lease.port
        build = tmp / "build"
        compiled = subprocess.run(
            [*_python_cli("p4reduce.switch.frontend.cli"), "-I", str(ROOT / "p4src" / "include"),
             f"-DAGG_UDP_PORT={port}", "-o", str(build), "--p4runtime-files",
             str(build / "sparse.p4info.txtpb"), str(ROOT / "p4src" / "sparse.p4")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr
        socks = []
        for _ in range(RACKS * PER_RACK):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        addrs = [s.getsockname()[:2] for s in socks]
        prog = build / "sparse.json"
        spine_grpc = stack.enter_context(
            _switch(tmp, "spine", prog, f"{SPINE_IP}:{port}",
                    {r + 1: (TOR_IPS[r], port) for r in range(RACKS)})
        )  # fmt: skip
        tor_grpc = []
        for r in range(RACKS):
            peers = {w + 1: addrs[r * PER_RACK + w] for w in range(PER_RACK)}
            peers[UPLINK] = (SPINE_IP, port)
            tor_grpc.append(
                stack.enter_context(_switch(tmp, f"tor{r}", prog, f"{TOR_IPS[r]}:{port}", peers))
            )
        spine = stack.enter_context(Controller(spine_grpc))
        tors = [stack.enter_context(Controller(g)) for g in tor_grpc]
        for ctl, ip, mac in [
            (spine, SPINE_IP, SPINE_MAC),
            *zip(tors, TOR_IPS[:RACKS], TOR_MACS[:RACKS], strict=True),
        ]:
            ctl.push(build / "sparse")
            ctl.install_static(StaticConfig(ip, mac))
        racks = [
            Rack(tors[r],
                 [Member(r * PER_RACK + w, *addrs[r * PER_RACK + w], f"02:00:00:01:{r:02x}:{w:02x}", w + 1)
                  for w in range(PER_RACK)],
                 TOR_IPS[r], TOR_MACS[r], spine_port=r + 1, uplink_port=UPLINK, udp_port=port)
            for r in range(RACKS)
        ]  # fmt: skip
        job = create_tree(spine, Parent(SPINE_IP, SPINE_MAC, port), racks, JOB, slot_count=8)
        t = {"spine": spine, "tors": tors, "job": job, "socks": socks, "port": port,
             "racks": racks, "n": RACKS * PER_RACK, "per_rack": PER_RACK}  # fmt: skip
        # the workers: unchanged host sessions, each told its ToR's address and the total n
        t["sessions"] = [
            stack.enter_context(contextlib.closing(
                AllreduceSession(_assignment(t, r), socks[r], engine="native",
                                 transparent_retry=False)))
            for r in range(RACKS * PER_RACK)
        ]  # fmt: skip
        yield t
        delete_tree(spine, tors, JOB)


def _assignment(t: dict, rank: int) -> Assignment:
    rack = rank // t["per_rack"]
    tor_job = t["job"].tors[rack]
    return Assignment(
        job_id=JOB, job_index=tor_job.job_index, rank=rank, n=t["n"],
        slot_base=tor_job.slot_base, slot_count=tor_job.slot_count, k=64, program="sparse",
        switch_ip=TOR_IPS[rack], switch_mac=TOR_MACS[rack], agg_port=t["port"],
        mgid=tor_job.mgid, job_key=t["job"].key, timeouts=Timeouts(20, 200, 200),
        members=[{"rank": rank, "udp_port": t["socks"][rank].getsockname()[1]}],
    )  # fmt: skip


def _run(t: dict, inputs: list[np.ndarray], mode: str = "dense") -> list[np.ndarray]:
    """Each worker's allreduce of its input, on threads, on the job's sessions (one per
    worker for the whole module: a session keeps each slot's set across calls)."""
    n = len(inputs)
    out: list[np.ndarray | None] = [None] * n
    errors: list[BaseException] = []

    def worker(rank: int) -> None:
        try:
            out[rank] = t["sessions"][rank].allreduce(inputs[rank], mode=mode)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(r,)) for r in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not any(th.is_alive() for th in threads), "a worker hung"
    assert not errors, errors
    return [o for o in out if o is not None]


def _float_bound(inputs: list[np.ndarray]) -> float:
    """docs/protocol.md, "Quantization": n^2 * 2^(E - 127 - 32) with E from the largest
    magnitude (every block's exponent is at most that), plus float32 rounding of the sum."""
    n = len(inputs)
    e = np.frexp(np.float64(max(float(np.max(np.abs(x))) for x in inputs)))[1] + 127
    total = float(np.max(np.abs(np.sum(inputs, axis=0, dtype=np.float64))))
    return n * n * 2.0 ** (e - 127 - 32) + total * 2.0**-23


@pytest.mark.parametrize("loss", [0.0, 0.03], ids=["no-loss", "loss-3pct"])
def test_racks_of_workers(tree: dict, loss: float) -> None:
    for ctl in [tree["spine"], *tree["tors"]]:
        ctl.set_loss(loss, direction="both")
    try:
        rnd = np.random.default_rng(39 + int(loss * 100))
        n = tree["n"]
        ints = [
            rnd.integers(-(2**31), 2**31, size=1000, dtype=np.int64).astype(np.int32)
            for _ in range(n)
        ]
        want = np.sum(np.stack(ints).astype(np.int64), axis=0).astype(np.uint32).view(np.int32)
        for got in _run(tree, ints):
            np.testing.assert_array_equal(got, want)  # exact, wrapping like int32
        floats = [rnd.standard_normal(3000).astype(np.float32) * 10 for _ in range(n)]
        want_f = np.sum(np.stack(floats).astype(np.float64), axis=0)
        bound = _float_bound(floats)
        results = _run(tree, floats)
        for got in results:
            assert float(np.max(np.abs(got - want_f))) <= bound
            np.testing.assert_array_equal(got, results[0])  # every worker the same bits
        sparse = [np.zeros(64 * 40, np.float32) for _ in range(n)]
        for r, x in enumerate(sparse):
            x[64 * (3 * r + 1) : 64 * (3 * r + 1) + 10] = r + 1.5  # one block per rank
            x[64 * 30 + r] = -2.0  # a block all share
        want_s = np.sum(np.stack(sparse).astype(np.float64), axis=0)
        for got in _run(tree, sparse, mode="sparse"):
            assert float(np.max(np.abs(got - want_s))) <= _float_bound(sparse)
    finally:
        for ctl in [tree["spine"], *tree["tors"]]:
            ctl.set_loss(0.0, direction="both")
    if loss:
        # the loss simulators dropped packets at both levels and the ToRs sent partial sums
        # up again; the sums above are exact all the same
        spine_lost = sum(s.get("loss_in") for s in tree["spine"].stats(JOB))
        tor_lost = sum(s.get("loss_in") for t in tree["tors"] for s in t.stats(JOB))
        up_again = sum(s.get("up_retransmit") for t in tree["tors"] for s in t.stats(JOB))
        assert spine_lost > 0 and tor_lost > 0 and up_again > 0, (spine_lost, tor_lost, up_again)
        for t in tree["tors"]:
            (st,) = t.stats(JOB)
            d = st.to_dict()
            assert d["sent_up"] == d["results_from_parent"] > 0  # one of each per slot use
            assert d["aggregated"] == d["contributions"] + d["sent_up"]


def test_show_tree(tree: dict) -> None:
    got = show_tree(tree["spine"], tree["tors"], JOB)
    n, w, racks = tree["n"], tree["per_rack"], len(tree["tors"])
    assert got["n"] == n
    assert [m["ip"] for m in got["spine"]["members"]] == TOR_IPS[:racks]
    assert [r["uplink"]["rank"] for r in got["racks"]] == list(range(racks))
    assert all(
        r["uplink"]["port"] == UPLINK and r["uplink"]["ip"] == SPINE_IP for r in got["racks"]
    )
    assert all(r["parent"] == {"ip": SPINE_IP, "udp_port": tree["port"]} for r in got["racks"])
    ranks = [[m["rank"] for m in r["members"]] for r in got["racks"]]
    assert ranks == [list(range(r * w, (r + 1) * w)) for r in range(racks)]
    text = render_tree(got)
    assert f"job {JOB}: {n} workers in {racks} racks" in text and f"rank {n - 1}:" in text


def _ctl(capsys: pytest.CaptureFixture[str], t: dict, *args: str) -> tuple[int, str, str]:
    """p4reduce-ctl in this process, against the spine, as a second client (election id 5:
    primary while connected; the fixture's controllers are primary again afterwards)."""
    from p4reduce.controller.cli import main

    rc = main(["--grpc-addr", t["spine"].conn.addr, "--election-id", "5", *args])
    out, err = capsys.readouterr()
    return rc, out, err


def test_ctl_tree_create_show_delete(
    tree: dict, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    racks = tree["racks"]
    spec = {
        "job_id": 40, "slots": 4,
        "spine": {"ip": SPINE_IP, "mac": SPINE_MAC, "udp_port": tree["port"]},
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
    n, racks_n = tree["n"], len(racks)
    assert created["job_id"] == 40 and created["n"] == n and 0 <= created["job_key"] < 2**32
    tors = [a for r in racks for a in ("--tor", r.ctl.conn.addr)]
    rc, out, err = _ctl(capsys, tree, "tree", "show", "--job", "40", *tors)
    assert rc == 0, err
    assert out.startswith(f"job 40: {n} workers in {racks_n} racks\nspine ")
    assert out.count("  rack ") == racks_n and out.count("    rank ") == n
    # job 39 is untouched: its own index and slots on every switch
    assert show_tree(tree["spine"], tree["tors"], JOB)["n"] == n
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
