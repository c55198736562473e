"""One rank of a tests/torch scenario: ``python tests/torch/ranks.py SCENARIO``.

The environment gives RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, P4T_INIT (``env``,
``tcp`` or ``file:PATH``: the rendezvous to use) and P4T_OUT (where this rank writes its
JSON results). The rank measures; the test (harness.py's caller) asserts.
"""

from __future__ import annotations

import datetime
import json
import os
import signal
import sys
import time
import traceback
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as funcol
from p4reduce.host import RetryPolicy, quantize
from p4reduce.host.torch import HookState, P4ReduceOptions, allreduce_hook, stats
from p4reduce.testbed.data import Checker, agreed_exponents, rank_data, reference
from torch.nn.parallel import DistributedDataParallel as DDP

RANK = int(os.environ["RANK"])
N = int(os.environ["WORLD_SIZE"])
TIMEOUT = datetime.timedelta(seconds=60)
LR = 0.1
EPS = torch.finfo(torch.float32).eps
result: dict[str, Any] = {"rank": RANK, "n": N}


def init(backend: str, options: P4ReduceOptions | None = None, method: str | None = None) -> None:
    method = method or os.environ["P4T_INIT"]
    addr = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
    url = {"env": "env://", "tcp": f"tcp://{addr}"}.get(method) or f"file://{method[5:]}"
    dist.init_process_group(
        backend, init_method=url, rank=RANK, world_size=N, timeout=TIMEOUT, pg_options=options
    )


def save() -> None:
    path = os.environ["P4T_OUT"]
    with open(path + ".tmp", "w") as f:
        json.dump(result, f)
    os.replace(path + ".tmp", path)


def stack_pids(obj: Any) -> list[int]:
    stack = obj.endpoint.stack
    return stack.pids() if stack is not None else []


def error_text(err: BaseException) -> dict[str, Any]:
    return {"type": type(err).__name__, "message": str(err)}


# ---------------------------------------------------------------- all-reduce vs gloo


def compare_allreduce(name: str, ref: dist.ProcessGroup, x: np.ndarray, op: str) -> None:
    """all_reduce of x on the default (p4reduce) group and on gloo. The p4reduce result is
    checked against the exact reduction of every rank's input (int32: exactly, wrapping;
    float32: within n^2 * 2^(E - 159) per element, E the block's agreed exponent, plus the
    float32 rounding of the result) and against gloo's (plus gloo's own rounding)."""
    mine = torch.from_numpy(x.copy())
    theirs = torch.from_numpy(x.copy())
    before = stats()
    dist.all_reduce(mine, op=dist.ReduceOp.SUM if op == "sum" else dist.ReduceOp.AVG)
    calls = stats().calls - before.calls
    dist.all_reduce(theirs, group=ref)  # gloo has no AVG: its sum, divided as the session does
    if op == "avg":
        theirs /= N
    inputs = [rank_data(7, r, x.size, str(x.dtype)).reshape(x.shape) for r in range(N)]
    a, b = mine.numpy(), theirs.numpy()
    exact = reference(inputs)
    if x.dtype == np.int32:
        ok_exact, ok_gloo = bool(np.array_equal(a, exact)), bool(np.array_equal(a, b))
        err_exact = err_gloo = float(np.abs(a.astype(np.int64) - exact).max(initial=0))
    else:
        div = N if op == "avg" else 1
        e = agreed_exponents(inputs, 64, "dense", 64)
        per = np.repeat(quantize.bound(N, e), 64)[: x.size].reshape(x.shape) / div
        rounding = (1.5 if op == "avg" else 0.5) * np.spacing(np.abs(a))
        tol = per * (1 + 2.0**-20) + rounding
        d_exact = np.abs(a.astype(np.float64) - exact / div)
        d_gloo = np.abs(a.astype(np.float64) - b)
        ok_exact = bool(np.all(d_exact <= tol))
        # gloo adds in float32: each addition rounds to half an ulp of a partial sum, and a
        # partial sum is at most the sum of the magnitudes
        magnitude = np.sum(np.abs(np.stack(inputs)), axis=0, dtype=np.float32) / div
        ok_gloo = bool(np.all(d_gloo <= tol + N * np.spacing(magnitude)))
        err_exact = float(d_exact.max(initial=0.0))
        err_gloo = float(d_gloo.max(initial=0.0))
    result[name] = {
        "ok_exact": ok_exact,
        "ok_gloo": ok_gloo,
        "err_exact": err_exact,
        "err_gloo": err_gloo,
        "switch_calls": calls,
    }


