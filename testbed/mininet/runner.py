"""One measurement point on the Mininet testbed: a topology (workers, link shape, switch,
program), the calls to time with p4reduce and with gloo on it, their results checked.

``run_point(point)`` starts a ``MininetStack``, runs one plan of p4reduce calls (one job,
one worker process per host), then one plan of gloo calls on the same hosts and links, and
returns one ``Row`` per item and backend (``run_points`` runs several points on one stack
where they allow it):

- ``seconds``: the median over the ``repeat`` timed calls (after ``warmup`` untimed ones)
  of the slowest worker's time for the call;
- ``ok``: every worker's last result matches the reference (``testbed.data``: exact for
  int32; within the quantization bound for p4reduce float32; within float32 summation
  error for gloo) and the workers' results are identical;
- ``link_ms``: the time the bytes one worker moved need at the shaped link rate, in its
  busier direction (p4reduce: measured packets and bytes plus Ethernet/IPv4/UDP headers,
  less the retransmitted share;
  gloo: a ring all-reduce's 2(N-1)/N of the tensor plus TCP/IPv4/Ethernet headers). It is
  what a line-rate switch would leave, to set the measured time against.
"""

from __future__ import annotations

import functools
import itertools
import shutil
import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ...controller.service import Timeouts
from ...host import wire
from .. import cpu
from ..data import Checker, rank_data
from ..local import StackError, WorkerResult
from . import rounds
from .stack import LinkShape, MininetStack, data_link_mtu, make_workdir
from .switches import SwitchKind

FRAME_OVERHEAD = 42  # Ethernet 14 + IPv4 20 + UDP 8 around every aggregation payload
ETHERNET_GAP = 24  # preamble 8, FCS 4, inter-frame gap 12: what a wire adds to each frame


def wire_frame_bytes(k: int) -> int:
    """The bytes a K-element aggregation packet takes on an Ethernet wire. (HTB charges a
    shaped link only the frame, without ETHERNET_GAP: this errs long by 24 bytes.)"""
    return wire.full_length(k) + FRAME_OVERHEAD + ETHERNET_GAP


TCP_MSS, TCP_FRAME = 1448, 1514  # gloo's segments: payload per frame, frame (with options)
SERVICE_RETX_MS = Timeouts().initial_ms  # p4reduce-ctl serve's first retransmission timeout


@dataclass(frozen=True)
class Item:
    """One kind of call: a tensor and how to all-reduce it."""

    elements: int
    dtype: str = "float32"
    mode: str = "dense"  # p4reduce's mode; gloo ignores it
    density: float = 1.0
    group: int | None = None  # consecutive items of one group run interleaved (worker.py)
    repeat: int | None = None  # timed calls of this item; None: the point's repeat


@dataclass(frozen=True)
class Point:
    experiment: str
    workers: int
    shape: LinkShape
    items: tuple[Item, ...]
    program: str = "dense"
    gloo_items: tuple[Item, ...] | None = None  # None: the same items; (): no gloo run
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    k: int = 64
    slots: int = 64
    retx_ms: int | None = None  # the workers' first retransmission timeout (service default)
    timeout: float = 300.0
    # with other points in its batch: its timed calls in this many rounds, interleaved
    # with theirs (rounds.py)
    rounds: int = 1
    # leaf-spine (leafspine.py): the workers in this many racks under one spine; 0: one switch
    racks: int = 0


@dataclass
class Row:
    """One line of a results table and CSV."""

    experiment: str
    backend: str  # "p4reduce" or "gloo"
    mode: str  # dense / sparse (p4reduce), ring (gloo)
    workers: int
    elements: int
    dtype: str
    density: float
    bw_mbit: float | None
    delay_ms: float | None
    loss: float
    switch: str
    seconds: float
    seconds_min: float
    seconds_max: float
    calls: int
    goodput_mbit: float
    link_ms: float | None
    packets: float  # per call, all workers together (p4reduce)
    retransmissions: float  # per call, all workers together (p4reduce)
    ok: bool
    max_abs_error: float
    k: int = 64  # elements per packet of the program
    mtu: int = 1500  # of the data links
    extra: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(d.pop("extra"))
        return d


def gloo_items(point: Point) -> tuple[Item, ...]:
    return point.items if point.gloo_items is None else point.gloo_items


