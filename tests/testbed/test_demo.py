"""``p4reduce demo`` end to end and ``examples/train_ddp.py`` with each backend, all as
subprocesses in their own session, so that every process they start (ranks, switch,
registration service) can be found afterwards and must be gone."""

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

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "train_ddp.py"
BIN = Path(sys.executable).parent


def session_members(sid: int) -> list[int]:
    """Live (non-zombie) processes of session ``sid``."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "
        if int(fields[3]) == sid and fields[0] != "Z":
            pids.append(int(d.name))
    return pids


def run(args: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run in a new session; afterwards, nothing of that session may be left."""
    p = subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    deadline = time.monotonic() + 5
    while session_members(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(p.pid) == [], f"processes left behind: {session_members(p.pid)}"
    return subprocess.CompletedProcess(args, p.returncode, out, err)


def json_lines(text: str) -> list[dict]:
    return [json.loads(ln) for ln in text.splitlines() if ln.startswith("{")]


def example(*args: str, workers: int = 2) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, str(EXAMPLE), "--workers", str(workers), "--json", *args])


def test_example_with_gloo_prints_steps_and_saves(tmp_path: Path) -> None:
    path = str(tmp_path / "p.npy")
    done = example("--backend", "gloo", "--steps", "3", "--save-params", path, workers=1)
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert lines[0]["start"] and lines[0]["workers"] == 1 and lines[0]["params"] == 6922
    assert [ln["step"] for ln in lines[1:-1]] == [0, 1, 2]
    summary = lines[-1]
    assert summary["done"] and summary["backend"] == "gloo" and len(summary["losses"]) == 3
    assert summary["losses"][-1] < summary["losses"][0]
    assert np.load(tmp_path / "p.npy").shape == (6922,)


@pytest.mark.parametrize("backend", ["p4reduce", "hook"])
def test_example_through_the_switch(backend: str, tmp_path: Path) -> None:
    """No --url: the backend (or the hook state) starts its own loopback switch. The hook
    runs under the timing probe (as bench/torch_ddp.py runs it)."""
    extra = ["--probe"] if backend == "hook" else []
    path = str(tmp_path / "p.npy")
    done = example("--backend", backend, "--steps", "2", "--save-params", path, *extra)
    assert done.returncode == 0, done.stderr
    summary = json_lines(done.stdout)[-1]
    assert summary["backend"] == backend and len(summary["losses"]) == 2
    if backend == "hook":
        assert len(summary["input_max"]) == 2 and summary["median_allreduce_seconds"] > 0
    per_step = summary["stats_per_step"]
    # 6922 parameters = 109 blocks of 64 (+ priming): at least that many packets per step
    assert per_step["packets_sent"] >= 109 and per_step["retransmissions"] == 0
    assert np.load(tmp_path / "p.npy").shape == (6922,)


def test_example_usage_errors_are_one_line() -> None:
    for args in (["--backend", "nccl"], ["--backend", "gloo", "--url", "http://x"], ["--lr", "0"]):
        done = run([sys.executable, str(EXAMPLE), *args])
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith("train_ddp.py: error: ")


def test_demo_json_verdict() -> None:
    done = run([str(BIN / "p4reduce"), "demo", "--workers", "2", "--steps", "4", "--json"])
    assert done.returncode == 0, done.stderr
    lines = json_lines(done.stdout)
    assert len(lines) == 1 and done.stderr == ""
    r = lines[0]
    assert r["ok"] is True and r["loss_fell"] is True
    assert 0 <= r["max_abs_param_diff"] <= r["tolerance"]
    assert r["workers"] == 2 and r["steps"] == 4 and len(r["losses"]) == 4
    assert r["aggregation_per_step"]["packets_sent"] >= 109
    assert r["switch"]["aggregated"] > 0


@pytest.mark.timeout(420)
def test_demo_at_k_1024() -> None:
    """The same demo with 4,162-byte frames: the 6,922 parameters travel in 7 blocks."""
    done = run([str(BIN / "p4reduce"), "demo", "--workers", "2", "--steps", "3", "--k", "1024",
                "--json"], timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    r = json_lines(done.stdout)[0]
    assert r["ok"] is True and r["loss_fell"] is True
    assert 7 <= r["aggregation_per_step"]["packets_sent"] < 109


def test_demo_usage_error() -> None:
    done = run([str(BIN / "p4reduce"), "demo", "--workers", "0"])
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr


def test_demo_ctrl_c_stops_everything() -> None:
    p = subprocess.Popen(
        [str(BIN / "p4reduce"), "demo", "--workers", "1", "--steps", "100"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    try:
        assert p.stdout is not None
        for line in p.stdout:  # switch and service up, the ranks starting
            if "workers start" in line:
                break
        time.sleep(1.0)
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole group
        _, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "p4reduce: error: interrupted"
    deadline = time.monotonic() + 5
    while session_members(p.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session_members(p.pid) == []
