"""The torch integration's parts in one process, without a switch: options, staging, the
completion of a multi-call collective and its Work, registration and the hook's signature."""

from __future__ import annotations

import concurrent.futures
import dataclasses
import datetime
import inspect
import threading
import time

import pytest
import torch
import torch.distributed as dist
from p4reduce.host.torch import (
    BACKEND,
    HookState,
    P4ReduceError,
    P4ReduceOptions,
    allreduce_hook,
    register,
    stats,
)
from p4reduce.host.torch.completion import Completion, P4ReduceWork, failed
from p4reduce.host.torch.options import group_offset
from p4reduce.host.torch.staging import Staged, switchable


def test_the_backend_is_registered_on_import() -> None:
    assert BACKEND == "p4reduce" and dist.Backend.P4REDUCE == "p4reduce"
    assert dist.Backend.backend_capability["p4reduce"] == ["cpu", "cuda"]
    register()  # idempotent
    assert dist.Backend.backend_list.count("p4reduce") == 1


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"mode": "fast"}, "mode 'fast'"),
        ({"program": "dense", "mode": "sparse"}, "needs the sparse program"),
        ({"job_id": 0}, "job_id 0"),
        ({"udp_port": 70000}, "udp_port"),
        ({"switch_port": 511}, "switch_port"),
        ({"slots": 0}, "slots 0"),
        ({"timeout": 0}, "timeout"),
        ({"chunk_elements": 0}, "chunk_elements"),
        ({"k": 32}, "k 32"),
        ({"nonfinite": "ignore"}, "nonfinite .ignore."),
        ({"threads": 0}, "threads 0"),
        ({"threads": 65}, "threads 65"),
    ],
)
def test_options_are_checked(kw: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        P4ReduceOptions(**kw)


def test_job_ids_and_subgroups() -> None:
    o = P4ReduceOptions(job_id=100, udp_port=5001)
    assert o.job_id_for(0) == 100 and o.job_id_for(3) == 103
    assert P4ReduceOptions().job_id_for(0) == 1
    with pytest.raises(ValueError, match="beyond 65535"):
        P4ReduceOptions(job_id=65535).job_id_for(1)
    assert o.for_subgroup() == dataclasses.replace(o, udp_port=0)
    assert group_offset("0") == 0 and group_offset("7") == 7
    hashed = group_offset("a1b2c3")
    assert hashed == group_offset("a1b2c3") and 1024 <= hashed < 1024 + 16384
    assert P4ReduceOptions(mode="auto").loopback_program == "sparse"
    assert P4ReduceOptions().loopback_program == "dense"


def test_staging_shares_contiguous_cpu_tensors_and_copies_the_rest() -> None:
    t = torch.arange(10, dtype=torch.float32)
    s = Staged.of(t)
    assert not s.copied and s.flat().ctypes.data == t.data_ptr()
    s.flat()[:] = 7
    assert t.tolist() == [7.0] * 10

    nc = torch.arange(12, dtype=torch.int32).reshape(3, 4).t()
    s = Staged.of(nc)
    assert s.copied and s.host.is_contiguous()
    assert [c.size for c in s.chunks(5)] == [5, 5, 2]
    for c in s.chunks(5):
        c *= 2
    s.finish()
    assert nc.tolist() == (torch.arange(12, dtype=torch.int32).reshape(3, 4).t() * 2).tolist()

    leaf = torch.ones(3, requires_grad=True)  # a parameter: written in place, no autograd
    s = Staged.of(leaf)
    s.flat()[:] = 2
    assert leaf.detach().tolist() == [2.0] * 3

    neg = torch.ones(4)._neg_view()
    s = Staged.of(neg)
    assert s.copied and s.flat().tolist() == [-1.0] * 4

    assert switchable(torch.zeros(2)) and switchable(torch.zeros(2, dtype=torch.int32))
    assert not switchable(torch.zeros(2, dtype=torch.float64))
    assert switchable(torch.zeros(2, dtype=torch.float64), float64=True)
    assert not switchable(torch.zeros(2).to_sparse())
    assert not switchable(torch.zeros(2, dtype=torch.int64))


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float64])
def test_half_precision_is_staged_as_float32_and_rounded_back(dtype: torch.dtype) -> None:
    assert switchable(torch.zeros(2, dtype=dtype), float64=True)
    t = torch.tensor([1.0, -3.5, 65504.0 if dtype == torch.float16 else 1e30], dtype=dtype)
    s = Staged.of(t)
    assert s.copied and s.host.dtype == torch.float32
    assert s.flat().tolist() == t.float().tolist()  # every half value is a float32
    s.flat()[:] = [1.0 + 2.0**-12, 2.0, 3.0]  # 1 + 2^-12 rounds to 1 in both halves
    s.finish()
    first = 1.0 + 2.0**-12 if dtype == torch.float64 else 1.0
    assert t.dtype == dtype and t.tolist() == [first, 2.0, 3.0]


