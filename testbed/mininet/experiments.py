"""The Mininet experiments: which points each runs, its table, its summary and its figure.

| name | varies | tensor | backends |
|---|---|---|---|
| ``single`` | nothing: one point from the options | ``--elements`` of ``--dtype``, ``--mode`` | p4reduce, gloo |
| ``scaling`` | workers 2, 4, 6, 8 | dense float32 | p4reduce dense, gloo ring |
| ``loss`` | link loss 0, 0.001, 0.01, 0.05 | dense int32 (exact) | p4reduce dense, gloo ring |
| ``sparsity`` | block density 0.01 .. 1 | float32, sparse program | p4reduce sparse and dense on the same data; gloo at density 1 |

(``training``, DDP across the testbed, is in ``training.py``.) Options given on the command
line replace an experiment's defaults (``--workers 2,4`` for scaling, ``--loss 0,0.01``, ...).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ... import contracts
from .report import bars, plot, plot_panels
from .runner import Item, Point, Row, wire_frame_bytes
from .stack import LinkShape


@dataclass(frozen=True)
class Options:
    """The command line, with None where the user left an experiment's default."""

    workers: tuple[int, ...] | None = None
    bws: tuple[float, ...] | None = None  # Mbit/s; 0: unshaped; a list for scaling
    delay_ms: float | None = None
    loss: tuple[float, ...] | None = None
    elements: int | None = None
    density: tuple[float, ...] | None = None
    mode: str = "dense"
    dtype: str | None = None
    repeat: int | None = None  # None: the experiment's default (3; scaling 9; sparsity 25 or 9)
    warmup: int = 1
    seed: int = 0
    ks: tuple[int, ...] | None = None  # elements per packet; a list for scaling
    slots: int | None = None  # None: sized to the link (window_slots)
    gloo: bool = True
    retx_ms: int | None = None
    timeout: float = 300.0
    steps: int = 15  # training
    epochs: int = 5  # accuracy (time to accuracy)
    lr: float = 1.0  # accuracy: SGD learning rate (examples/train_digits.py's default)

    @property
    def bw(self) -> float | None:
        """The link rate of the experiments that use one (10 Mbit/s unless given)."""
        bw = (self.bws or (10.0,))[0]
        return bw or None

    def k(self, default: int) -> int:
        return (self.ks or (default,))[0]

    def shape(self, loss: float = 0.0, bw: float | None = None) -> LinkShape:
        rate = self.bw if bw is None else (bw or None)
        return LinkShape(bw=rate, delay_ms=self.delay_ms or None, loss=loss)

    def point(self, experiment: str, workers: int, shape: LinkShape, items: Sequence[Item],
              *, program: str = "dense", gloo_items: Sequence[Item] | None = None,
              retx_ms: int | None = None, k: int = 64, rounds: int = 1) -> Point:  # fmt: skip
        gl = None if gloo_items is None else tuple(gloo_items)
        return Point(
            experiment, workers, shape, tuple(items), program=program,
            gloo_items=gl if self.gloo else (), repeat=self.repeat or 3, warmup=self.warmup,
            seed=self.seed, k=k, slots=self.slots or window_slots(shape.bw, k),
            retx_ms=self.retx_ms or retx_ms,
            timeout=self.timeout, rounds=rounds,
        )  # fmt: skip


# Slots per job: enough packets in flight to cover WINDOW_S of link time, as SwitchML sizes
# its pool to the bandwidth-delay product. More cost at every call's start: a float32 or
# sparse call primes each slot with a header-only round trip (docs/protocol.md), and with 64
# slots at 10 Mbit/s that start was most of a sparse call at 0.1 % density (docs/results.md).
# 22 ms keeps 64 slots at 100 Mbit/s with K = 1024, as the 100 Mbit/s figures were always
# measured (30 slots measured no different there: 8 workers 110-123 ms against 117). Fewer
# than MIN_SLOTS would leave a sparse call too few stride classes.
WINDOW_S = 0.022
MIN_SLOTS, MAX_SLOTS = 16, 64


def window_slots(bw_mbit: float | None, k: int) -> int:
    """The slots of a job on links of ``bw_mbit`` (None: unshaped) with K = ``k``."""
    if not bw_mbit:
        return MAX_SLOTS
    frame_bits = wire_frame_bytes(k) * 8
    return max(MIN_SLOTS, min(MAX_SLOTS, math.ceil(WINDOW_S * bw_mbit * 1e6 / frame_bits)))