def compare_half(name: str, ref: dist.ProcessGroup, dtype: torch.dtype) -> None:
    """float16 / bfloat16 through the switch: one switch call, and the result is the
    float32 all-reduce of the same (exactly widened) values rounded once to the dtype;
    gloo adds in the half type, so it is compared within the bound of that plus n ulps."""
    x = torch.from_numpy(rank_data(9, RANK, 3000, "float32")).to(dtype)
    wide = x.float()
    mine, theirs = x.clone(), x.clone()
    before = stats()
    dist.all_reduce(mine)
    calls = stats().calls - before.calls
    dist.all_reduce(wide)
    dist.all_reduce(theirs, group=ref)
    same = bool(torch.equal(mine, wide.to(dtype)))
    # each of gloo's n - 1 additions in the half type rounds to half an ulp of a partial
    # sum (at most the sum of the magnitudes); ours rounds once, to half an ulp of itself
    fi = torch.finfo(dtype)
    inputs = [
        torch.from_numpy(rank_data(9, r, 3000, "float32")).to(dtype).float() for r in range(N)
    ]
    magnitude = torch.stack(inputs).abs().sum(dim=0)
    tol = N * fi.eps * magnitude + fi.eps * mine.float().abs() + fi.tiny
    ok_gloo = bool(((mine.float() - theirs.float()).abs() <= tol).all())
    result[name] = {"same_as_float32": same, "ok_gloo": ok_gloo, "switch_calls": calls,
                    "dtype": str(mine.dtype)}  # fmt: skip


def collectives(ref: dist.ProcessGroup) -> None:
    """What runs on the backend's private gloo: results exact, no switch traffic."""
    before = stats().calls
    out: dict[str, Any] = {}
    b = torch.arange(6, dtype=torch.float32) if RANK == 0 else torch.zeros(6)
    dist.broadcast(b, src=0)
    out["broadcast"] = b.tolist() == list(range(6))
    parts = [torch.zeros(3, dtype=torch.int64) for _ in range(N)]
    dist.all_gather(parts, torch.full((3,), RANK, dtype=torch.int64))
    out["all_gather"] = [p.tolist() for p in parts] == [[r] * 3 for r in range(N)]
    flat = torch.zeros(2 * N)
    dist.all_gather_into_tensor(flat, torch.full((2,), float(RANK)))
    out["all_gather_into_tensor"] = flat.tolist() == [float(r) for r in range(N) for _ in (0, 1)]
    rs = torch.zeros(2)
    dist.reduce_scatter(rs, [torch.full((2,), float(RANK * 10 + i)) for i in range(N)])
    expect = sum(r * 10 + RANK for r in range(N))
    out["reduce_scatter"] = rs.tolist() == [float(expect)] * 2
    rst = torch.zeros(2)
    dist.reduce_scatter_tensor(rst, torch.arange(2 * N, dtype=torch.float32) + RANK)
    expect_t = [float(sum(2 * RANK + j + r for r in range(N))) for j in (0, 1)]
    out["reduce_scatter_tensor"] = rst.tolist() == expect_t
    dist.barrier()
    out["barrier"] = True
    m = torch.tensor([float(RANK), -float(RANK)])
    dist.all_reduce(m, op=dist.ReduceOp.MAX)
    out["max"] = m.tolist() == [float(N - 1), 0.0]
    d = torch.full((4,), 0.5 + RANK, dtype=torch.float64)
    dist.all_reduce(d)  # float64: not a switch dtype
    out["float64_sum"] = d.tolist() == [sum(0.5 + r for r in range(N))] * 4
    objs: list[Any] = [None] * N
    dist.all_gather_object(objs, {"rank": RANK})
    out["all_gather_object"] = objs == [{"rank": r} for r in range(N)]
    out["switch_calls"] = stats().calls - before
    result["collectives"] = out


