"""One rank of a threading scenario: ``python tests/torch/ranks_hooks.py SCENARIO``.

The same environment as ranks.py (whose helpers it uses): torch's own DDP communication
hooks on a "p4reduce" group against the same hooks on gloo, and the threads collectives
are issued and waited on from (future callbacks, chains of async work, another thread
while backward runs, a session thread that hangs). The rank measures; the test asserts.
"""

from __future__ import annotations

import datetime
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist
from p4reduce.host.torch import HookState, P4ReduceOptions, allreduce_hook, delivery, stats
from ranks import RANK, N, error_text, init, result, save, stack_pids
from torch.distributed.algorithms.ddp_comm_hooks import debugging_hooks
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks as dh
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook as ps
from torch.distributed.algorithms.ddp_comm_hooks import quantization_hooks as qh
from torch.nn.parallel import DistributedDataParallel as DDP

LR = 0.1
STEPS = 4  # PowerSGD compresses from step 2 on (start_powerSGD_iter=2)
EPS = torch.finfo(torch.float32).eps
# How far a p4reduce copy's gradients may drift from the gloo copy's, relative to the
# largest gradient: the switch's quantization (at most n^2 * 2^(e-32) for elements of
# exponent e, ~1e-9 relative for 2 ranks) and the float32 rounding of the sums, which
# PowerSGD's matrix products, normalisations and error feedback carry over STEPS steps.
# Measured: at most 2e-8 (the same hooks on the same inputs are deterministic).
GRAD_RTOL = 1e-6

Hook = Callable[[Any, dist.GradBucket], torch.futures.Future[torch.Tensor]]


def _power(pg: dist.ProcessGroup | None) -> ps.PowerSGDState:
    return ps.PowerSGDState(
        process_group=pg, matrix_approximation_rank=1, start_powerSGD_iter=2, random_seed=0
    )


def _renamed(hook: Hook) -> Hook:
    """``hook`` under another name. DDP refuses hooks *named* bf16_compress_hook or
    bf16_compress_wrapper_hook unless torch was built with CUDA and NCCL 2.10 (a check of
    the build, not of the process group: it refuses them on gloo too); the hook itself
    runs anywhere, so on a CPU-only build it is registered under this name."""

    def bf16_hook(state: Any, bucket: dist.GradBucket) -> torch.futures.Future[torch.Tensor]:
        return hook(state, bucket)

    # DDP compares annotations with the objects (this module's are strings)
    bf16_hook.__annotations__ = {
        "bucket": dist.GradBucket,
        "return": torch.futures.Future[torch.Tensor],
    }
    return bf16_hook


# name -> (state for a process group, hook); pg None is the default ("p4reduce") group
HOOKS: dict[str, Callable[[dist.ProcessGroup | None], tuple[Any, Hook]]] = {
    "allreduce": lambda pg: (pg, dh.allreduce_hook),
    "fp16_compress": lambda pg: (pg, dh.fp16_compress_hook),
    "bf16_compress": lambda pg: (pg, _renamed(dh.bf16_compress_hook)),
    "powerSGD": lambda pg: (_power(pg), ps.powerSGD_hook),
    "batched_powerSGD": lambda pg: (_power(pg), ps.batched_powerSGD_hook),  # see BROKEN
    "fp16_wrapper_powerSGD": lambda pg: (_power(pg), dh.fp16_compress_wrapper(ps.powerSGD_hook)),
    "bf16_wrapper_powerSGD": lambda pg: (
        _power(pg),
        _renamed(dh.bf16_compress_wrapper(ps.powerSGD_hook)),
    ),
    "quantization_pertensor": lambda pg: (pg, qh.quantization_pertensor_hook),
    "quantization_perchannel": lambda pg: (pg, qh.quantization_perchannel_hook),
    "noop": lambda pg: (None, debugging_hooks.noop_hook),
}
# Hooks that fail on gloo too in torch 2.13, at their first compressed step:
# batched_powerSGD_hook hands _orthogonalize a 2-D matrix (mended by _orthogonalize_2d);
# the quantization hooks index the 0-dim scale all_gather returns (IndexError)
BROKEN = ("batched_powerSGD", "quantization_pertensor", "quantization_perchannel")