@dataclass(frozen=True)
class Experiment:
    name: str
    title: str
    keys: tuple[str, ...]  # the parameters that vary, first in the table
    points: Callable[[Options], list[Point]]
    summary: Callable[[list[Row]], list[str]]
    figure: Callable[[list[Row], Path, str], None]


def by(rows: Sequence[Row], backend: str, mode: str | None = None) -> list[Row]:
    return [r for r in rows if r.backend == backend and (mode is None or r.mode == mode)]


def link_label(rows: Sequence[Row]) -> str:
    """The switch, the link rates, K and the data links' MTU of these rows."""
    r = rows[0]
    rates = sorted({x.bw_mbit or 0.0 for x in rows})
    if len(rates) > 1:
        shape = ", ".join(f"{b:g}" if b else "unshaped" for b in rates) + " Mbit/s"
    else:
        shape = LinkShape(r.bw_mbit, r.delay_ms, 0.0).label()
    ks = sorted({x.k for x in rows})
    mtus = sorted({x.mtu for x in rows})
    return (f"{r.switch} switch, links {shape}, K = {', '.join(map(str, ks))}, "
            f"MTU {', '.join(map(str, mtus))}")  # fmt: skip


# ---------------------------------------------------------------------- single
def single_points(o: Options) -> list[Point]:
    n = (o.workers or (2,))[0]
    loss = (o.loss or (0.0,))[0]
    density = (o.density or (1.0,))[0]
    item = Item(o.elements or 20_000, o.dtype or "float32", o.mode, density)
    return [o.point("single", n, o.shape(loss), [item], program=o.mode, k=o.k(64))]


def single_summary(rows: list[Row]) -> list[str]:
    p4, gl = by(rows, "p4reduce"), by(rows, "gloo")
    if p4 and gl and p4[0].seconds:
        return [f"gloo / p4reduce time: {gl[0].seconds / p4[0].seconds:.2f}"]
    return []


def single_figure(rows: list[Row], path: Path, title: str) -> None:
    series = {"measured": [r.seconds * 1e3 for r in rows]}
    if all(r.link_ms for r in rows):
        series["link time"] = [r.link_ms or 0.0 for r in rows]
    bars([f"{r.backend} {r.mode}" for r in rows], series, path, title=title,
         ylabel="time per all-reduce (ms)")  # fmt: skip


# ---------------------------------------------------------------------- scaling
SCALING_SERIES = (
    (10.0, 256, (2, 4, 8, 16), True),
    (100.0, 256, (2, 4, 8), False),
    (100.0, 1024, (2, 4, 8), True),
)
"""The standard scaling set: (link Mbit/s, K, worker counts, gloo too); where p4src/ does
not build K = 1024, that series runs K = 256 (once). 16 workers only at 10 Mbit/s (at 100
Mbit/s 16 workers would need more than the two cores). gloo runs at every point of its
series, 16 workers included: the points of a series share one stack and one set of gloo
processes, so 16 workers add eight torch processes (about 3 s of CPU and 260 MiB each,
measured) to the series' eight. K = 256 at 100 Mbit/s shows the per-packet cost (four
times the packets of K = 1024, MTU 1500); gloo's ring, which does not depend on K, runs
with the K = 1024 series only. ``--bw``, ``--k`` and ``--workers`` replace the set by
their product (gloo at every point unless ``--no-gloo``)."""
# the worker counts of a series take their timed p4reduce calls in turns (rounds.py): a
# slow stretch of a shared machine then falls on all of them alike, not on one
SCALING_ROUNDS = 3
SCALING_REPEAT = 9  # timed calls per point unless --repeat (3 per round; a call is 0.1-0.4 s)
TARGET_FLAT = 1.15  # p4reduce(8) / p4reduce(2)
TARGET_GLOO = 0.65  # p4reduce(8) / gloo(8); the ideal is (N=8) 1 / (2 * 7 / 8) = 0.57


def scaling_elements(bw: float | None) -> int:
    """A tensor whose link time is a few hundred ms: 256 KiB at 10 Mbit/s (225 ms), 1 M
    floats (4 MiB, a gradient bucket's order of size) faster (341 ms at 100 Mbit/s). Each
    call also has a fixed cost, the priming round trip and the start skew of the workers,
    that grows with N on two shared cores (docs/results.md: about 15 ms at 8 workers);
    a tensor of only a few link-time tens of ms would measure that, not the links."""
    return 65_536 if bw is not None and bw <= 10 else 1_048_576