def functional() -> None:
    """Functional collectives resolve the group by name in C++: the switch for all_reduce,
    gloo for all_gather; the same under torch.compile (the eager backend: dynamo traces
    them into the graph, and inductor would take minutes on 2 cores)."""
    pg = dist.group.WORLD
    before = stats().calls
    r = funcol.all_reduce(torch.full((5,), float(RANK + 1)), "sum", pg)
    g = funcol.all_gather_tensor(torch.full((2,), float(RANK)), 0, pg)
    mid = stats().calls

    @torch.compile(backend="eager", fullgraph=True)
    def step(x: torch.Tensor) -> torch.Tensor:
        return funcol.all_gather_tensor(funcol.all_reduce(x * 2, "sum", pg), 0, pg) + 1

    c = step(torch.full((2,), float(RANK + 1)))
    result["functional"] = {
        "all_reduce": torch.as_tensor(r).tolist() == [float(N * (N + 1) // 2)] * 5,
        "all_gather": torch.as_tensor(g).tolist() == [float(r) for r in range(N) for _ in (0, 1)],
        "switch_calls": mid - before,
        "compiled": torch.as_tensor(c).tolist() == [float(N * (N + 1) + 1)] * (2 * N),
        "compiled_switch_calls": stats().calls - mid,
    }


def async_work() -> None:
    t = torch.full((100,), float(RANK))
    work = dist.all_reduce(t, async_op=True)
    fut = work.get_future()
    value = fut.wait()
    work.wait()
    nc = torch.arange(12, dtype=torch.float32).reshape(3, 4).t()  # not contiguous: staged
    dist.all_reduce(nc)
    result["async"] = {
        "future_value_is_list": isinstance(value, list) and value[0] is not None,
        "result": t[:3].tolist(),
        "expected": [float(sum(range(N)))] * 3,
        "completed": work.is_completed(),
        "non_contiguous": nc.tolist()
        == (torch.arange(12, dtype=torch.float32).reshape(3, 4).t() * N).tolist(),
    }
    int_avg = torch.ones(3, dtype=torch.int32)
    try:
        dist.all_reduce(int_avg, op=dist.ReduceOp.AVG)
        result["int32_avg"] = {"type": None, "message": ""}
    except Exception as err:  # noqa: BLE001 - recorded for the test
        result["int32_avg"] = error_text(err)


# ---------------------------------------------------------------- DDP and the hook


def model_and_data(seed: int) -> tuple[torch.nn.Module, torch.Tensor]:
    torch.manual_seed(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(16, 32), torch.nn.BatchNorm1d(32), torch.nn.ReLU(), torch.nn.Linear(32, 4)
    )
    g = torch.Generator().manual_seed(1000 + RANK)
    return model, torch.randn(8, 16, generator=g)


def grad_tolerance(model: torch.nn.Module, x: torch.Tensor, ref: dist.ProcessGroup) -> float:
    """The quantization bound of this step's averaged gradients, from every rank's local
    gradients: n^2 * 2^(E - 159), E the exponent of the largest local gradient element over
    the ranks (at least every block's agreed exponent; DDP's pre-division by n and the
    hook's division after the sum only make the error smaller)."""
    model.zero_grad()
    model(x).square().mean().backward()
    peak = torch.tensor([max(float(p.grad.abs().max()) for p in model.parameters())])
    dist.all_reduce(peak, op=dist.ReduceOp.MAX, group=ref)
    block = np.full((1, 64), peak.item(), dtype=np.float32)
    return float(quantize.bound(N, int(quantize.block_exponents(block)[0])))


def ddp_runs(ref: dist.ProcessGroup) -> None:
    """Three DDP copies of one model on the same data: on the p4reduce default group, on
    gloo (the reference) and on gloo with the switch hook. Before each step the two others
    take the p4reduce copy's parameters, so every copy computes the same local gradients
    and the averaged gradients may differ only by the switch's rounding: checked against
    the bound of each step; the parameters after the last step against lr times it."""
    base, x = model_and_data(3)
    copies = [model_and_data(3)[0] for _ in range(3)]
    kw = {"bucket_cap_mb": 0.001, "broadcast_buffers": True}
    switch = DDP(copies[0], **kw)
    gloo = DDP(copies[1], process_group=ref, **kw)
    hooked = DDP(copies[2], process_group=ref, **kw)
    state = HookState.create(ref, P4ReduceOptions(chunk_elements=256))
    hooked.register_comm_hook(state, allreduce_hook)
    result["pids"] += stack_pids(state)
    opts = [torch.optim.SGD(m.parameters(), lr=LR) for m in (switch, gloo, hooked)]
    steps = []
    for _ in range(4):
        for m in (gloo, hooked):
            m.module.load_state_dict(switch.module.state_dict())
        base.load_state_dict(switch.module.state_dict())
        tol = grad_tolerance(base, x, ref)
        grads = []
        for m, opt in zip((switch, gloo, hooked), opts, strict=True):
            opt.zero_grad()
            m(x).square().mean().backward()
            grads.append(torch.cat([p.grad.reshape(-1) for p in m.parameters()]))
            opt.step()
        ulps = 4 * (N + 1) * EPS * grads[1].abs()
        steps.append(
            {
                "tol": tol + 4 * (N + 1) * EPS * float(grads[1].abs().max()),
                "backend_err": float((grads[0] - grads[1]).abs().max()),
                "backend_ok": bool(((grads[0] - grads[1]).abs() <= tol + ulps).all()),
                "hook_err": float((grads[2] - grads[1]).abs().max()),
                "hook_ok": bool(((grads[2] - grads[1]).abs() <= tol + ulps).all()),
                "grad_max": float(grads[1].abs().max()),
            }
        )
    params = [
        torch.cat([p.detach().reshape(-1) for p in m.parameters()]) for m in (switch, gloo, hooked)
    ]
    # the copies started the last step from the same parameters: they differ by lr times
    # the gradients' difference, plus the rounding of the update
    ptol = LR * steps[-1]["tol"] * 2 + 4 * EPS * params[1].abs()
    result["ddp"] = {
        "steps": steps,
        "params_backend_ok": bool(((params[0] - params[1]).abs() <= ptol).all()),
        "params_hook_ok": bool(((params[2] - params[1]).abs() <= ptol).all()),
        "params_backend_err": float((params[0] - params[1]).abs().max()),
        "params_hook_err": float((params[2] - params[1]).abs().max()),
        "hook_stats_calls": state.stats.calls,
        "hook_step_calls": stats(state, reset=True).calls,
        "backend_stats": stats(reset=True).as_dict(),
    }
    state.close()


# ---------------------------------------------------------------- scenarios


def scenario_main() -> None:
    """Everything that works: the backend against gloo, the other collectives, functional
    collectives, a p4reduce subgroup, DDP and the hook."""
    t0 = time.monotonic()
    # three ranks run two native driver threads per call (docs/host.md, "Several driver
    # threads"), two ranks one
    init("p4reduce", P4ReduceOptions(chunk_elements=4096, threads=2 if N == 3 else 1))
    result["init_seconds"] = time.monotonic() - t0
    result["pids"] = stack_pids(dist.group.WORLD)
    result["driver_threads"] = dist.group.WORLD.endpoint.session.session.threads
    result["backend"] = dist.get_backend()
    ref = dist.new_group(backend="gloo")
    for name, size, dtype, op in [
        ("float32_sum", 1000, "float32", "sum"),
        ("float32_avg", 333, "float32", "avg"),
        ("int32_sum", 1000, "int32", "sum"),
        ("float32_chunked", 10000, "float32", "sum"),  # 3 calls of at most 4096 elements
        ("int32_empty", 0, "int32", "sum"),
    ]:
        x = rank_data(7, RANK, size, dtype).reshape(-1, 1) if size else np.zeros(0, np.int32)
        compare_allreduce(name, ref, x, op)
    for name, tdtype in [("float16", torch.float16), ("bfloat16", torch.bfloat16)]:
        compare_half(name, ref, tdtype)
    collectives(ref)
    functional()
    async_work()
    # a p4reduce subgroup of the last two ranks: its rank 0 (a global rank > 0 when n > 2)
    # starts its own loopback stack
    members = list(range(N - 2, N))
    sub = dist.new_group(members)
    if RANK in members:
        t = torch.full((70,), float(RANK))
        dist.all_reduce(t, group=sub)
        result["subgroup"] = {"sum": t[0].item(), "expected": float(sum(members))}
        result["pids"] += stack_pids(sub)
    ddp_runs(ref)
    dist.destroy_process_group()
    result["seconds"] = time.monotonic() - t0


def scenario_errors() -> None:
    """A rank that does not come (timeout naming it), then the switch killed under DDP."""
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=1.0)
    init("p4reduce", P4ReduceOptions(retry=retry))
    ref = dist.new_group(backend="gloo")
    t = torch.ones(64)
    if RANK == 0:
        t0 = time.monotonic()
        try:
            dist.all_reduce(t)
            result["missing"] = {"type": None}
        except Exception as err:  # noqa: BLE001 - recorded for the test
            result["missing"] = error_text(err) | {
                "missing_ranks": getattr(err, "missing_ranks", None),
                "seconds": time.monotonic() - t0,
            }
    dist.barrier(group=ref)
    # a fresh p4reduce group for the second part (the first one has a failed call)
    sub = dist.new_group(backend="p4reduce", pg_options=P4ReduceOptions(retry=retry))
    model = DDP(torch.nn.Linear(32, 4), process_group=sub)
    x = torch.randn(8, 32)
    for step in range(4):
        if step == 2:
            dist.barrier(group=ref)
            if RANK == 0:
                os.kill(sub.endpoint.stack.switch.pid, signal.SIGKILL)
            dist.barrier(group=ref)
        t0 = time.monotonic()
        try:
            model(x).sum().backward()
        except Exception as err:  # noqa: BLE001 - recorded for the test
            result["killed"] = error_text(err) | {"step": step, "seconds": time.monotonic() - t0}
            break
    else:
        result["killed"] = {"type": None}
    result["pids"] = stack_pids(dist.group.WORLD) + stack_pids(sub)
    dist.destroy_process_group()


def scenario_recover() -> None:
    """A rank late by more than the give-up time: rank 0's collective fails naming it; then
    the group goes on by itself (no recover() anywhere): every later collective, plain and
    under DDP, is exact on every rank."""
    retry = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=1.0)
    init("p4reduce", P4ReduceOptions(retry=retry))
    t = torch.ones(64)
    if RANK == 1:
        time.sleep(2.5)
    try:
        dist.all_reduce(t)
        result["late"] = {"type": None, "sum": t[0].item()}
    except Exception as err:  # noqa: BLE001 - recorded for the test
        result["late"] = error_text(err) | {"missing_ranks": getattr(err, "missing_ranks", None)}
    after = []
    for i in range(3):
        t = torch.full((1000,), float(RANK + i))
        t0 = time.monotonic()
        try:
            dist.all_reduce(t)
            after.append({"ok": True, "sum": t[0].item(), "seconds": time.monotonic() - t0})
        except Exception as err:  # noqa: BLE001 - recorded for the test
            after.append(error_text(err) | {"ok": False, "seconds": time.monotonic() - t0})
    result["after"] = after
    result["expected"] = [float(sum(r + i for r in range(N))) for i in range(3)]
    torch.manual_seed(0)
    model = DDP(torch.nn.Linear(32, 4))
    x = torch.randn(8, 32)
    try:
        for _ in range(2):
            model(x).sum().backward()
        result["ddp"] = {"ok": True}
    except Exception as err:  # noqa: BLE001 - recorded for the test
        result["ddp"] = error_text(err) | {"ok": False}
    result["recoveries"] = dist.group.WORLD.endpoint.session.recoveries
    result["pids"] = stack_pids(dist.group.WORLD)
    dist.destroy_process_group()


