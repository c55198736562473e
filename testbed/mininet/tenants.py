"""The tenants experiment: two jobs share the P4 switch at once.

The N hosts are split in two halves; job 1 runs on the first, job 2 on the second, each a
dense float32 all-reduce of its own tensors (seeds 1 and 2). Each job runs alone first (its
solo time), then both run at the same time on the same switch (the shared time). Every
result is checked against its bound, and each job's shared result must be bit for bit its
solo result: the switch keeps the jobs' slots apart (docs/p4src.md, 'Tofino's rules'), so sharing may
cost time but never change a sum.

The target (docs/results.md): each job keeps at least 45 % of its solo throughput, i.e.
solo time / shared time >= 0.45. With a line-rate switch the two halves share no link, so
the ideal is 1.0.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..local import StackError
from .experiments import Options, link_label
from .report import bars, table, write_csv
from .runner import Item, Point, Row, plan_for, rows_for
from .stack import MininetStack, make_workdir
from .switches import SwitchKind

TARGET = 0.45  # solo time / shared time, per job
TENANTS_K = 256


def tenant_points(opts: Options, n: int) -> dict[int, Point]:
    half = n // 2
    item = Item(opts.elements or 65_536, "float32", "dense")
    base = opts.point("tenants", half, opts.shape(), [item], k=opts.k(TENANTS_K))
    return {job: replace(base, seed=job, repeat=max(opts.repeat or 3, 5), gloo_items=())
            for job in (1, 2)}  # fmt: skip


def run_tenants(
    opts: Options, switch: SwitchKind, out: Path, say: Callable[[str], None], *, quiet: bool
) -> list[Row]:
    n = (opts.workers or (4,))[0]
    if n < 2 or n % 2:
        raise StackError(f"tenants: {n} workers; an even number of at least 2 (two halves)")
    points = tenant_points(opts, n)
    p1 = points[1]
    workdir = make_workdir(out)
    say(f"tenants: 2 jobs of {n // 2} workers, links {p1.shape.label()}")
    rows: list[Row] = []
    try:
        with MininetStack(
            n, p1.shape, "dense", switch=switch, k=p1.k, slots=p1.slots, workdir=workdir,
            build_dir=out / "build", log=say, initial_timeout_ms=p1.retx_ms,
        ) as stack:  # fmt: skip
            half = n // 2
            members = {1: stack.hosts[:half], 2: stack.hosts[half:]}

            def start(job: int, phase: str) -> tuple[list, Path]:
                d = workdir / f"{phase}-job{job}"
                d.mkdir()
                pt = points[job]
                procs = stack.spawn_p4reduce(
                    plan_for(pt, pt.items, d, "p4reduce"), job_id=job, timeout=pt.timeout,
                    hosts=members[job],
                )  # fmt: skip
                return procs, d

            def finish(job: int, phase: str, procs: list, d: Path) -> None:
                pt = points[job]
                res = stack.wait(procs, pt.timeout)
                for r in rows_for(pt, pt.items, switch.label, "p4reduce", res, d):
                    r.extra.update(job=job, phase=phase)
                    rows.append(r)

            for job in (1, 2):
                procs, d = start(job, "solo")
                finish(job, "solo", procs, d)
            started = {job: start(job, "shared") for job in (1, 2)}
            for job in (1, 2):
                finish(job, "shared", *started[job])
            for job in (1, 2):
                same = all(
                    np.array_equal(np.load(workdir / f"solo-job{job}" / f"p4reduce-item0-rank{r}.npy"),
                                   np.load(workdir / f"shared-job{job}" / f"p4reduce-item0-rank{r}.npy"))
                    for r in range(half)
                )  # fmt: skip
                for r in rows:
                    if r.extra["job"] == job:
                        r.extra["same_as_solo"] = same
                        r.ok = r.ok and same
    except StackError as err:
        raise StackError(f"{err} (logs in {workdir / 'logs'})") from None
    except BaseException:
        shutil.rmtree(workdir, ignore_errors=True)
        raise
    shutil.rmtree(workdir, ignore_errors=True)
    for r in rows:
        solo = next(
            x for x in rows if x.extra["job"] == r.extra["job"] and x.extra["phase"] == "solo"
        )
        r.extra["of_solo"] = solo.seconds / r.seconds if r.seconds else float("nan")
    write_csv(rows, out / "tenants.csv")
    label = link_label(rows)
    by_phase = {ph: [next(r.seconds * 1e3 for r in rows if r.extra["job"] == j
                          and r.extra["phase"] == ph) for j in (1, 2)]
                 for ph in ("solo", "shared")}  # fmt: skip
    bars(["job 1", "job 2"], by_phase, out / "tenants.png", ylabel="time per all-reduce (ms)",
         title=f"tenants: two jobs of {n // 2} workers on one switch\n{label}")  # fmt: skip
    lines = tenant_summary(rows)
    if quiet:
        for r in rows:
            print(json.dumps({"experiment": "tenants", **r.as_dict()}), flush=True)
    else:
        print(f"\ntenants: two jobs sharing the switch ({label})")
        print(table(rows, ("workers",)))
        for line in lines:
            print(f"  {line}")
        print(f"  wrote {out / 'tenants.csv'} and {out / 'tenants.png'}", flush=True)
    return rows


def tenant_summary(rows: list[Row]) -> list[str]:
    lines = []
    for r in rows:
        if r.extra["phase"] != "shared":
            continue
        f = r.extra["of_solo"]
        lines.append(
            f"job {r.extra['job']}: shared {r.seconds * 1e3:.0f} ms, {f:.2f} of its solo "
            f"throughput (target >= {TARGET}: {'met' if f >= TARGET else 'MISSED'}); result "
            + ("identical to solo" if r.extra.get("same_as_solo") else "CHANGED")
        )
    return lines
