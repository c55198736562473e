"""A worker that crashes under torchrun --max-restarts: torchrun restarts every worker, they
join the running job again (rejoin: docs/failures.md) and the training goes on with exact
sums. Heavier than the other torch tests (torchrun and two attempts of two workers): it runs
with P4REDUCE_FAILURE_TESTS=all; tests/controller/test_state.py covers re-forming itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.controller.credentials import JOB_SECRET_ENV, new_secret
from p4reduce.testbed.local import LocalStack

from p4reduce.free_port import free_port

WORKER = Path(__file__).with_name("elastic_worker.py")
TORCHRUN = Path(sys.executable).with_name("torchrun")


@pytest.mark.skipif(
    os.environ.get("P4REDUCE_FAILURE_TESTS") != "all", reason="P4REDUCE_FAILURE_TESTS=all"
)
def test_torchrun_restarts_a_crashed_worker_and_the_job_goes_on(tmp_path: Path) -> None:
    ports = [free_port("udp"), free_port("udp")]
    with LocalStack(ports=2, peers=[("127.0.0.1", p) for p in ports], join_timeout=60) as stack:
        env = os.environ | {
            "P4T_URL": stack.url,
            "P4T_PORTS": ",".join(map(str, ports)),
            "P4T_DIR": str(tmp_path),
            "P4T_DIE_AFTER": "3",
            JOB_SECRET_ENV: new_secret(),  # the same secret in every attempt
            "OMP_NUM_THREADS": "1",
        }
        done = subprocess.run(
            [str(TORCHRUN), "--nproc-per-node", "2", "--max-restarts", "1",
             "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port('tcp')}",
             str(WORKER)],
            env=env, capture_output=True, text=True, timeout=240,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    for rank in range(2):
        got = json.loads((tmp_path / f"rank{rank}-attempt1.json").read_text())
        assert got == {"steps": 8, "wrong": []}
    assert not (tmp_path / "rank1-attempt0.json").exists()  # it crashed
