"""Which threads run collectives and which complete them (host/torch/delivery.py), with 2
processes on the loopback stack: torch's own DDP communication hooks on a "p4reduce" group
against the same hooks on gloo (batched_powerSGD_hook with a bug of torch 2.13 mended) (PowerSGD's callbacks issue collectives and wait for them:
it hung for ever when completions ran on the session's thread), collectives issued and
waited on from callbacks, chains of async work, another thread while backward runs, and a
session thread that never returns becoming an error within the group's timeout.

Each scenario is bounded by its own timeout (the harness kills every rank on expiry), so a
hang fails its tests, not the suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ranks_harness import run, wait_gone

SCRIPT = Path(__file__).with_name("ranks_hooks.py")
BOUND = 200  # seconds a scenario may take on a loaded 2-core machine (50-110 s seen)
HANG_TIMEOUT = 3.0  # ranks_hooks.HANG_TIMEOUT
STEPS = 4  # ranks_hooks.STEPS


@pytest.fixture(scope="module")
def hooks(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return run("hooks", 2, tmp_path_factory.mktemp("hooks"), timeout=BOUND, script=SCRIPT)


@pytest.fixture(scope="module")
def threads(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return run("threads", 2, tmp_path_factory.mktemp("threads"), timeout=BOUND, script=SCRIPT)


HOOKS = [
    "allreduce",
    "fp16_compress",
    "bf16_compress",
    "powerSGD",
    "batched_powerSGD",
    "fp16_wrapper_powerSGD",
    "bf16_wrapper_powerSGD",
    "noop",
    "p4reduce_allreduce_on_gloo",
]


@pytest.mark.timeout(BOUND + 30)
@pytest.mark.parametrize("name", HOOKS)
def test_every_ddp_hook_matches_gloo(hooks: list[dict[str, Any]], name: str) -> None:
    for r in hooks:
        h = r["hooks"][name]
        assert len(h["steps"]) == STEPS
        for s in h["steps"]:
            assert s["ok"] and s["grad_max"] > 0, (r["rank"], name, s)
        assert h["params_ok"], (r["rank"], name, h)


@pytest.mark.timeout(BOUND + 30)
def test_powersgd_goes_through_the_switch(hooks: list[dict[str, Any]]) -> None:
    for r in hooks:
        h = r["hooks"]
        # one bucket: one all-reduce per plain step; PowerSGD's compressed steps (from
        # step 2) reduce the uncompressed tensors, P and Q (batched: P and Q)
        assert h["allreduce"]["switch_calls"] == STEPS
        assert h["powerSGD"]["switch_calls"] == 2 + 3 * (STEPS - 2)
        assert h["batched_powerSGD"]["switch_calls"] == 2 + 2 * (STEPS - 2)
        assert h["p4reduce_allreduce_on_gloo"]["switch_calls"] >= STEPS


@pytest.mark.timeout(BOUND + 30)
@pytest.mark.parametrize(
    ("name", "error", "step"),
    [
        # hands _orthogonalize a 2-D matrix, which takes only batches
        ("batched_powerSGD", "AssertionError", 2),
        # index the 0-dim scale tensor that all_gather returns
        ("quantization_pertensor", "IndexError", 0),
        ("quantization_perchannel", "IndexError", 0),
    ],
)
def test_hooks_broken_in_torch_fail_alike_on_both(
    hooks: list[dict[str, Any]], name: str, error: str, step: int
) -> None:
    # these hooks of torch 2.13 fail on gloo too; the p4reduce group changes nothing of that.
    # The chain of errors (the message's first line) must be the same; the Python frames
    # torch appends after it are those of whichever thread ran the callback, which is a
    # matter of timing on either backend (inline when the future was already done)
    def essence(e: dict[str, Any]) -> tuple[Any, ...]:
        return e["type"], (e.get("message") or "").split("\n")[0], e.get("step")

    for r in hooks:
        a = r["hooks"][f"{name}_as_shipped"]
        assert essence(a["p4reduce"]) == essence(a["gloo"]), a
        assert error in a["gloo"]["type"] + a["gloo"]["message"], a
        assert a["gloo"]["step"] == step, a


@pytest.mark.timeout(BOUND + 30)
def test_collectives_issued_and_waited_on_in_a_callback(threads: list[dict[str, Any]]) -> None:
    for r in threads:
        c = r["callback"]
        assert c["values"] == c["expected"], c


@pytest.mark.timeout(BOUND + 30)
def test_async_chains_of_any_depth(threads: list[dict[str, Any]]) -> None:
    for r in threads:
        nested, flat = r["nested"], r["flat"]
        assert nested["values"] == nested["expected"], nested
        # every waiting callback holds a delivery thread; the next completion got another
        assert nested["threads_after"] >= len(nested["expected"]) - 1, nested
        assert flat["values"] == flat["expected"], flat


@pytest.mark.timeout(BOUND + 30)
def test_collectives_waited_on_from_another_thread_during_backward(
    threads: list[dict[str, Any]],
) -> None:
    for r in threads:
        t = r["thread"]
        assert t["joined"] and "error" not in t, t
        assert t["values"] == t["expected"] and t["grads_finite"], t


@pytest.mark.timeout(BOUND + 30)
def test_a_hang_becomes_an_error_naming_what_it_waited_for(
    threads: list[dict[str, Any]],
) -> None:
    for r in threads:
        h = r["hang"]
        w = h["wait"]
        assert w["type"] == "CollectiveTimeout", w
        assert f"did not finish within {HANG_TIMEOUT:g} s" in w["message"], w
        assert "queued behind the session's earlier calls" in w["waiting_for"], w
        # a future's callback and DDP's reducer (a C++ wait): a failed future naming it
        for case in ("future", "backward"):
            e = h[case]
            assert e["type"] == "RuntimeError", (case, e)
            assert "CollectiveTimeout" in e["message"], (case, e)
            assert "queued behind the session's earlier calls" in e["message"], (case, e)
        for e in h.values():
            assert e["seconds"] < HANG_TIMEOUT + 20, e  # the group's timeout, not for ever


@pytest.mark.timeout(BOUND + 30)
def test_every_stack_process_is_stopped(
    hooks: list[dict[str, Any]], threads: list[dict[str, Any]]
) -> None:
    pids = [p for r in hooks + threads for p in r["pids"]]
    # hooks: the group's stack and the hook state's; threads: the group's and the hang
    # test's subgroup's; a switch and a service each
    assert len(pids) == 8, pids
    assert wait_gone(pids, 30) == []