def scenario_refused() -> None:
    """Set-up errors: a dead registration URL, a job the controller refuses, a pg_options
    of the wrong type; then a good group whose rank 0 the test kills."""
    store_dir = os.environ["P4T_STORE_DIR"]
    cases = {
        "dead_url": P4ReduceOptions(url="http://127.0.0.1:9", timeout=5),
        "refused": P4ReduceOptions(slots=100_000, timeout=20),
        "wrong_type": {"url": None},
    }
    for i, (name, options) in enumerate(cases.items()):
        t0 = time.monotonic()
        try:
            init("p4reduce", options, method=f"file:{store_dir}/store{i}")  # type: ignore[arg-type]
            result[name] = {"type": None}
            dist.destroy_process_group()
        except Exception as err:  # noqa: BLE001 - recorded for the test
            result[name] = error_text(err) | {"seconds": time.monotonic() - t0}
    init("p4reduce", None, method=f"file:{store_dir}/store_ok")
    result["pids"] = stack_pids(dist.group.WORLD)
    result["ready"] = True
    save()
    time.sleep(60)  # the test kills this rank


def scenario_cuda() -> None:
    """CUDA tensors, staged through host memory."""
    init("p4reduce")
    dev = torch.device("cuda", RANK % torch.cuda.device_count())
    x = rank_data(7, RANK, 5000, "float32")
    t = torch.from_numpy(x).to(dev)
    dist.all_reduce(t)
    inputs = [rank_data(7, r, 5000, "float32") for r in range(N)]
    check = Checker(inputs).check(t.cpu().numpy())
    i = torch.arange(100, dtype=torch.int32, device=dev) * (RANK + 1)
    dist.all_reduce(i)
    # float16 / bfloat16 CUDA tensors go through the switch too: staged, widened to float32
    # and rounded once, so the result equals the float32 all-reduce rounded to the dtype
    half_same = {}
    for dtype in (torch.float16, torch.bfloat16):
        h = torch.from_numpy(rank_data(9, RANK, 3000, "float32")).to(dev).to(dtype)
        wide = h.float()
        before = stats().calls
        dist.all_reduce(h)
        through_switch = stats().calls > before
        dist.all_reduce(wide)
        half_same[str(dtype)] = through_switch and bool(torch.equal(h, wide.to(dtype)))
    model = DDP(torch.nn.Linear(16, 4).to(dev), device_ids=[dev.index])
    model(torch.randn(8, 16, device=dev)).sum().backward()
    result["cuda"] = {
        "ok": check.ok,
        "max_error": check.max_abs_error,
        "int32": i.cpu().tolist() == (torch.arange(100) * sum(range(1, N + 1))).tolist(),
        "half": half_same,
        "ddp_calls": stats().calls,
    }
    result["pids"] = stack_pids(dist.group.WORLD)
    dist.destroy_process_group()


SCENARIOS = {
    "main": scenario_main,
    "errors": scenario_errors,
    "recover": scenario_recover,
    "refused": scenario_refused,
    "cuda": scenario_cuda,
}

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