def scaling_points(o: Options, ks: Sequence[int] = contracts.K_CHOICES) -> list[Point]:
    """``ks``: the K values p4src/ builds (``switches.supported_ks``)."""
    standard = o.bws is None and o.ks is None and o.workers is None
    if standard:
        chosen: dict[tuple[float, int], tuple[tuple[int, ...], bool]] = {}
        for bw, k, ns, gloo in SCALING_SERIES:
            key = (bw, k if k in ks else 256)
            old_ns, old_gloo = chosen.get(key, ((), False))
            chosen[key] = (tuple(sorted({*old_ns, *ns})), old_gloo or gloo)
        series = tuple((bw, k, ns, gloo) for (bw, k), (ns, gloo) in chosen.items())
    else:
        series = tuple(
            (bw, k, o.workers or (2, 4, 8), True)
            for bw in (o.bws or (10.0,)) for k in (o.ks or (256,))
        )  # fmt: skip
    points = []
    for bw, k, workers, gloo in series:
        item = Item(o.elements or scaling_elements(bw or None), "float32", "dense")
        for n in workers:
            point = o.point("scaling", n, o.shape(0.0, bw), [item], k=k, rounds=SCALING_ROUNDS,
                            gloo_items=None if gloo else ())  # fmt: skip
            points.append(replace(point, repeat=o.repeat or SCALING_REPEAT))
    return points


def growth(rows: Sequence[Row]) -> float:
    rows = sorted(rows, key=lambda r: r.workers)
    return rows[-1].seconds / rows[0].seconds if rows and rows[0].seconds else float("nan")


def series_of(rows: Sequence[Row]) -> dict[tuple[float | None, int], list[Row]]:
    """The rows of each (link rate, K) series, in the order they came."""
    out: dict[tuple[float | None, int], list[Row]] = {}
    for r in rows:
        out.setdefault((r.bw_mbit, r.k), []).append(r)
    return out


def scaling_verdicts(rows: Sequence[Row]) -> list[dict[str, object]]:
    """Per (link rate, K): the two targets' ratios where both of their points exist."""
    found = []
    for (bw, k), rs in series_of(rows).items():
        p4 = {r.workers: r for r in by(rs, "p4reduce")}
        gl = {r.workers: r for r in by(rs, "gloo")}
        v: dict[str, object] = {"bw_mbit": bw, "k": k}
        if 2 in p4 and 8 in p4 and p4[2].seconds:
            v["flat"] = p4[8].seconds / p4[2].seconds
        if 8 in p4 and 8 in gl and gl[8].seconds:
            v["vs_gloo"] = p4[8].seconds / gl[8].seconds
        found.append(v)
    return found


def scaling_summary(rows: list[Row]) -> list[str]:
    lines = []
    for (bw, k), rs in series_of(rows).items():
        p4, gl = by(rs, "p4reduce"), by(rs, "gloo")
        if len(p4) < 2:
            continue
        lo, hi = min(r.workers for r in p4), max(r.workers for r in p4)
        rate = f"{bw:g} Mbit/s" if bw else "unshaped"
        lines.append(
            f"{rate}, K = {k}: time from {lo} to {hi} workers: p4reduce x{growth(p4):.2f}"
            + (f", gloo x{growth(gl):.2f}" if len(gl) > 1 else "")
        )
        links = [r.link_ms for r in p4 if r.link_ms]
        if links:
            lines.append(
                f"  p4reduce's link time (a line-rate switch) {min(links):.0f}..{max(links):.0f} ms"
            )
    lines += cpu_lines(rows)
    for v in scaling_verdicts(rows):
        rate = f"{v['bw_mbit']:g} Mbit/s" if v["bw_mbit"] else "unshaped"
        if "flat" in v:
            f = float(v["flat"])  # type: ignore[arg-type]
            ok = "met" if f <= TARGET_FLAT else "MISSED"
            lines.append(f"{rate}, K = {v['k']}: p4reduce(8) / p4reduce(2) = {f:.2f} "
                         f"(target <= {TARGET_FLAT}: {ok})")  # fmt: skip
        if "vs_gloo" in v:
            g = float(v["vs_gloo"])  # type: ignore[arg-type]
            ok = "met" if g <= TARGET_GLOO else "MISSED"
            lines.append(f"{rate}, K = {v['k']}: p4reduce / gloo at 8 workers = {g:.2f} "
                         f"(target <= {TARGET_GLOO}, ideal 0.57: {ok})")  # fmt: skip
    return lines