def plan_for(
    point: Point, items: tuple[Item, ...], workdir: Path, tag: str
) -> list[dict[str, Any]]:
    return [
        {
            "elements": it.elements,
            "dtype": it.dtype,
            "mode": it.mode,
            "density": it.density,
            "group": it.group,
            "seed": point.seed,
            "k": point.k,
            "repeat": it.repeat or point.repeat,
            "warmup": point.warmup,
            "save": str(workdir / f"{tag}-item{i}-rank{{rank}}.npy"),
        }  # fmt: skip
        for i, it in enumerate(items)
    ]


def check_results(
    point: Point, item: Item, paths: list[Path], backend: str, took: str | None = None
) -> tuple[bool, float]:
    """(every result right and all identical, the largest error). ``took``: the mode the
    saved (last) p4reduce call used, as its workers reported it (for ``mode="auto"``)."""
    arrays = [
        rank_data(point.seed, r, item.elements, item.dtype, item.density, point.k)
        for r in range(point.workers)
    ]
    results = [np.load(p) for p in paths]
    identical = all(np.array_equal(results[0], r) for r in results[1:])
    if backend == "p4reduce":
        mode = item.mode
        if mode == "auto":
            mode = took or auto_choice(point, item, arrays)
        checker = Checker(arrays, k=point.k, mode=mode, slots=point.slots)
        cmps = [checker.check(r) for r in results]
        return identical and all(c.ok for c in cmps), max(c.max_abs_error for c in cmps)
    if item.dtype == "int32":
        ok = all(checker_exact(arrays, r) for r in results)
        return identical and ok, 0.0 if ok else float("inf")
    # float32 sums in any order: |error| <= (n - 1) * 2^-24 * sum |x| (plus rounding slack)
    ref = np.sum([a.astype(np.float64) for a in arrays], axis=0)
    mag = np.sum([np.abs(a.astype(np.float64)) for a in arrays], axis=0)
    tol = point.workers * 2.0**-23 * mag + 1e-30
    errs = [np.abs(r.astype(np.float64) - ref) for r in results]
    return identical and all(bool(np.all(e <= tol)) for e in errs), float(
        max(e.max() for e in errs)
    )


def auto_choice(point: Point, item: Item, arrays: list[np.ndarray]) -> str:
    """The mode ``allreduce(mode="auto")`` takes for these tensors after a census: the API's
    own rule (``host.auto.decide_auto`` on the union of non-zero blocks). Used only when the
    workers did not report the mode they took (``took``), so that the result is checked
    against the bound of the mode that actually ran."""
    from p4reduce.host import wire
    from p4reduce.host.api import AUTO_MIN_ROUNDS, decide_auto
    from p4reduce.host.quantize import block_count, to_blocks

    nb = block_count(item.elements, point.k)
    if point.program != "sparse" or nb <= AUTO_MIN_ROUNDS * point.slots:
        return "dense"
    union = np.zeros(nb, dtype=bool)
    for a in arrays:
        union |= to_blocks(a, point.k).any(axis=1)
    msg = decide_auto(int(union.sum()), nb, point.slots, item.dtype == "float32")
    return "sparse" if msg == wire.MSG_SPARSE else "dense"


def checker_exact(arrays: list[np.ndarray], result: np.ndarray) -> bool:
    return Checker(arrays).check(result).ok


