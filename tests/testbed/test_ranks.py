"""``testbed/ranks.py``: the torchrun-like launcher the demo and bench/torch_ddp.py use."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from p4reduce.testbed.ranks import Ranks, RanksError

ECHO = (
    "import os, sys, time\n"
    "r = int(os.environ['RANK'])\n"
    "print(os.environ['WORLD_SIZE'], os.environ['MASTER_ADDR'], os.environ.get('EXTRA'), flush=True)\n"
    "time.sleep(0.2)\n"
    "print('second', r, flush=True)\n"
)


def gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_rank_zero_lines_and_environment(tmp_path: Path) -> None:
    with Ranks(tmp_path) as ranks:
        ranks.start([sys.executable, "-c", ECHO], 3, rank_env=[{"EXTRA": str(r)} for r in range(3)])
        lines = list(ranks.follow(timeout=30))
    assert lines == ["3 127.0.0.1 0", "second 0"]
    assert (tmp_path / "rank2.out").read_text().splitlines() == ["3 127.0.0.1 2", "second 2"]


def test_a_failing_rank_stops_the_others(tmp_path: Path) -> None:
    script = (
        "import os, sys, time\n"
        "if os.environ['RANK'] == '1':\n"
        "    print('prog: rank 1: error: boom', file=sys.stderr); sys.exit(1)\n"
        "time.sleep(60)\n"
    )
    t0 = time.monotonic()
    with Ranks(tmp_path) as ranks:
        ranks.start([sys.executable, "-c", script], 3)
        pids = ranks.pids()
        with pytest.raises(RanksError, match="rank 1 failed: prog: rank 1: error: boom"):
            ranks.wait(timeout=30)
    assert time.monotonic() - t0 < 15
    assert all(gone(p) for p in pids)


def test_timeout_and_check(tmp_path: Path) -> None:
    sleep = [sys.executable, "-c", "import time; time.sleep(60)"]
    with Ranks(tmp_path / "a") as ranks:
        ranks.start(sleep, 2)
        pids = ranks.pids()
        with pytest.raises(RanksError, match="timed out after 0.5 s"):
            ranks.wait(timeout=0.5)
    assert all(gone(p) for p in pids)
    with Ranks(tmp_path / "b") as ranks:
        ranks.start(sleep, 2)
        pids = ranks.pids()
        with pytest.raises(RanksError, match="switch died"):
            ranks.wait(timeout=30, check=lambda: "switch died")
    assert all(gone(p) for p in pids)
    with Ranks(tmp_path / "c") as ranks:  # leaving the block stops them too
        ranks.start(sleep, 2)
        pids = ranks.pids()
    assert all(gone(p) for p in pids)