def cpu_lines(rows: Sequence[Row]) -> list[str]:
    """Where the CPU went per p4reduce call (testbed/cpu.py), one line per point: the
    switch process, the workers together (and their share in the kernel), the machine's
    softirq time (overlapping the two: a softirq is charged to the task it interrupts), the
    busy time nobody of ours accounts for (other load), against the cores' capacity in the
    same wall time; the busiest worker link's frames per second each way; and how often
    the switch and the workers slept and were woken (voluntary context switches), each
    wakeup a cost to the sender that woke them. CPU times hold on a loaded machine, wall
    times do not."""
    out = []
    for r in by(rows, "p4reduce"):
        x = r.extra
        if "cpu_workers_ms" not in x:
            continue
        rate = f"{r.bw_mbit:g} Mbit/s" if r.bw_mbit else "unshaped"
        parts = [f"switch {x['cpu_switch_ms']:.1f}" if "cpu_switch_ms" in x else "",
                 f"workers {x['cpu_workers_ms']:.1f} "
                 f"({x['cpu_workers_sys_ms'] / max(x['cpu_workers_ms'], 1e-9):.0%} kernel)"]  # fmt: skip
        if "cpu_machine_softirq_ms" in x:
            parts += [f"softirq {x['cpu_machine_softirq_ms']:.1f}",
                      f"other {max(x['cpu_other_ms'], 0.0):.1f}",
                      f"of {x['cpu_capacity_ms']:.1f} (all cores)"]  # fmt: skip
        fps = ""
        if "link_tx_fps" in x:
            fps = (f"; busiest link {x['link_tx_fps']:,.0f} frames/s up, "
                   f"{x.get('link_rx_fps', 0.0):,.0f} down")  # fmt: skip
        if "sleeps_switch" in x:
            fps += (f"; wakeups per call: switch {x['sleeps_switch']:,.0f}, "
                    f"workers {x.get('sleeps_workers', 0.0):,.0f}")  # fmt: skip
        out.append(f"{rate}, K = {r.k}, {r.workers} workers, CPU ms per call: "
                   + ", ".join(p for p in parts if p) + fps)  # fmt: skip
    return out


def scaling_figure(rows: list[Row], path: Path, title: str) -> None:
    """One panel per link rate (their times differ by more than the lines' spread), each
    with p4reduce and its line-rate link time per K, and gloo's ring; linear time axes
    from zero, so a flat line looks flat."""
    panels: dict[str, dict[str, tuple[list[float], list[float]]]] = {}
    for (bw, k), rs in series_of(rows).items():
        panel = panels.setdefault(f"{bw:g} Mbit/s" if bw else "unshaped", {})
        for backend in ("p4reduce", "gloo"):
            b = sorted(by(rs, backend), key=lambda r: r.workers)
            if not b:
                continue
            xs = [float(r.workers) for r in b]
            name = f"p4reduce K={k}"
            if backend == "gloo":  # the ring does not depend on K; one line unless run twice
                name = "gloo ring" if "gloo ring" not in panel else f"gloo ring (K={k} run)"
            panel[name] = (xs, [r.seconds * 1e3 for r in b])
            if backend == "p4reduce" and all(r.link_ms for r in b):
                panel[f"line-rate switch K={k}"] = (xs, [r.link_ms or 0.0 for r in b])
    dashed = sorted({n for p in panels.values() for n in p if n.startswith("line-rate")})
    plot_panels(panels, path, title=title, xlabel="workers", xlog=True,
                ylabel="time per all-reduce (ms)", dashed=dashed)  # fmt: skip


# ---------------------------------------------------------------------- loss
LOSS_RETX_MS = 80  # about 4 round trips with 64 packets in flight at 10 Mbit/s (16 ms of
# queue), leaving room for workers that a loaded 2-core machine schedules late (at 40 ms, the
# lossless point already retransmitted there)


def loss_points(o: Options) -> list[Point]:
    """The first retransmission timeout is 80 ms here unless --retx-ms says otherwise: the
    service's default (200 ms) is sized for slow switches, and under loss the time goes
    to waiting for it (docs/results.md shows both). p4reduce only: gloo would start four
    torch processes per loss rate (``-e single --loss P`` runs it beside p4reduce)."""
    n = (o.workers or (4,))[0]
    item = Item(o.elements or 20_000, o.dtype or "int32", "dense")
    return [
        o.point("loss", n, o.shape(p), [item], retx_ms=LOSS_RETX_MS, k=o.k(64), gloo_items=[])
        for p in (o.loss or (0.0, 0.001, 0.01, 0.05))
    ]