def link_ms(
    point: Point, item: Item, backend: str, calls: list[list[dict[str, Any]]]
) -> float | None:
    """Milliseconds the busier direction of one worker's link needs at the shaped rate."""
    bw = point.shape.bw
    if not bw:
        return None
    if backend == "gloo" and item.mode == "agsparse":
        # the allgather's bytes per worker (the workers' own count), in TCP segments
        sent = max((ln["stats"].get("bytes_sent", 0) for c in calls for ln in c), default=0)
        return -(-sent // TCP_MSS) * TCP_FRAME * 8 / (bw * 1e6) * 1e3
    if backend == "gloo":
        n = point.workers
        payload = 2 * (n - 1) / n * item.elements * 4
        frames = payload / TCP_MSS
        return frames * TCP_FRAME * 8 / (bw * 1e6) * 1e3
    worst = 0.0
    for per_rank in calls:
        for line in per_rank:
            st = line.get("stats", {})
            # one copy of each packet: a line-rate switch would cause no retransmission
            # (nor the repeated results that answer one), so they are taken out in
            # proportion
            sent = st.get("packets_sent", 0)
            once = 1.0 - st.get("retransmissions", 0) / sent if sent else 1.0
            up = st.get("bytes_sent", 0) + FRAME_OVERHEAD * sent
            down = st.get("bytes_received", 0) + FRAME_OVERHEAD * st.get("packets_received", 0)
            worst = max(worst, once * up, once * down)
    return worst * 8 / (bw * 1e6) * 1e3


def rows_for(
    point: Point,
    items: tuple[Item, ...],
    switch: str,
    backend: str,
    results: list[Any],
    workdir: Path,
) -> list[Row]:
    rows = []
    for i, item in enumerate(items):
        # calls[c][r]: the line of rank r for timed call c
        repeat = item.repeat or point.repeat
        calls: list[list[dict[str, Any]]] = [[] for _ in range(repeat)]
        for res in results:
            for line in res.lines:
                if line["item"] == i:
                    calls[line["call"]].append(line)
        if any(len(c) != point.workers for c in calls):
            raise StackError(f"{backend}: a worker reported fewer calls than planned")
        times = [max(ln["seconds"] for ln in c) for c in calls]
        med = statistics.median(times)
        packets = [sum(ln["stats"].get("packets_sent", 0) for ln in c) for c in calls]
        retx = [sum(ln["stats"].get("retransmissions", 0) for ln in c) for c in calls]
        paths = [workdir / f"{backend}-item{i}-rank{r}.npy" for r in range(point.workers)]
        took = sorted({str(ln.get("took")) for ln in calls[-1]})  # the saved call's mode
        ok, err = check_results(point, item, paths, backend, took[0] if took != ["None"] else None)
        ok = ok and len(took) == 1  # every worker took the same path
        # each worker's CPU window over the timed calls, on its last line (rank 0 first:
        # it also read the switch and the machine)
        windows = [ln["cpu"] for ln in sorted(calls[-1], key=lambda ln: ln["rank"]) if "cpu" in ln]
        extra: dict[str, Any] = {
            "retx_ms": (point.retx_ms or SERVICE_RETX_MS) if backend == "p4reduce" else None
        }
        extra.update(cpu.per_call(windows, repeat))
        if point.racks:
            extra["racks"] = point.racks
        rows.append(
            Row(
                experiment=point.experiment,
                backend=backend,
                mode=item.mode if backend == "p4reduce" or item.mode == "agsparse" else "ring",
                workers=point.workers,
                elements=item.elements,
                dtype=item.dtype,
                density=item.density,
                bw_mbit=point.shape.bw,
                delay_ms=point.shape.delay_ms,
                loss=point.shape.loss,
                switch=switch,
                k=point.k,
                mtu=data_link_mtu(point.k),
                seconds=med,
                seconds_min=min(times),
                seconds_max=max(times),
                calls=len(times),
                goodput_mbit=item.elements * 32 / med / 1e6 if med else 0.0,
                link_ms=link_ms(point, item, backend, calls),
                packets=statistics.mean(packets),
                retransmissions=statistics.mean(retx),
                ok=ok,
                max_abs_error=err,
                extra=extra,
            )  # fmt: skip
        )
    return rows


def stack_key(point: Point) -> tuple[Any, ...]:
    """What a point needs of the stack: points that agree on it can share one (the link
    loss can change on a running stack)."""
    # a leaf-spine job spans all the stack's hosts: its racks and workers are the stack's
    tree = (point.racks, point.workers) if point.racks else ()
    return (replace(point.shape, loss=0.0), point.program, point.k, point.slots, point.retx_ms,
            *tree)  # fmt: skip


def run_points(
    points: Sequence[Point],
    switch: SwitchKind,
    *,
    out: Path,
    log: Callable[[str], None] | None = None,
) -> list[Row]:
    """Run the points; their rows in order. Consecutive points that agree on the link
    shape, program, K, slots and retransmission timeout share one stack (topology, switch
    and service), built with as many hosts as the largest of them needs: each point's jobs
    run on its first N hosts, one after another, each under its own job id. Starting a
    stack takes most of a point's time on a loaded 2-core machine, and idle hosts cost
    nothing."""
    rows: list[Row] = []
    for _, group in itertools.groupby(points, key=stack_key):
        rows += run_group(list(group), switch, out=out, log=log)
    return rows


def run_point(
    point: Point,
    switch: SwitchKind,
    *,
    out: Path,
    log: Callable[[str], None] | None = None,
) -> list[Row]:
    """Run one point; its rows (p4reduce first, then gloo)."""
    return run_group([point], switch, out=out, log=log)


def run_group(
    points: list[Point],
    switch: SwitchKind,
    *,
    out: Path,
    log: Callable[[str], None] | None = None,
) -> list[Row]:
    """Run points that share one stack (``run_points``). Consecutive points with the same
    link loss form a batch: the batch's p4reduce jobs run one after another (job i on the
    first N_i hosts, one ``jobs_worker`` process per host for all of them), then its gloo
    calls (one ``gloo_worker`` per host, a group of the first N_i ranks per point). Between
    batches the loss filters are replaced (``MininetStack.set_loss``). The work directory
    is a fresh ``out/run-*``, removed afterwards, except when a part fails (StackError):
    it is kept then for its logs, and its path is in the message."""
    say = log or (lambda _m: None)
    first = points[0]
    hosts = max(p.workers for p in points)
    say(f"{first.experiment}: {hosts} hosts, links {first.shape.label()}, K = {first.k}, "
        f"{len(points)} point(s)")  # fmt: skip
    workdir = make_workdir(out)
    keep = False
    try:
        cls: Callable[..., MininetStack] = MininetStack
        if first.racks:
            from .leafspine import LeafSpineStack

            cls = functools.partial(LeafSpineStack, racks=first.racks)
        with cls(
            hosts, first.shape, first.program, switch=switch, k=first.k, slots=first.slots,
            workdir=workdir, build_dir=out / "build", log=log,
            join_timeout=sum(p.timeout for p in points), initial_timeout_ms=first.retx_ms,
        ) as stack:  # fmt: skip
            rows = []
            numbered = list(enumerate(points, start=1))  # the job id of each point
            for b, (loss, batch) in enumerate(
                itertools.groupby(numbered, key=lambda jp: jp[1].shape.loss)
            ):
                batch = list(batch)
                if loss != stack.shape.loss:
                    stack.set_loss(loss)
                    say(f"{first.experiment}: link loss now {loss:g}")
                rows += run_batch(stack, batch, switch, workdir, port=29500 + b)
        return rows
    except StackError as err:
        keep = True
        raise StackError(f"{err} (logs in {workdir / 'logs'})") from None
    finally:
        if not keep:
            shutil.rmtree(workdir, ignore_errors=True)


def run_batch(
    stack: MininetStack, batch: list[tuple[int, Point]], switch: SwitchKind, workdir: Path,
    *, port: int,
) -> list[Row]:  # fmt: skip
    """One batch of ``run_group``: (job id, point) pairs on the running stack; their rows."""
    points = [p for _, p in batch]
    timeout = sum(p.timeout for p in points)
    dirs = [workdir / f"point{job}" for job, _ in batch]
    for d in dirs:
        d.mkdir()
    # round r of every point, then round r + 1 (rounds.py); one round when alone. Each
    # job of a round has worker processes of its own, started after the previous job's
    # ended: no call runs beside other workers starting, joining or leaving.
    alone = len(points) == 1
    per_round: list[list[list[WorkerResult]]] = [[] for _ in batch]
    for r in range(1 if alone else max(p.rounds for p in points)):
        for (job, p), d, mine in zip(batch, dirs, per_round, strict=True):
            items = rounds.round_items(p.items, p.repeat, 1 if alone else p.rounds, r)
            if items is None:
                continue
            jid = rounds.round_job(job, r)
            spec = [(jid, p.workers, plan_for(p, items, d, "p4reduce"))]
            done = stack.wait(stack.spawn_p4reduce_jobs(spec, timeout=p.timeout), p.timeout)
            mine.append([WorkerResult(w.rank, w.returncode,
                                      [ln for ln in w.lines if ln.get("job") == jid])
                         for w in done[: p.workers]])  # fmt: skip
    gloo_plan: list[dict[str, Any]] = []
    spans = []
    for p, d in zip(points, dirs, strict=True):
        plan = plan_for(p, gloo_items(p), d, "gloo")
        spans.append((len(gloo_plan), len(plan)))
        gloo_plan += [{**it, "workers": p.workers} for it in plan]
    gl: list[WorkerResult] = []
    if gloo_plan:
        need = max(p.workers for p in points if gloo_items(p))
        procs = stack.spawn_gloo(gloo_plan, port=port, timeout=timeout, hosts=stack.hosts[:need])
        gl = stack.wait(procs, timeout)
    rows = []
    for (_, p), d, (start, count), mine in zip(batch, dirs, spans, per_round, strict=True):
        rows += rows_for(p, p.items, switch.label, "p4reduce", rounds.merge(mine), d)
        if count:
            mine = [WorkerResult(r.rank, r.returncode,
                                 [{**ln, "item": ln["item"] - start} for ln in r.lines
                                  if start <= ln["item"] < start + count])
                    for r in gl[: p.workers]]  # fmt: skip
            rows += rows_for(p, gloo_items(p), switch.label, "gloo", mine, d)
    return rows
