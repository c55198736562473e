"""DDP training on a p4reduce group while its switch is killed (-9) and started again with
the same arguments (docs/failures.md): no collective fails, every int32 sum is exact, and
the loss curve is the one of the same training undisturbed, bit for bit (a call run again
after the restart contributes the same input, so it gets the same sums). The ranks train
twice (tests/torch/ranks_restart.py); the switch dies during the second run. The variant
with an operator re-pushing the pipeline runs with P4REDUCE_FAILURE_TESTS=all (the numpy
test of tests/process/test_switch_restart.py covers it by default)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from p4reduce.testbed.local import LocalStack
from p4reduce.testbed.restart import restart_switch
from ranks_harness import start

from p4reduce.free_port import free_port

SCRIPT = Path(__file__).with_name("ranks_restart.py")
STEPS = 16
KILL_AT = STEPS + 5  # the sixth step of the second run
ALL = os.environ.get("P4REDUCE_FAILURE_TESTS") == "all"


@pytest.mark.parametrize(
    "push",
    [
        False,
        pytest.param(True, marks=pytest.mark.skipif(not ALL, reason="P4REDUCE_FAILURE_TESTS=all")),
    ],
    ids=["alone", "operator-push"],
)
def test_ddp_survives_a_switch_restart(tmp_path: Path, push: bool) -> None:
    ports = [free_port("udp"), free_port("udp")]
    with LocalStack(
        ports=2,
        peers=[("127.0.0.1", p) for p in ports],
        initial_timeout_ms=50,
        max_timeout_ms=500,
        retries=12,
        join_timeout=60,
    ) as stack:
        ranks = start(
            "train", 2, tmp_path, script=SCRIPT, P4T_URL=stack.url,
            P4T_PORTS=",".join(map(str, ports)), P4T_STEPS=str(STEPS),
        )  # fmt: skip
        new = None
        try:
            deadline = time.monotonic() + 120
            while (ranks.result(0) or {}).get("step", 0) < KILL_AT:
                alive = all(p.poll() is None for p in ranks.procs)
                assert time.monotonic() < deadline and alive, ranks.logs()
                time.sleep(0.02)
            killed_at = ranks.result(0)["step"]
            new = restart_switch(stack, tmp_path / "switch2.log")
            if push:
                stack.ctl(
                    "push", str(stack.prefix), "--switch-ip", "10.0.0.254",
                    "--switch-mac", "02:00:00:00:00:fe", election_id=10,
                )  # fmt: skip
            results = ranks.wait(180)
        finally:
            ranks.kill()
            if new is not None:
                new.kill()
                new.wait(10)
    assert STEPS < killed_at < 2 * STEPS  # the switch died during the second run
    for r in range(2):
        res = results[r]
        assert res["failed"] == [] and res["wrong"] == [], res
        calm, disturbed = res["losses"]
        assert len(calm) == len(disturbed) == STEPS
        assert disturbed == calm  # bit for bit
