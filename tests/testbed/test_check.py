"""``p4reduce check`` end to end (the command as a subprocess: switch, controller and worker
processes on loopback) and the local stack's teardown."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from p4reduce.testbed.local import LocalStack, StackError

from p4reduce.free_port import free_port
from p4reduce.stack import agg_ports

BIN = Path(sys.executable).parent
FIELDS = {"ok", "max_abs_error", "bound", "seconds", "goodput_gbps", "packets", "retransmissions"}


def check(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "p4reduce"), "check", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def report(done: subprocess.CompletedProcess[str]) -> dict:
    lines = [ln for ln in done.stdout.splitlines() if ln.strip()]
    assert len(lines) == 1, done.stdout
    r = json.loads(lines[0])
    assert FIELDS <= set(r), r
    return r


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone too (its parent has not reaped it yet)
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_dense_float32_two_workers() -> None:
    done = check("--workers", "2", "--elements", "1000", "--json")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # --json: nothing but the JSON line
    r = report(done)
    assert r["ok"] is True and r["identical"] is True
    assert 0 <= r["max_abs_error"] <= r["bound"] and r["bound"] > 0
    # 16 blocks, 16 slots primed: 32 packets per worker, no loss
    assert (r["packets"], r["retransmissions"]) == (64, 0)
    assert r["seconds"] > 0 and r["goodput_gbps"] > 0


def test_k1024_end_to_end_sparse() -> None:
    """K = 1024 (4,162-byte frames through the switch): 5 blocks of 1024 for 5000 elements,
    on the sparse program. (Dense at K = 1024 is run end to end by tests/testbed/test_demo.py
    ``test_demo_at_k_1024``, float32, and test_mininet_testbed.py ``test_k1024_over_jumbo_links``,
    int32 with its exact packet count: each K = 1024 stack compiles its program afresh.)"""
    done = check(
        "--workers", "2", "--elements", "5000", "--k", "1024", "--mode", "sparse", "--json",
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    r = report(done)
    assert r["ok"] is True and r["identical"] is True and r["k"] == 1024
    # density 1: 5 slots primed, then the 5 blocks: 10 packets per worker, no loss
    assert r["packets"] - r["retransmissions"] == 20


def test_sparse_int32_three_workers_is_exact() -> None:
    done = check(
        "--workers", "3", "--mode", "sparse", "--density", "0.1", "--dtype", "int32",
        "--elements", "20000", "--seed", "7",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    r = report(done)
    assert r["ok"] is True and r["max_abs_error"] == 0 and r["bound"] == 0
    # 313 blocks, 31 non-zero per rank: far fewer than the dense 313 packets per worker
    assert r["packets"] < 3 * 200
    assert "OK" in done.stderr and "exact" in done.stderr  # the human summary


def test_loss_is_recovered_by_retransmission() -> None:
    done = check("--workers", "2", "--elements", "3000", "--loss", "0.05", "--seed", "3", "--json")
    assert done.returncode == 0, done.stderr
    r = report(done)
    assert r["ok"] is True and r["loss"] == 0.05
    assert r["retransmissions"] > 0


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--workers", "0"], "worker count 0 is outside 1..32"),
        (["--dtype", "float64"], "invalid choice: 'float64'"),
        (["--density", "1.5"], "density 1.5 is outside"),
        (["--elements", "ten"], "element count 'ten' is not an integer"),
        (["--timeout", "-1"], "positive"),
    ],
)
def test_bad_command_lines_are_one_line_exit_2(args: list[str], needle: str) -> None:
    done = check(*args, timeout=30)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("p4reduce check: error: ")
    assert needle in done.stderr


def test_the_entry_point_lists_only_what_exists() -> None:
    done = subprocess.run([str(BIN / "p4reduce"), "--help"], capture_output=True, text=True)
    assert done.returncode == 0
    assert "check" in done.stdout and "bench" in done.stdout
    assert "demo" in done.stdout
    assert "testbed" in done.stdout
    bad = subprocess.run([str(BIN / "p4reduce"), "nope"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


def test_stack_teardown_leaves_no_process() -> None:
    with LocalStack(2, "dense") as stack:
        pids = stack.pids()
        assert len(pids) == 2 and all(not gone(p) for p in pids)  # switch, serve
        procs = stack.spawn_workers(1, 2, [{"elements": 100, "dtype": "float32"}])
        results = stack.wait_workers(procs, timeout=60)
        assert [len(r.lines) for r in results] == [1, 1]
        pids = stack.pids()
        workdir = stack.dir
    assert len(pids) == 4
    assert all(gone(p) for p in pids)
    assert workdir is not None and not workdir.exists()


def test_the_native_engine_is_compiled_before_the_switch_start_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a cache miss LocalStack compiles the switch's native engine (with a progress
    line) before it starts the switch, whose start deadline then holds no compile; the
    next start finds it cached, and its switch loads it with no compiler at hand."""
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))  # a miss
    # a pool of one port of its own: the second start takes the same port (the same C),
    # whatever stacks other runs on this machine hold
    monkeypatch.setattr(agg_ports, "AGG_PORT_POOL", [free_port("udp")])
    monkeypatch.setattr(agg_ports, "AGG_PORT_LOCKS", tmp_path)
    lines: list[str] = []
    with LocalStack(1, "dense", log=lines.append) as stack:
        assert stack.switch is not None
        err = stack.switch.stderr.read_text()
        assert "native" in stack.timings
    compiling = [i for i, ln in enumerate(lines) if ln.startswith("compiling the native")]
    assert [lines[i] for i in compiling] == [
        "compiling the native engine for dense.p4, K = 64 (first start only)..."
    ], lines
    ready = [i for i, ln in enumerate(lines) if ln.startswith("switch ready")]
    assert compiling[0] < ready[0], lines
    assert "native engine not used" not in err, err
    monkeypatch.setenv("P4REDUCE_CC", "/nonexistent/cc")
    lines.clear()
    with LocalStack(1, "dense", log=lines.append) as stack:
        assert stack.switch is not None
        err = stack.switch.stderr.read_text()
    assert not any("native" in ln for ln in lines), lines  # cached: nothing to say
    assert "native engine not used" not in err, err