def loss_summary(rows: list[Row]) -> list[str]:
    p4 = by(rows, "p4reduce")
    wrong = [r for r in rows if not r.ok]
    lines = [
        "every result exact" if not wrong and all(r.dtype == "int32" for r in p4)
        else ("every result right" if not wrong else f"{len(wrong)} WRONG result(s)")
    ]  # fmt: skip
    base = [r for r in p4 if r.loss == 0]
    if base:
        for r in sorted(p4, key=lambda r: r.loss):
            if r.loss:
                lines.append(
                    f"loss {r.loss:g}: p4reduce x{r.seconds / base[0].seconds:.2f} of lossless, "
                    f"{r.retransmissions:.0f} retransmissions per call"
                )
    return lines


def loss_figure(rows: list[Row], path: Path, title: str) -> None:
    series = {}
    for backend in ("p4reduce", "gloo"):
        rs = sorted(by(rows, backend), key=lambda r: r.loss)
        if rs:
            series[backend] = (list(range(len(rs))), [r.seconds * 1e3 for r in rs])
    labels = [f"{r.loss:g}" for r in sorted(by(rows, "p4reduce"), key=lambda r: r.loss)]
    plot(series, path, title=title, xlabel="loss probability per link and direction",
         categorical=labels)  # fmt: skip


# ---------------------------------------------------------------------- sparsity
DENSITIES = (0.001, 0.01, 0.03, 0.1, 0.3, 1.0)
SPARSE_K = 256
AUTO_SLACK = 1.10  # mode="auto" must be within 10 % of the fastest path
SPARSITY_REPEAT = 9  # timed calls per path and density unless --repeat: the medians of 3
# calls were up to 11 % apart for two paths sending the same packets (docs/results.md)
# below 10 % density a call takes tens of milliseconds, where the machine's noise is largest
# relative to the call (sparse's 9 calls at 0.1 % spanned 12-20 ms): more calls there cost
# a few seconds and steady the medians that auto's 10 % verdict compares
SPARSITY_REPEAT_LOW = 25
LOW_DENSITY = 0.1


def sparsity_repeat(density: float) -> int:
    return SPARSITY_REPEAT_LOW if density < LOW_DENSITY else SPARSITY_REPEAT


PATH_NAMES = {("p4reduce", "sparse"): "p4reduce sparse", ("p4reduce", "dense"): "p4reduce dense",
              ("p4reduce", "auto"): "p4reduce auto", ("gloo", "agsparse"): "AGsparse (gloo)",
              ("gloo", "ring"): "gloo ring (dense)"}  # fmt: skip


def sparsity_points(o: Options) -> list[Point]:
    """p4reduce sparse, dense and auto, and gloo's AGsparse, at every density; gloo's dense
    ring at the lowest and the highest (its traffic does not depend on the zeros)."""
    n = (o.workers or (4,))[0]
    m = o.elements or 131_072
    dt = o.dtype or "float32"
    ds = o.density or DENSITIES

    # the three p4reduce paths of a density run interleaved (one group): a slow stretch of
    # the shared machine then hits all three alike, not the one that happened to run then
    def reps(d: float) -> int:
        return o.repeat or sparsity_repeat(d)

    items = [Item(m, dt, mode, d, group=j, repeat=reps(d)) for j, d in enumerate(ds)
             for mode in ("sparse", "dense", "auto")]  # fmt: skip
    gl = [Item(m, dt, "agsparse", d, repeat=reps(d)) for d in ds]
    gl += [Item(m, dt, "ring", d) for d in sorted({min(ds), max(ds)})]
    loss = (o.loss or (0.0,))[0]
    point = o.point("sparsity", n, o.shape(loss), items, program="sparse", gloo_items=gl,
                    k=o.k(SPARSE_K))  # fmt: skip
    return [replace(point, repeat=o.repeat or SPARSITY_REPEAT)]


def path_name(r: Row) -> str:
    return PATH_NAMES.get((r.backend, r.mode), f"{r.backend} {r.mode}")