def model_and_data(seed: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4))
    g = torch.Generator().manual_seed(1000 + RANK)
    return model, torch.randn(8, 16, generator=g)


def flat_grads(m: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.grad.reshape(-1) for p in m.parameters()])


def flat_params(m: torch.nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in m.parameters()])


def compare(name: str, p4: DDP, gloo: DDP, x: torch.Tensor) -> dict[str, Any]:
    """STEPS steps of SGD on both copies (which start equal and see the same data): every
    step's averaged gradients and the final parameters within GRAD_RTOL of the largest
    gradient (times lr for the parameters, per step)."""
    opts = [torch.optim.SGD(m.parameters(), lr=LR) for m in (p4, gloo)]
    steps = []
    for step in range(STEPS):
        grads = []
        t0 = time.monotonic()
        for m, opt in zip((p4, gloo), opts, strict=True):
            opt.zero_grad()
            m(x).square().mean().backward()
            grads.append(flat_grads(m))
            opt.step()
        scale = float(grads[1].abs().max())
        err = float((grads[0] - grads[1]).abs().max())
        steps.append(
            {
                "step": step,
                "err": err,
                "rel": err / scale,
                "ok": err <= GRAD_RTOL * scale,
                "grad_max": scale,
                "seconds": time.monotonic() - t0,
            }
        )
    ptol = LR * STEPS * GRAD_RTOL * max(s["grad_max"] for s in steps) + 4 * EPS
    perr = float((flat_params(p4) - flat_params(gloo)).abs().max())
    return {"steps": steps, "params_err": perr, "params_ok": perr <= ptol}


def pair(make: Callable[[dist.ProcessGroup | None], tuple[Any, Hook]], ref: dist.ProcessGroup):
    """Two DDP copies of one model, with the hook: on the default group and on ``ref``."""
    base, x = model_and_data(5)
    copies = [model_and_data(5)[0] for _ in range(2)]
    for c in copies:
        c.load_state_dict(base.state_dict())
    p4 = DDP(copies[0])
    gloo = DDP(copies[1], process_group=ref)
    p4.register_comm_hook(*make(None))
    gloo.register_comm_hook(*make(ref))
    return p4, gloo, x


def first_error(model: DDP, x: torch.Tensor) -> dict[str, Any]:
    """The first step (of STEPS) whose backward raises, and what it raised."""
    for step in range(STEPS):
        try:
            model(x).square().mean().backward()
        except Exception as err:  # noqa: BLE001 - recorded for the test
            return error_text(err) | {"step": step}
    return {"type": None}


def _orthogonalize_2d(matrices: torch.Tensor, epsilon: float = 0) -> None:
    # torch 2.13's batched_powerSGD_hook passes _orthogonalize one 2-D matrix, which it
    # rejects (it takes batches since the batched rewrite of powerSGD_hook): a batch of one
    if matrices.dim() == 2:
        matrices = matrices.unsqueeze(0)
    _ORTHOGONALIZE(matrices, epsilon)


_ORTHOGONALIZE = ps._orthogonalize


