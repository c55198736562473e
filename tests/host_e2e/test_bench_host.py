"""Smoke test of bench/allreduce.py's host figure: one worker against the C reflector with
each engine, next to the C client (the kernel floor) of the same run. Small sizes; the
figures are printed by the bench, never asserted here (only that each row is there and
positive)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler for the C reflector")
def test_bench_host_figure(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "allreduce.py"), "--quick", "--only", "host",
         "--host-elements", "20000", "--echo-packets", "200", "--out", str(tmp_path), "--json"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)["host"]
    plain = [r["engine"] for r in rows if r["offload"] == "-"]
    gso = [r["engine"] for r in rows if r["offload"] == "gso"]  # where the kernel has it
    assert plain == ["native", "native baseline", "python", "C client"]
    assert gso in ([], ["native", "native baseline", "C client"])
    assert all(r["k"] == 64 and r["elements"] == 20000 for r in rows)
    assert all(r["pps"] > 0 and r["ratio_to_floor"] > 0 and r["cpu_ratio_to_floor"] > 0
               for r in rows)  # fmt: skip
    for floor in (r for r in rows if r["engine"] == "C client"):  # each set's own floor
        assert floor["ratio_to_floor"] == 1 and floor["cpu_ratio_to_floor"] == 1
    # every row moved at least ceil(M/K) blocks and one priming packet per slot, each sent
    # and received (more with retransmissions, which a loaded machine can cause)
    assert all(r["seconds"] * r["pps"] > 2 * (-(-20000 // 64) + 64) - 1 for r in rows)