def test_a_failing_worker_stops_the_run_and_everything_is_stopped() -> None:
    with pytest.raises(StackError, match=r"worker \d failed: .*float64"):
        with LocalStack(2, "dense") as stack:
            # joins, then fails generating its data: the other one is stopped too
            procs = stack.spawn_workers(1, 2, [{"elements": 100, "dtype": "float64"}])
            pids = stack.pids()
            stack.wait_workers(procs, timeout=60)
    assert all(gone(p) for p in pids)


def test_an_exception_inside_the_stack_stops_it() -> None:
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="boom"):
        with LocalStack(1, "sparse") as stack:
            pids = stack.pids()
            raise RuntimeError("boom")
    assert all(gone(p) for p in pids)
    assert time.monotonic() - t0 < 30


def children(pid: int) -> list[int]:
    """Every descendant of ``pid`` (from /proc)."""
    parents: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                stat = (d / "stat").read_text()
            except OSError:
                continue
            parents[int(d.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out += kids
        todo += kids
    return out


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_interrupting_check_stops_every_process(how: str) -> None:
    import signal

    proc = subprocess.Popen(
        # 20 % loss: retransmission timeouts keep the call running for many seconds however
        # fast the machine (without loss a 3M-element call now ends within a second)
        [str(BIN / "p4reduce"), "check", "--workers", "2", "--elements", "3000000",
         "--loss", "0.2"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stderr is not None
        for line in proc.stderr:  # wait until the workers run
            if "workers started" in line:
                break
        deadline = time.monotonic() + 10  # the workers' processes appear as they start
        while len(kids := children(proc.pid)) < 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(kids) >= 4  # switch, serve, two workers
        if how == "ctrl-c":  # the terminal signals the whole foreground group
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        rest = proc.stderr.read()
        rc = proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert rc == (130 if how == "ctrl-c" else 143)
    assert "Traceback" not in rest
    assert rest.strip().splitlines()[-1] in (
        "p4reduce: error: interrupted",
        "p4reduce: error: terminated",
    )
    deadline = time.monotonic() + 10
    while not all(gone(k) for k in kids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert all(gone(k) for k in kids)


def test_bench_allreduce_smoke(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "bench" / "allreduce.py"), "--quick", "--only", "sizes",
         "--out", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout)
    by_engine: dict[str, list[int]] = {}
    for r in figures["sizes"]:  # one row per size for each switch engine the bench found
        by_engine.setdefault(r["engine"], []).append(r["elements"])
    assert by_engine and all(sizes == [1000, 10000] for sizes in by_engine.values()), by_engine
    assert all(r["goodput_gbps"] > 0 for r in figures["sizes"])
    assert {p.name for p in tmp_path.iterdir()} >= {"sizes.csv", "sizes.png", "baseline.csv"}
    listed = subprocess.run(
        [str(BIN / "p4reduce"), "bench", "--list"], capture_output=True, text=True
    )
    assert listed.returncode == 0 and "allreduce" in listed.stdout.split()


def test_bench_quantize_figure(tmp_path: Path) -> None:
    """The quantization figure: every row for both n, ratios to the copy of the same run
    (the bench itself raises if dequantizing in place differs from into a second array)."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "bench" / "allreduce.py"), "--quick", "--only", "quantize",
         "--quant-elements", "4096", "--out", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["quantize"]
    whats = [r["what"] for r in rows if r["n"] == 4]
    assert whats == [r["what"] for r in rows if r["n"] == 3]
    assert {"np.copyto", "quantize", "dequantize in place", "quantize+dequantize in place"} <= set(
        whats
    )
    assert all(r["ratio_to_copyto"] > 0 and r["elements"] == 4096 for r in rows)
    assert all(r["ratio_to_copyto"] == 1 for r in rows if r["what"] == "np.copyto")
    assert {p.name for p in tmp_path.iterdir()} >= {"quantize.csv", "quantize.png"}