def scenario_hooks() -> None:
    """Every DDP comm hook that ships with torch on a "p4reduce" group against the same
    hook on gloo (those broken in torch: the same failure on both), and p4reduce's own
    hook on a gloo group against gloo."""
    t0 = time.monotonic()
    init("p4reduce")
    ref = dist.new_group(backend="gloo")
    result["pids"] = stack_pids(dist.group.WORLD)
    result["marks"] = {"init": time.monotonic() - t0}
    out: dict[str, Any] = {}
    for name, make in HOOKS.items():
        result["marks"][name] = time.monotonic() - t0
        if name in BROKEN:
            # As shipped it fails on any backend (a bug of torch 2.13): the same error on
            # both groups, at the same step
            p4, gloo, x = pair(make, ref)
            out[f"{name}_as_shipped"] = {
                "p4reduce": first_error(p4, x),
                "gloo": first_error(gloo, x),
            }
            if name != "batched_powerSGD":
                continue
            # ...and with its bug mended (_orthogonalize_2d), the same parameters
            ps._orthogonalize = _orthogonalize_2d
        try:
            p4, gloo, x = pair(make, ref)
            before = stats().calls
            out[name] = compare(name, p4, gloo, x) | {"switch_calls": stats().calls - before}
        finally:
            ps._orthogonalize = _ORTHOGONALIZE
    # p4reduce's own hook on a gloo group
    base, x = model_and_data(5)
    copies = [model_and_data(5)[0] for _ in range(2)]
    hooked = DDP(copies[0], process_group=ref)
    gloo = DDP(copies[1], process_group=ref)
    with HookState.create(ref, P4ReduceOptions(chunk_elements=256)) as state:
        result["pids"] += stack_pids(state)
        hooked.register_comm_hook(state, allreduce_hook)
        out["p4reduce_allreduce_on_gloo"] = compare("p4reduce", hooked, gloo, x) | {
            "switch_calls": state.stats.calls
        }
    result["hooks"] = out
    result["marks"]["destroy"] = time.monotonic() - t0
    dist.destroy_process_group()
    result["marks"]["end"] = time.monotonic() - t0


# ---------------------------------------------------------------- threads

DEPTH = 12  # nested callbacks that each wait for the next collective
CHAIN = 40  # callbacks that each issue the next collective without waiting
HANG_TIMEOUT = 3.0  # the group timeout of the hang test, seconds


