"""The experiments of ``p4reduce testbed`` beyond one point (docs/results.md): the gloo
AGsparse baseline, the verdicts (targets, crossovers, ``mode="auto"``), and small runs of
scaling, sparsity, tenants and training that check every result and that nothing is left
behind, also after SIGTERM.

The runs need root and Debian's Mininet; they are skipped with the reason otherwise. The
rest runs everywhere.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from p4reduce.testbed.data import rank_data, reference
from p4reduce.testbed.mininet import experiments as ex
from p4reduce.testbed.mininet.runner import Row
from p4reduce.testbed.mininet.switches import supported_ks

from p4reduce.free_port import free_port

from .test_mininet_testbed import P4REDUCE, _cmdlines, leftovers, needs_mininet, run_testbed


# ---------------------------------------------------------------------- everywhere
@pytest.mark.timeout(180)
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_agsparse_sums_the_non_zero_blocks(tmp_path: Path, dtype: str) -> None:
    """Three gloo workers on loopback: the allgather of non-zero blocks gives the sum (int32
    exactly, float32 within summation error), the same on every worker."""
    n, m, k, d = 3, 5000, 64, 0.1
    plan = [{"elements": m, "dtype": dtype, "mode": "agsparse", "density": d, "k": k,
             "repeat": 2, "warmup": 1, "save": str(tmp_path / "r{rank}.npy")}]  # fmt: skip
    port = free_port("tcp")
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "p4reduce.testbed.mininet.gloo_worker",
                "--master",
                f"127.0.0.1:{port}",
                "--rank",
                str(r),
                "--n",
                str(n),
                "--iface",
                "lo",
                "--timeout",
                "60",
                "--plan",
                json.dumps(plan),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for r in range(n)
    ]
    try:
        outs = [p.communicate(timeout=150) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert [p.returncode for p in procs] == [0] * n, [e for _, e in outs]
    lines = [json.loads(x) for x in outs[0][0].splitlines()]
    assert [ln["call"] for ln in lines] == [0, 1] and all(ln["mode"] == "agsparse" for ln in lines)
    blocks = -(-m // k)
    cmax = max(1, round(d * blocks))  # each rank keeps round(D * B) blocks
    assert lines[0]["stats"] == {"bytes_sent": (n - 1) * (8 + cmax * 4 * (k + 1)),
                                 "blocks_max": cmax}  # fmt: skip
    arrays = [rank_data(0, r, m, dtype, d, k) for r in range(n)]
    results = [np.load(tmp_path / f"r{r}.npy") for r in range(n)]
    assert all(np.array_equal(results[0], x) for x in results[1:])
    ref = reference(arrays)
    if dtype == "int32":
        assert np.array_equal(results[0], ref)
    else:
        mag = np.sum([np.abs(a.astype(np.float64)) for a in arrays], axis=0)
        assert np.all(np.abs(results[0] - ref) <= n * 2.0**-23 * mag)


def row(backend: str, mode: str, density: float, ms: float, workers: int = 4,
        bw: float = 10.0, k: int = 256) -> Row:  # fmt: skip
    return Row(experiment="x", backend=backend, mode=mode, workers=workers, elements=1000,
               dtype="float32", density=density, bw_mbit=bw, delay_ms=None, loss=0.0,
               switch="embedded", seconds=ms / 1e3, seconds_min=ms / 1e3,
               seconds_max=ms / 1e3, calls=1, goodput_mbit=1.0, link_ms=ms, packets=0.0,
               retransmissions=0.0, ok=True, max_abs_error=0.0, k=k)  # fmt: skip


def test_crossovers_and_the_auto_verdict() -> None:
    rows = []
    for d, sp, de, au, ag in ((0.001, 20, 400, 21, 10), (0.01, 40, 400, 44, 50),
                              (0.1, 200, 400, 300, 600), (1.0, 420, 400, 400, 5000)):  # fmt: skip
        rows += [row("p4reduce", "sparse", d, sp), row("p4reduce", "dense", d, de),
                 row("p4reduce", "auto", d, au), row("gloo", "agsparse", d, ag)]  # fmt: skip
    rows += [row("gloo", "ring", 0.001, 700), row("gloo", "ring", 1.0, 700)]
    cross = ex.crossovers(rows)
    assert any(
        c.startswith("p4reduce sparse and AGsparse (gloo) cross at density ~0.00") for c in cross
    )
    assert any(c.startswith("p4reduce sparse and p4reduce dense cross at density ~") for c in cross)
    # gloo's ring, measured at the ends, is carried to the densities between
    assert all("gloo ring (dense)" in p for p in ex.sparsity_table(rows).values())
    verdicts = {d: (best, round(r, 2), ok) for d, best, r, ok in ex.auto_verdicts(rows)}
    assert verdicts == {0.001: ("AGsparse (gloo)", 2.1, False), 0.01: ("p4reduce sparse", 1.1, True),
                        0.1: ("p4reduce sparse", 1.5, False), 1.0: ("p4reduce dense", 1.0, True)}  # fmt: skip


def test_scaling_targets_per_series() -> None:
    rows = [row("p4reduce", "dense", 1, 100, 2), row("p4reduce", "dense", 1, 110, 8),
            row("gloo", "ring", 1, 90, 2), row("gloo", "ring", 1, 200, 8),
            row("p4reduce", "dense", 1, 10, 2, bw=100), row("p4reduce", "dense", 1, 30, 8, bw=100),
            row("gloo", "ring", 1, 20, 8, bw=100)]  # fmt: skip
    v = ex.scaling_verdicts(rows)
    assert [(x["bw_mbit"], x["k"], round(x["flat"], 2), round(x["vs_gloo"], 2)) for x in v] == [
        (10.0, 256, 1.1, 0.55), (100.0, 256, 3.0, 1.5)]  # fmt: skip
    text = "\n".join(ex.scaling_summary(rows))
    assert "p4reduce(8) / p4reduce(2) = 1.10 (target <= 1.15: met)" in text
    assert "p4reduce / gloo at 8 workers = 1.50 (target <= 0.65, ideal 0.57: MISSED)" in text
    # the CPU per call, where the workers measured it
    rows[1].extra.update(cpu_workers_ms=80.0, cpu_workers_sys_ms=60.0, cpu_switch_ms=90.0,
                         cpu_machine_softirq_ms=50.0, cpu_other_ms=-1.0, cpu_capacity_ms=220.0,
                         link_tx_fps=1500.0, link_rx_fps=1400.0)  # fmt: skip
    assert ex.cpu_lines(rows) == [
        "10 Mbit/s, K = 256, 8 workers, CPU ms per call: switch 90.0, workers 80.0 (75% kernel), "
        "softirq 50.0, other 0.0, of 220.0 (all cores); busiest link 1,500 frames/s up, "
        "1,400 down"]  # fmt: skip


def test_standard_scaling_points() -> None:
    pts = ex.scaling_points(ex.Options())
    assert [(p.shape.bw, p.k, p.workers) for p in pts] == [
        (bw, k, n) for bw, k, ns, _ in ex.SCALING_SERIES for n in ns]  # fmt: skip
    assert {p.items[0].elements for p in pts if p.shape.bw == 10} == {65_536}
    assert {p.items[0].elements for p in pts if p.shape.bw == 100} == {1_048_576}
    assert {(p.repeat, p.rounds) for p in pts} == {(ex.SCALING_REPEAT, ex.SCALING_ROUNDS)}
    assert {p.repeat for p in ex.scaling_points(ex.Options(repeat=4))} == {4}  # --repeat
    # gloo at every point of the 10 Mbit/s and the K = 1024 series, 16 workers too; not
    # again at K = 256 and 100 Mbit/s (the ring does not depend on K)
    assert {(p.shape.bw, p.k) for p in pts if p.gloo_items is None} == {(10, 256), (100, 1024)}
    assert {(p.shape.bw, p.k) for p in pts if p.gloo_items == ()} == {(100, 256)}
    assert ex.scaling_points(ex.Options(gloo=False))[0].gloo_items == ()  # --no-gloo
    # where p4src/ has no K = 1024, the 100 Mbit/s series runs K = 256, once, with gloo
    without = ex.scaling_points(ex.Options(), (64, 256))
    assert {p.k for p in without} == {256}
    assert [(p.shape.bw, p.workers, p.gloo_items) for p in without if p.shape.bw == 100] == [
        (100, 2, None), (100, 4, None), (100, 8, None)]  # fmt: skip
    # the command line's lists replace the set by their product
    pts = ex.scaling_points(ex.Options(workers=(2, 3), bws=(100.0,), ks=(64, 256)))
    assert [(p.shape.bw, p.k, p.workers) for p in pts] == [
        (100.0, 64, 2), (100.0, 64, 3), (100.0, 256, 2), (100.0, 256, 3)]  # fmt: skip


def test_slots_cover_the_window_of_the_link() -> None:
    # 22 ms of link time in flight: frames of 24 + 4K bytes plus 66 bytes on the wire
    assert ex.window_slots(10.0, 256) == 25  # 1,114-byte frames, 0.89 ms each
    assert ex.window_slots(100.0, 1024) == 64  # 4,186-byte frames, 0.33 ms each: 65.7
    assert ex.window_slots(10.0, 64) == ex.MAX_SLOTS  # short frames: capped
    assert ex.window_slots(1.0, 1024) == ex.MIN_SLOTS  # slow links: at least 16
    assert ex.window_slots(None, 256) == ex.MAX_SLOTS  # unshaped
    pts = ex.scaling_points(ex.Options())
    assert {(p.shape.bw, p.slots) for p in pts} == {(10.0, 25), (100.0, 64)}
    assert {p.slots for p in ex.scaling_points(ex.Options(slots=8))} == {8}  # --slots


def test_sparsity_points_interleave_the_paths_of_a_density() -> None:
    (pt,) = ex.sparsity_points(ex.Options(density=(0.01, 1.0)))
    assert pt.repeat == ex.SPARSITY_REPEAT  # the default; --repeat replaces it
    assert ex.sparsity_points(ex.Options(density=(0.01,), repeat=2))[0].repeat == 2
    # one group per density: sparse, dense and auto of that density, consecutive
    assert [(it.group, it.mode, it.density) for it in pt.items] == [
        (0, "sparse", 0.01), (0, "dense", 0.01), (0, "auto", 0.01),
        (1, "sparse", 1.0), (1, "dense", 1.0), (1, "auto", 1.0)]  # fmt: skip
    assert {it.group for it in pt.gloo_items or ()} == {None}
    # fast calls (below 10 %) get more timed calls than slow ones; --repeat sets them all
    assert [it.repeat for it in pt.items] == [ex.SPARSITY_REPEAT_LOW] * 3 + [ex.SPARSITY_REPEAT] * 3
    assert [it.repeat for it in pt.gloo_items or () if it.mode == "agsparse"] == [
        ex.SPARSITY_REPEAT_LOW, ex.SPARSITY_REPEAT]  # fmt: skip
    (two,) = ex.sparsity_points(ex.Options(density=(0.01, 1.0), repeat=2))
    assert {it.repeat for it in two.items} == {2}


def test_an_items_own_repeat_sizes_its_plan_and_rows(tmp_path: Path) -> None:
    from p4reduce.testbed.mininet.runner import Item, Point, plan_for
    from p4reduce.testbed.mininet.stack import LinkShape

    pt = Point("x", 2, LinkShape(10.0), (Item(100, repeat=5), Item(100)), repeat=3)
    assert [e["repeat"] for e in plan_for(pt, pt.items, tmp_path, "t")] == [5, 3]


def test_figure_titles_wrap_at_conditions() -> None:
    from p4reduce.testbed.mininet.report import wrap_title

    title = ("scaling: all-reduce time against workers\nN workers, embedded (native) switch, "
             "links 10, 100 Mbit/s, K = 256, 1024, MTU 1500, 9000")  # fmt: skip
    lines = wrap_title(title, 72).split("\n")
    assert lines == ["scaling: all-reduce time against workers",
                     "N workers, embedded (native) switch, links 10, 100 Mbit/s, K = 256, 1024,",
                     "MTU 1500, 9000"]  # fmt: skip
    assert wrap_title("short\n\nx") == "short\n\nx"
    long = wrap_title("a" * 30 + " " + "b" * 30, 40).split("\n")  # no ", ": at spaces
    assert long == ["a" * 30, "b" * 30]


def test_supported_ks_reads_the_programs_guard() -> None:
    ks = supported_ks()
    assert {64, 256} <= set(ks) and set(ks) <= {64, 256, 1024}


@pytest.mark.parametrize(("argv", "word"), [
    (["--k", "512"], "K 512: one of 64, 256, 1024"),
    (["--engine", "fast"], "argument --engine"),
    (["--bw", "10,x"], "bandwidth 'x' is not a number"),
])  # fmt: skip
def test_bad_experiment_options_are_one_line(argv: list[str], word: str) -> None:
    r = run_testbed(*argv)
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and word in r.stderr, r.stderr


# ---------------------------------------------------------------------- with Mininet
def run_rows(*args: str, timeout: float) -> list[dict]:
    """The JSON rows of ``p4reduce testbed *args``, which must succeed."""
    r = run_testbed(*args, timeout=timeout)
    assert r.returncode == 0, r.stderr
    return [json.loads(line) for line in r.stdout.splitlines() if line.startswith("{")]


@needs_mininet
@pytest.mark.timeout(300)
def test_small_scaling_is_right_and_leaves_nothing(tmp_path: Path) -> None:
    rows = run_rows("-e", "scaling", "-n", "2,3", "--bw", "100", "--k", "256", "-m", "5000",
                    "--repeat", "2", "--json", "--out", str(tmp_path), timeout=280)  # fmt: skip
    assert [(x["backend"], x["workers"]) for x in rows] == [
        ("p4reduce", 2), ("gloo", 2), ("p4reduce", 3), ("gloo", 3)]  # fmt: skip
    assert all(x["ok"] and x["k"] == 256 and x["mtu"] == 1500 and x["link_ms"] for x in rows)
    # two calls per point, p4reduce's in two interleaved rounds (rounds.py)
    assert all(x["calls"] == 2 for x in rows)
    # where the CPU went (testbed/cpu.py): the workers', the switch's, the machine's
    for x in rows:
        if x["backend"] == "p4reduce":
            assert x["cpu_workers_ms"] > 0 and x["cpu_switch_ms"] > 0, x
            assert x["cpu_capacity_ms"] > 0 and x["link_tx_fps"] > 0, x
    assert (tmp_path / "scaling.png").stat().st_size > 0
    assert leftovers() == []


@needs_mininet
@pytest.mark.timeout(300)
def test_small_sparsity_runs_every_path_and_leaves_nothing(tmp_path: Path) -> None:
    rows = run_rows("-e", "sparsity", "-n", "2", "--bw", "100", "-m", "40000", "--density",
                    "0.01,1", "--repeat", "1", "--json", "--out", str(tmp_path), timeout=280)  # fmt: skip
    got = {(x["backend"], x["mode"], x["density"]) for x in rows}
    for d in (0.01, 1.0):
        for path in (("p4reduce", "sparse"), ("p4reduce", "dense"), ("p4reduce", "auto"),
                     ("gloo", "agsparse"), ("gloo", "ring")):  # fmt: skip
            assert (*path, d) in got
    assert all(x["ok"] for x in rows)
    # auto took sparse at density 0.01 (157 blocks of 256, 2 non-zero per worker)
    auto = next(x for x in rows if x["mode"] == "auto" and x["density"] == 0.01)
    dense = next(x for x in rows if x["mode"] == "dense" and x["density"] == 0.01)
    assert auto["packets"] < dense["packets"] / 2
    assert leftovers() == []


@needs_mininet
@pytest.mark.timeout(300)
def test_two_tenants_share_the_switch_and_keep_their_results(tmp_path: Path) -> None:
    rows = run_rows("-e", "tenants", "-n", "2", "-m", "5000", "--repeat", "1", "--json",
                    "--out", str(tmp_path), timeout=280)  # fmt: skip
    assert sorted((x["job"], x["phase"]) for x in rows) == [
        (1, "shared"), (1, "solo"), (2, "shared"), (2, "solo")]  # fmt: skip
    assert all(x["ok"] and x["same_as_solo"] and x["of_solo"] > 0 for x in rows)
    assert leftovers() == []


@needs_mininet
@pytest.mark.timeout(420)
def test_small_training_is_within_the_bound_and_leaves_nothing(tmp_path: Path) -> None:
    # unshaped links and 2 steps (1 timed): the six runs' time is their processes' start
    rows = run_rows("-e", "training", "-n", "2", "--steps", "2", "--bw", "0", "--json",
                    "--out", str(tmp_path), timeout=400)  # fmt: skip
    assert [(x["model"], x["backend"], x["mode"]) for x in rows] == [
        (m, b, mode) for m in ("mlp", "embedding")
        for b, mode in (("gloo", "ring"), ("p4reduce", "dense"), ("p4reduce", "auto"))]  # fmt: skip
    assert all(x["ok"] for x in rows)
    assert (tmp_path / "training.png").stat().st_size > 0
    assert leftovers() == []


@needs_mininet
@pytest.mark.timeout(240)
def test_sigterm_during_sparsity_stops_everything(tmp_path: Path) -> None:
    p = subprocess.Popen([P4REDUCE, "testbed", "-e", "sparsity", "-n", "2", "-m", "400000",
                          "--out", str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 90
    while not any("p4reduce.testbed.mininet.jobs_worker" in c for c in _cmdlines().values()):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1]
        time.sleep(0.1)
    time.sleep(1.0)
    os.kill(p.pid, signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143, err
    assert leftovers() == []
