"""``p4reduce testbed --experiment racks``: all-reduce across racks on the leaf-spine testbed
(``leafspine.py``), against gloo's ring on the same hosts and switches (docs/testbed.md,
"Leaf-spine"; docs/results.md, "Across racks").

Shapes (racks x workers per rack): every ``--racks`` R with every ``--per-rack`` W (default
1, 2, 4 racks x 2), plus 2 x 4 when the defaults are used (8 workers both ways: 2 x 4 and
4 x 2). Each shape is one stack; on it p4reduce's int32 and float32 calls, then gloo's ring
on the same tensors, then (with ``--loss``, default 0.01 for the 8-worker shapes) p4reduce
again with that loss on every link. Every result is checked (``runner.check_results``:
int32 exact, float32 within the quantization bound). The summary gives the two figures the
issue asks for: time(most racks) / time(1 rack) at equal workers per rack (target <= 1.15),
and p4reduce / gloo at 8 workers (target <= 0.65).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from .experiments import Options, link_label
from .report import plot, table, write_csv
from .runner import Item, Point, Row, run_points
from .switches import SwitchKind

RACKS, PER_RACK = (1, 2, 4), (2,)
EXTRA_SHAPES = ((2, 4),)  # with the defaults: 8 workers as 2 x 4 beside 4 x 2
LOSS = 0.01
K = 256  # 1,024 payload bytes per packet: header overhead ~9 % (K = 64: ~26 %)
ELEMENTS = 65536
SCALING_TARGET, GLOO_TARGET = 1.15, 0.65


def shapes(racks: Sequence[int] | None, per_rack: Sequence[int] | None) -> list[tuple[int, int]]:
    """(racks, workers per rack) of every stack to run."""
    out = [(r, w) for w in (per_rack or PER_RACK) for r in (racks or RACKS)]
    if racks is None and per_rack is None:
        out += [s for s in EXTRA_SHAPES if s not in out]
    return out


def racks_points(
    o: Options, racks: Sequence[int] | None = None, per_rack: Sequence[int] | None = None
) -> list[Point]:
    m = o.elements or ELEMENTS
    dtypes = (o.dtype,) if o.dtype else ("int32", "float32")
    items = tuple(Item(m, dt) for dt in dtypes)
    k = o.k(K)
    points = []
    for r, w in shapes(racks, per_rack):
        base = o.point("racks", r * w, o.shape(), items, k=k)
        points.append(replace(base, racks=r))
        losses = o.loss if o.loss is not None else ((LOSS,) if r * w == 8 else ())
        for p in (x for x in losses if x > 0):
            lossy = o.point("racks", r * w, o.shape(loss=p), items, gloo_items=(), k=k)
            points.append(replace(lossy, racks=r))
    return points


def summary(rows: Sequence[Row]) -> list[str]:
    def ms(racks: int, w: int, dtype: str, backend: str) -> float | None:
        got = [x.seconds for x in rows if x.extra.get("racks") == racks
               and x.workers == racks * w and x.dtype == dtype and x.backend == backend
               and not x.loss]  # fmt: skip
        return statistics.median(got) if got else None

    out = []
    shapes_ = sorted({(x.extra["racks"], x.workers // x.extra["racks"]) for x in rows})
    for w in sorted({s[1] for s in shapes_}):
        most = max(r for r, ww in shapes_ if ww == w)
        if most == 1 or (1, w) not in shapes_:
            continue
        for dt in sorted({x.dtype for x in rows}):
            a, b = ms(most, w, dt, "p4reduce"), ms(1, w, dt, "p4reduce")
            if a and b:
                verdict = "meets" if a / b <= SCALING_TARGET else "misses"
                out.append(f"{dt}, {w} per rack: time({most} racks) / time(1 rack) = "
                           f"{a / b:.2f} ({verdict} <= {SCALING_TARGET})")  # fmt: skip
    for r, w in shapes_:
        if r * w != 8:
            continue
        for dt in sorted({x.dtype for x in rows}):
            p, g = ms(r, w, dt, "p4reduce"), ms(r, w, dt, "gloo")
            if p and g:
                verdict = "meets" if p / g <= GLOO_TARGET else "misses"
                out.append(f"{dt}, {r} x {w}: p4reduce / gloo ring = {p / g:.2f} "
                           f"({verdict} <= {GLOO_TARGET})")  # fmt: skip
    bad = [x for x in rows if not x.ok]
    out.append(f"{len(rows) - len(bad)} of {len(rows)} results right (int32 exact, float32 "
               "within the bound)")  # fmt: skip
    return out


def figure(rows: Sequence[Row], path: Path, title: str) -> None:
    series: dict[str, tuple[list[float], list[float]]] = {}
    for x in sorted(rows, key=lambda x: (x.extra["racks"], x.workers)):
        name = f"{x.backend} {x.dtype}, {x.workers // x.extra['racks']} per rack"
        if x.loss:
            name += f", loss {x.loss:g}"
        xs, ys = series.setdefault(name, ([], []))
        xs.append(float(x.extra["racks"]))
        ys.append(x.seconds * 1e3)
    plot(series, path, title=title, xlabel="racks", ylabel="time per all-reduce (ms)")


def run_racks(
    opts: Options, switch: SwitchKind, out: Path, say: Callable[[str], None], *, quiet: bool,
    racks: Sequence[int] | None = None, per_rack: Sequence[int] | None = None,
) -> list[Row]:  # fmt: skip
    points = racks_points(opts, racks, per_rack)
    rows = run_points(points, switch, out=out, log=say)
    csv_path, png_path = out / "racks.csv", out / "racks.png"
    write_csv(rows, csv_path)
    title = "racks: all-reduce across racks (ToRs under a spine)\n" + link_label(rows)
    figure(rows, png_path, title)
    if quiet:
        for r in rows:
            print(json.dumps({"experiment": "racks", **r.as_dict()}), flush=True)
        return rows
    print(f"\nracks: all-reduce across racks, ToRs under one spine ({link_label(rows)})")
    for r, dt in sorted({(x.extra["racks"], x.dtype) for x in rows}):
        print(f"-- {r} rack(s), {dt}")
        print(table([x for x in rows if (x.extra["racks"], x.dtype) == (r, dt)],
                    ("workers", "loss")))  # fmt: skip
    for line in summary(rows):
        print(f"  {line}")
    print(f"  wrote {csv_path} and {png_path}", flush=True)
    return rows