def sums(k: int) -> float:
    """What every rank contributes k + rank sums to."""
    return float(N * k + N * (N - 1) // 2)


def callback_collectives() -> dict[str, Any]:
    """A future's callback that issues collectives and waits for them (what PowerSGD's
    callbacks do): synchronously, through work.wait() and through the future."""
    a = torch.full((64,), float(1 + RANK))
    b = torch.full((64,), float(2 + RANK))
    c = torch.full((64,), float(3 + RANK))

    def cb(fut: torch.futures.Future[list[torch.Tensor]]) -> list[float]:
        dist.all_reduce(b)
        dist.all_reduce(c, async_op=True).wait()
        d = torch.full((64,), float(4 + RANK))
        got = dist.all_reduce(d, async_op=True).get_future().wait()[0]
        return [fut.value()[0][0].item(), b[0].item(), c[0].item(), got[0].item()]

    values = dist.all_reduce(a, async_op=True).get_future().then(cb).wait()
    return {"values": values, "expected": [sums(k) for k in (1, 2, 3, 4)]}


def nested_chain() -> dict[str, Any]:
    """Level k's callback issues level k+1's collective and waits for its whole chain: at
    the deepest point DEPTH callbacks wait at once, each for the one below."""

    def level(k: int) -> torch.futures.Future[list[float]]:
        t = torch.full((32,), float(k + RANK))
        fut = dist.all_reduce(t, async_op=True).get_future()
        if k == DEPTH:
            return fut.then(lambda f: [f.value()[0][0].item()])
        return fut.then(lambda f: [f.value()[0][0].item()] + level(k + 1).wait())

    before = delivery.pool.threads
    values = level(0).wait()
    return {
        "values": values,
        "expected": [sums(k) for k in range(DEPTH + 1)],
        "threads_before": before,
        "threads_after": delivery.pool.threads,
    }


def flat_chain() -> dict[str, Any]:
    """Each callback issues the next async collective and returns without waiting."""
    done: torch.futures.Future[list[float]] = torch.futures.Future()
    seen: list[float] = []

    def step(k: int) -> None:
        t = torch.full((16,), float(k + RANK))
        dist.all_reduce(t, async_op=True).get_future().then(lambda f: after(k, f))

    def after(k: int, f: torch.futures.Future[list[torch.Tensor]]) -> None:
        seen.append(f.value()[0][0].item())
        if k < CHAIN:
            step(k + 1)
        else:
            done.set_result(seen)

    step(0)
    return {"values": done.wait(), "expected": [sums(k) for k in range(CHAIN + 1)]}


def waited_from_a_thread_during_backward() -> dict[str, Any]:
    """Collectives issued before backward are waited on by another thread (work.wait(),
    then the future) while DDP's own all-reduces run on the same group."""
    model, x = model_and_data(9)
    ddp = DDP(model)
    tensors = [torch.full((1000,), float(k + RANK)) for k in range(4)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    seen: dict[str, Any] = {}

    def waiter() -> None:
        try:
            for w in reversed(works):
                w.wait()
            seen["values"] = [w.get_future().wait()[0][0].item() for w in works]
        except Exception as err:  # noqa: BLE001 - recorded for the test
            seen["error"] = error_text(err)

    thread = threading.Thread(target=waiter)
    thread.start()
    for _ in range(3):
        ddp(x).square().mean().backward()
    thread.join(30)
    return seen | {
        "expected": [sums(k) for k in range(4)],
        "joined": not thread.is_alive(),
        "grads_finite": bool(flat_grads(ddp).isfinite().all()),
    }


def hang() -> dict[str, Any]:
    """A session thread that never returns (a call stuck in the session, simulated by
    occupying the thread) under a group timeout of HANG_TIMEOUT: work.wait(), a future's
    callback and DDP's backward (whose reducer waits on the future in C++) each get an
    error naming what they waited for, within about that timeout."""
    sub = dist.new_group(backend="p4reduce", timeout=datetime.timedelta(seconds=HANG_TIMEOUT))
    result["pids"] += stack_pids(sub)
    gate = threading.Event()
    sub.endpoint.session._submit(gate.wait, 60)  # test-only: occupy the session's thread
    out: dict[str, Any] = {}

    def timed(name: str, fn: Callable[[], Any]) -> None:
        t0 = time.monotonic()
        try:
            fn()
            out[name] = {"type": None}
        except Exception as err:  # noqa: BLE001 - recorded for the test
            out[name] = error_text(err) | {
                "seconds": time.monotonic() - t0,
                "waiting_for": getattr(err, "waiting_for", None),
            }

    timed("wait", lambda: dist.all_reduce(torch.ones(8), group=sub))
    fut = dist.all_reduce(torch.ones(8), group=sub, async_op=True).get_future()
    timed("future", lambda: fut.then(lambda f: f.value()).wait())
    model, x = model_and_data(9)
    ddp = DDP(model, process_group=sub)
    timed("backward", lambda: ddp(x).square().mean().backward())
    gate.set()
    return out


def scenario_threads() -> None:
    """Collectives issued and waited on from callbacks, chains and another thread, then a
    hang that becomes an error."""
    init("p4reduce")
    result["pids"] = stack_pids(dist.group.WORLD)
    result["callback"] = callback_collectives()
    result["nested"] = nested_chain()
    result["flat"] = flat_chain()
    result["thread"] = waited_from_a_thread_during_backward()
    result["hang"] = hang()
    dist.destroy_process_group()


SCENARIOS = {"hooks": scenario_hooks, "threads": scenario_threads}

if __name__ == "__main__":
    if os.environ.get("P4T_DUMP_AFTER"):  # debugging a hang: every thread's stack
        import faulthandler

        faulthandler.dump_traceback_later(float(os.environ["P4T_DUMP_AFTER"]), exit=True)
    try:
        SCENARIOS[sys.argv[1]]()
    except BaseException as err:
        result["failure"] = "".join(traceback.format_exception(err))
        save()
        raise
    save()
