"""The p4reduce backend and the DDP hook with 2 and 3 processes on the loopback stack:
all-reduce against the exact sum and against gloo, the collectives that run on gloo,
functional collectives, a p4reduce subgroup, DDP with the backend and with the hook against
DDP on gloo, and every process stopped afterwards."""

from __future__ import annotations

from typing import Any

import pytest
from ranks_harness import run, wait_gone


@pytest.fixture(scope="module", params=[(2, "env"), (3, "tcp")], ids=["2-env", "3-tcp"])
def main(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    n, init = request.param
    return run("main", n, tmp_path_factory.mktemp(f"main{n}"), timeout=120, init=init)


def test_all_reduce_matches_the_exact_sum_and_gloo(main: list[dict[str, Any]]) -> None:
    for r in main:
        assert r["backend"] == "p4reduce"
        assert r["driver_threads"] == (2 if len(main) == 3 else 1)
        # session calls per all_reduce: 10000 elements in chunks of at most 4096 take 3;
        # an empty tensor none
        calls = {"float32_sum": 1, "float32_avg": 1, "int32_sum": 1, "float32_chunked": 3}
        calls["int32_empty"] = 0
        for name, n_calls in calls.items():
            c = r[name]
            assert c["ok_exact"] and c["ok_gloo"], (r["rank"], name, c)
            assert c["switch_calls"] == n_calls, (name, c)
        assert r["int32_sum"]["err_exact"] == 0 and r["int32_sum"]["err_gloo"] == 0
        for half in ("float16", "bfloat16"):
            h = r[half]
            assert h["switch_calls"] == 1 and h["dtype"] == f"torch.{half}", h
            assert h["same_as_float32"] and h["ok_gloo"], h
        assert 0 < r["float32_sum"]["err_exact"] < 1e-5


def test_async_work_and_staging(main: list[dict[str, Any]]) -> None:
    for r in main:
        a = r["async"]
        assert a["future_value_is_list"] and a["completed"]
        assert a["result"] == a["expected"]
        assert a["non_contiguous"]
        assert r["int32_avg"]["type"] == "TypeError", r["int32_avg"]


def test_the_other_collectives_run_on_gloo(main: list[dict[str, Any]]) -> None:
    for r in main:
        c = r["collectives"]
        assert c.pop("switch_calls") == 0
        assert all(c.values()), c


def test_functional_collectives(main: list[dict[str, Any]]) -> None:
    for r in main:
        f = r["functional"]
        assert f["all_reduce"] and f["all_gather"] and f["compiled"], f
        # all_reduce through the switch, all_gather on gloo; compiled the same
        assert f["switch_calls"] == 1 and f["compiled_switch_calls"] == 1, f


def test_a_p4reduce_subgroup_gets_its_own_stack(main: list[dict[str, Any]]) -> None:
    n = len(main)
    members = [r for r in main if "subgroup" in r]
    assert [r["rank"] for r in members] == [n - 2, n - 1]
    for r in members:
        assert r["subgroup"]["sum"] == r["subgroup"]["expected"]


def test_ddp_and_the_hook_match_gloo_within_the_bound(main: list[dict[str, Any]]) -> None:
    for r in main:
        d = r["ddp"]
        for s in d["steps"]:
            assert s["backend_ok"] and s["hook_ok"], s
            assert s["grad_max"] > 0
        assert d["params_backend_ok"] and d["params_hook_ok"], d
        # 4 steps, buckets of 256 floats in hook chunks of 256: several calls per step
        assert d["hook_stats_calls"] >= 4 and d["hook_step_calls"] == d["hook_stats_calls"]
        assert d["backend_stats"]["calls"] > 0 and d["backend_stats"]["retransmissions"] >= 0


def test_every_stack_process_is_stopped(main: list[dict[str, Any]]) -> None:
    pids = [p for r in main for p in r["pids"]]
    # the default group's stack, the subgroup's and the hook state's: switch and service each
    assert len(pids) == 6, pids
    assert wait_gone(pids, 10) == []


def test_setup_is_quick(main: list[dict[str, Any]]) -> None:
    assert max(r["init_seconds"] for r in main) < 30