def sparsity_table(rows: Sequence[Row]) -> dict[float, dict[str, Row]]:
    """density -> path name -> row; gloo's ring, measured at two densities, is carried to
    every density in between by the nearer measurement (its bytes do not change)."""
    out: dict[float, dict[str, Row]] = {}
    for r in rows:
        out.setdefault(r.density, {})[path_name(r)] = r
    ring = sorted((d, p["gloo ring (dense)"]) for d, p in out.items() if "gloo ring (dense)" in p)
    for d, paths in out.items():
        if ring and "gloo ring (dense)" not in paths:
            paths["gloo ring (dense)"] = min(ring, key=lambda x: abs(x[0] - d))[1]
    return dict(sorted(out.items()))


CANDIDATES = ("p4reduce sparse", "p4reduce dense", "AGsparse (gloo)")


def crossovers(rows: Sequence[Row]) -> list[str]:
    """Where the fastest path changes between neighbouring densities, with the density at
    which the two cross (interpolated on log density)."""
    table_ = sparsity_table(rows)
    names = (*CANDIDATES, "gloo ring (dense)")
    lines = []
    ds = list(table_)
    for a, b in itertools.pairwise(ds):
        for x, y in itertools.combinations(names, 2):
            if not all(n in table_[d] for d in (a, b) for n in (x, y)):
                continue
            da = table_[a][x].seconds - table_[a][y].seconds
            db = table_[b][x].seconds - table_[b][y].seconds
            if da * db < 0:  # the two swap places between a and b
                t = da / (da - db)
                d = math.exp(math.log(a) + t * (math.log(b) - math.log(a)))
                first = x if da < 0 else y
                lines.append(f"{x} and {y} cross at density ~{d:.3g} ({first} faster below)")
    return lines


def auto_verdicts(rows: Sequence[Row]) -> list[tuple[float, str, float, bool]]:
    """Per density: (density, fastest path, auto / fastest, within 10 %)."""
    out = []
    for d, paths in sparsity_table(rows).items():
        cands = [paths[c] for c in CANDIDATES if c in paths]
        if "p4reduce auto" not in paths or not cands:
            continue
        best = min(cands, key=lambda r: r.seconds)
        ratio = paths["p4reduce auto"].seconds / best.seconds if best.seconds else float("nan")
        out.append((d, path_name(best), ratio, ratio <= AUTO_SLACK))
    return out


def sparsity_summary(rows: list[Row]) -> list[str]:
    lines = []
    for d, paths in sparsity_table(rows).items():
        parts = [f"{name} {paths[name].seconds * 1e3:.0f}" for name in (*CANDIDATES,
                 "p4reduce auto", "gloo ring (dense)") if name in paths]  # fmt: skip
        lines.append(f"density {d:g} (ms): " + ", ".join(parts))
    lines += crossovers(rows)
    for d, best, ratio, ok in auto_verdicts(rows):
        lines.append(f"density {d:g}: fastest {best}; auto / fastest = {ratio:.2f} "
                     f"({'within' if ok else 'NOT within'} 10 %)")  # fmt: skip
    return lines


def sparsity_figure(rows: list[Row], path: Path, title: str) -> None:
    table_ = sparsity_table(rows)
    series = {}
    for name in (*CANDIDATES, "p4reduce auto", "gloo ring (dense)"):
        pts = [(d, p[name].seconds * 1e3) for d, p in table_.items() if name in p]
        if pts:
            series[name] = ([d for d, _ in pts], [t for _, t in pts])
    plot(series, path, title=title, xlabel="non-zero block density per worker", xlog=True,
         ylog=True, ylabel="time per all-reduce (ms, log)",
         dashed=["gloo ring (dense)", "p4reduce auto"])  # fmt: skip


EXPERIMENTS: dict[str, Experiment] = {
    e.name: e
    for e in (
        Experiment(
            "single", "one point", ("workers",), single_points, single_summary, single_figure
        ),
        Experiment(
            "scaling",
            "all-reduce time against workers",
            ("workers",),
            scaling_points,
            scaling_summary,
            scaling_figure,
        ),
        Experiment(
            "loss",
            "all-reduce time and exactness under link loss",
            ("loss",),
            loss_points,
            loss_summary,
            loss_figure,
        ),
        Experiment(
            "sparsity",
            "sparse against dense over block density",
            ("density",),
            sparsity_points,
            sparsity_summary,
            sparsity_figure,
        ),
    )  # fmt: skip
}
STANDARD = ("scaling", "sparsity", "loss", "tenants", "training", "accuracy")
"""What ``--experiment standard`` (``make testbed``) runs, in this order."""
