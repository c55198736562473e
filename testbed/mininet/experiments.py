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

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .report import bars, plot
from .runner import Item, Point, Row
from .stack import LinkShape


@dataclass(frozen=True)
class Options:
    """The command line, with None where the user left an experiment's default."""

    workers: tuple[int, ...] | None = None
    bw: float | None = 10.0
    delay_ms: float | None = None
    loss: tuple[float, ...] | None = None
    elements: int | None = None
    density: tuple[float, ...] | None = None
    mode: str = "dense"
    dtype: str | None = None
    repeat: int = 3
    warmup: int = 1
    seed: int = 0
    k: int = 64
    slots: int = 64
    gloo: bool = True
    retx_ms: int | None = None
    timeout: float = 300.0

    def shape(self, loss: float = 0.0) -> LinkShape:
        return LinkShape(bw=self.bw or None, delay_ms=self.delay_ms or None, loss=loss)

    def point(self, experiment: str, workers: int, shape: LinkShape, items: Sequence[Item],
              *, program: str = "dense", gloo_items: Sequence[Item] | None = None,
              retx_ms: int | None = None) -> Point:  # fmt: skip
        gl = None if gloo_items is None else tuple(gloo_items)
        return Point(
            experiment, workers, shape, tuple(items), program=program,
            gloo_items=gl if self.gloo else (), repeat=self.repeat, warmup=self.warmup,
            seed=self.seed, k=self.k, slots=self.slots, retx_ms=self.retx_ms or retx_ms,
            timeout=self.timeout,
        )  # fmt: skip


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
    r = rows[0]
    shape = LinkShape(r.bw_mbit, r.delay_ms, 0.0).label()
    return f"{r.switch} switch, links {shape}"


# ---------------------------------------------------------------------- single
def single_points(o: Options) -> list[Point]:
    n = (o.workers or (2,))[0]
    loss = (o.loss or (0.0,))[0]
    density = (o.density or (1.0,))[0]
    item = Item(o.elements or 20_000, o.dtype or "float32", o.mode, density)
    return [o.point("single", n, o.shape(loss), [item], program=o.mode)]


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
def scaling_points(o: Options) -> list[Point]:
    item = Item(o.elements or 50_000, "float32", "dense")
    return [o.point("scaling", n, o.shape(), [item]) for n in (o.workers or (2, 4, 6, 8))]


def growth(rows: Sequence[Row]) -> float:
    rows = sorted(rows, key=lambda r: r.workers)
    return rows[-1].seconds / rows[0].seconds if rows and rows[0].seconds else float("nan")


def scaling_summary(rows: list[Row]) -> list[str]:
    p4, gl = by(rows, "p4reduce"), by(rows, "gloo")
    if len(p4) < 2:
        return []
    lo, hi = min(r.workers for r in p4), max(r.workers for r in p4)
    g = growth(p4)
    lines = [f"time from {lo} to {hi} workers: p4reduce x{g:.2f}"
             + (f", gloo x{growth(gl):.2f}" if len(gl) > 1 else "")]  # fmt: skip
    verdict = (
        "independent of the worker count" if g < 1.25 else "NOT independent of the worker count"
    )
    lines.append(
        f"p4reduce's time is {verdict} here (SwitchML's claim, on a line-rate switch, is x1.0)"
    )
    links = [r.link_ms for r in sorted(p4, key=lambda r: r.workers) if r.link_ms]
    if links:
        lines.append(
            "its link time (what a line-rate switch would leave) stays "
            f"{min(links):.0f}..{max(links):.0f} ms: the growth is the embedded switch, which "
            "handles every packet of every worker in one Python process"
        )
    return lines


def scaling_figure(rows: list[Row], path: Path, title: str) -> None:
    series = {}
    for backend in ("p4reduce", "gloo"):
        rs = sorted(by(rows, backend), key=lambda r: r.workers)
        if rs:
            series[f"{backend} (measured)"] = (
                [r.workers for r in rs],
                [r.seconds * 1e3 for r in rs],
            )
            if all(r.link_ms for r in rs):
                series[f"{backend} link time"] = ([r.workers for r in rs], [r.link_ms for r in rs])
    plot(series, path, title=title, xlabel="workers",
         dashed=[k for k in series if k.endswith("link time")])  # fmt: skip


# ---------------------------------------------------------------------- loss
LOSS_RETX_MS = 40  # about twice the round trip with 64 packets in flight at 10 Mbit/s


def loss_points(o: Options) -> list[Point]:
    """The first retransmission timeout is 40 ms here unless --retx-ms says otherwise: the
    service's default (200 ms) is sized for slow switches, and under loss the time goes
    to waiting for it (docs/results.md shows both)."""
    n = (o.workers or (4,))[0]
    item = Item(o.elements or 20_000, o.dtype or "int32", "dense")
    return [
        o.point("loss", n, o.shape(p), [item], retx_ms=LOSS_RETX_MS)
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
DENSITIES = (0.01, 0.05, 0.1, 0.25, 0.5, 1.0)


def sparsity_points(o: Options) -> list[Point]:
    n = (o.workers or (4,))[0]
    m = o.elements or 100_000
    dt = o.dtype or "float32"
    items = [Item(m, dt, mode, d) for d in (o.density or DENSITIES) for mode in ("sparse", "dense")]
    loss = (o.loss or (0.0,))[0]
    return [o.point("sparsity", n, o.shape(loss), items, program="sparse",
                    gloo_items=[Item(m, dt, "dense", 1.0)])]  # fmt: skip


def sparsity_summary(rows: list[Row]) -> list[str]:
    sp = {r.density: r for r in by(rows, "p4reduce", "sparse")}
    de = {r.density: r for r in by(rows, "p4reduce", "dense")}
    lines = []
    for d in sorted(sp):
        if d in de and sp[d].seconds:
            lines.append(
                f"density {d:g}: sparse {sp[d].seconds * 1e3:.0f} ms, dense "
                f"{de[d].seconds * 1e3:.0f} ms, speed-up x{de[d].seconds / sp[d].seconds:.2f}"
            )
    return lines


def sparsity_figure(rows: list[Row], path: Path, title: str) -> None:
    series = {}
    for mode in ("sparse", "dense"):
        rs = sorted(by(rows, "p4reduce", mode), key=lambda r: r.density)
        if rs:
            series[f"p4reduce {mode}"] = ([r.density for r in rs], [r.seconds * 1e3 for r in rs])
    gl = by(rows, "gloo")
    if gl and series:
        xs = sorted({r.density for r in by(rows, "p4reduce")})
        series["gloo ring (density 1)"] = ([xs[0], xs[-1]], [gl[0].seconds * 1e3] * 2)
    plot(series, path, title=title, xlabel="non-zero block density", xlog=True,
         dashed=["gloo ring (density 1)"])  # fmt: skip


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
STANDARD = ("scaling", "loss", "sparsity")
