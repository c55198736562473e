"""torch's own DDP compression hooks (fp16/bf16 compress hooks and wrapper, PowerSGD) on a
process group of backend "p4reduce", checked against the same hook on gloo."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from p4reduce.free_port import free_port

SCRIPT = Path(__file__).with_name("wrappers.py")


def run(hooks: list[str], n: int, tmp: Path, timeout: float) -> list[dict[str, Any]]:
    port = free_port("tcp")
    procs = []
    for r in range(n):
        env = os.environ | {
            "RANK": str(r), "WORLD_SIZE": str(n), "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port), "P4T_OUT": str(tmp / f"rank{r}.json"),
            "OMP_NUM_THREADS": "1",
        }  # fmt: skip
        with open(tmp / f"rank{r}.log", "wb") as log:
            procs.append(
                subprocess.Popen(
                    [sys.executable, str(SCRIPT), *hooks],
                    env=env,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    start_new_session=True,
                )  # fmt: skip
            )
    try:
        for p in procs:
            p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        logs = "\n".join((tmp / f"rank{r}.log").read_text()[-2000:] for r in range(n))
        raise AssertionError(f"{hooks} timed out after {timeout:g} s\n{logs}") from None
    finally:
        for p in procs:
            if p.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    logs = "\n".join((tmp / f"rank{r}.log").read_text()[-2000:] for r in range(n))
    assert all(p.returncode == 0 for p in procs), logs
    return [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(n)]


@pytest.mark.timeout(300)
def test_fp16_and_bf16_hooks_on_a_p4reduce_group(tmp_path: Path) -> None:
    res = run(["fp16", "bf16", "fp16-wrapper"], 2, tmp_path, timeout=240)
    print(f"[figure] {json.dumps(res[0])}")
    bound = {"fp16": 2e-3, "fp16-wrapper": 2e-3, "bf16": 2e-2}  # half precision, 6 steps
    for rank in res:
        # The hooks' half-precision all-reduces take the group's route for their dtype
        # (docs/torch.md: today gloo, so the result equals gloo's; a route through the
        # switch must stay within half precision of it).
        for name, tol in bound.items():
            assert rank[name]["max_diff"] <= tol, (name, rank)


@pytest.mark.timeout(300)
def test_topk_hook_on_a_p4reduce_group_and_on_gloo_with_its_own_job(tmp_path: Path) -> None:
    """At ratio 1 the top-k hook sends everything: DDP on the p4reduce group (its job)
    and on gloo (a job of the hook's own) agree within the switch's quantization."""
    res = run(["topk-full"], 2, tmp_path, timeout=240)
    for rank in res:
        assert rank["topk-full"]["switch_calls"] == 6, rank  # one bucket, one call per step
        assert rank["topk-full"]["max_diff"] < 1e-5, rank


@pytest.mark.timeout(300)
def test_nan_gradients_through_the_topk_hook_propagate_or_raise(tmp_path: Path) -> None:
    """A NaN on one rank: every rank's GradScaler skips that step (the non-finite blocks
    came back everywhere, as gloo gives them) and both go on; the strict mode fails
    backward() naming NonFiniteError, and the next step works."""
    res = run(["nan"], 2, tmp_path, timeout=240)
    for rank in res:
        steps = rank["nan"]["steps"]
        assert [s["grad_finite"] for s in steps] == [True, False, True], rank
        assert [s["stepped"] for s in steps] == [True, False, True], rank
        assert [s["scale"] for s in steps] == [1024.0, 512.0, 512.0], rank
        assert all(s["params_finite"] for s in steps), rank
        assert rank["nan"]["nonfinite_steps"] == 1, rank
        err = rank["nan"]["error"]
        assert err is not None and "NonFiniteError" in err, rank
        assert rank["nan"]["finite"], rank


@pytest.mark.timeout(300)
def test_powersgd_on_a_p4reduce_group(tmp_path: Path) -> None:
    res = run(["powersgd"], 2, tmp_path, timeout=240)
    for rank in res:
        # P and Q are float32 all-reduces: through the switch, within its quantization
        # error of gloo's (which the orthogonalisation and the few steps keep small).
        assert rank["powersgd"]["switch_calls"] > 0, rank
        assert rank["powersgd"]["max_diff"] < 1e-3, rank