def test_a_completion_resolves_after_its_last_call() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        gate = threading.Event()
        tensors = [torch.zeros(2)]
        finished: list[str] = []
        c = Completion(tensors, "test", finish=lambda: finished.append("finish"))
        c.add(pool.submit(gate.wait, 5))
        c.add(pool.submit(lambda: None))
        c.seal()
        work = P4ReduceWork(c, datetime.timedelta(seconds=10))
        assert not work.is_completed() and not c.future.done()
        gate.set()
        assert work.wait() is True
        assert work.is_success() and finished == ["finish"]
        assert c.future.wait() is tensors and work.get_future() is c.future


def test_an_error_fails_the_work_and_the_future_and_cancels_the_rest() -> None:
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        gate = threading.Event()
        ran: list[int] = []

        def boom() -> None:
            gate.wait(5)
            raise TimeoutError("switch gone")

        c = Completion([torch.zeros(1)], "test group", finish=lambda: ran.append(-1))
        c.add(pool.submit(boom))
        c.add(pool.submit(lambda: ran.append(1)))  # queued behind the failing call
        c.seal()
        gate.set()
        work = P4ReduceWork(c, datetime.timedelta(seconds=10))
        with pytest.raises(TimeoutError, match="switch gone"):
            work.wait()
        assert ran == []  # cancelled, and no copy-back of a failed result
        assert not work.is_success() and isinstance(work.exception(), TimeoutError)
        # what C++ consumers (DDP's reducer) see: a failed future, not a value
        with pytest.raises(RuntimeError, match="TimeoutError: switch gone"):
            c.future.wait()


def test_an_error_at_submission_and_a_bounded_wait() -> None:
    c = failed(TypeError("float64"), "test", torch.zeros(1))
    with pytest.raises(TypeError, match="float64"):
        P4ReduceWork(c, datetime.timedelta(seconds=1)).wait()
    never = Completion([], "test slow group")
    never.add(concurrent.futures.Future())  # never finishes
    never.seal()
    work = P4ReduceWork(never, datetime.timedelta(seconds=30))
    t0 = time.monotonic()
    with pytest.raises(TimeoutError, match="test slow group: the collective did not finish"):
        work.wait(datetime.timedelta(milliseconds=200))
    assert time.monotonic() - t0 < 5


def test_the_hook_signature_is_what_ddp_accepts() -> None:
    sig = inspect.signature(allreduce_hook)
    assert sig.parameters["bucket"].annotation is dist.GradBucket
    assert sig.return_annotation == torch.futures.Future[torch.Tensor]


def test_without_a_process_group() -> None:
    assert not dist.is_initialized()
    with pytest.raises(P4ReduceError, match="init_process_group first"):
        HookState.create()
    with pytest.raises(TypeError, match="neither a p4reduce process group"):
        stats(object())


class _Store:
    """The two calls of Rendezvous that _job_secret uses, over a dict."""

    def __init__(self, rank: int, shared: dict) -> None:
        self.rank, self.shared = rank, shared

    def set(self, key: str, value: object) -> None:
        self.shared[key] = value

    def get(self, key: str, purpose: str, timeout: float | None = None) -> object:
        return self.shared[key]


def test_rank_0_hands_the_job_secret_to_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/torch.md: rank 0 takes its own secret (option, environment, else a fresh one)
    and publishes it; the others use their own when given, else rank 0's."""
    from p4reduce.host.torch.endpoint import _job_secret
    from p4reduce.host.torch.options import P4ReduceOptions

    monkeypatch.delenv("P4REDUCE_JOB_SECRET", raising=False)
    shared: dict = {}
    drawn = _job_secret(_Store(0, shared), P4ReduceOptions())  # type: ignore[arg-type]
    assert len(drawn) >= 16 and shared["job_secret"] == drawn
    assert _job_secret(_Store(1, shared), P4ReduceOptions()) == drawn  # type: ignore[arg-type]
    shared.clear()
    given = P4ReduceOptions(secret="an-operator-given-secret")
    assert _job_secret(_Store(0, shared), given) == "an-operator-given-secret"  # type: ignore[arg-type]
    assert "an-operator-given-secret" not in repr(given)
    monkeypatch.setenv("P4REDUCE_JOB_SECRET", "a-secret-from-the-environment")
    assert _job_secret(_Store(1, {}), P4ReduceOptions()) == "a-secret-from-the-environment"  # type: ignore[arg-type]
