"""Results of the Mininet experiments: the printed table, the CSV and the PNG figure."""

from __future__ import annotations

import csv
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .runner import Row

COLUMNS = (
    ("bw_mbit", "Mbit/s", "{:g}"),
    ("k", "K", "{:d}"),
    ("workers", "workers", "{:d}"),
    ("loss", "loss", "{:g}"),
    ("density", "density", "{:g}"),
    ("backend", "backend", "{}"),
    ("mode", "mode", "{}"),
    ("seconds", "ms", "{:.1f}"),
    ("seconds_min", "min ms", "{:.1f}"),
    ("seconds_max", "max ms", "{:.1f}"),
    ("link_ms", "link ms", "{:.1f}"),
    ("goodput_mbit", "goodput", "{:.2f}"),
    ("packets", "packets", "{:.0f}"),
    ("retransmissions", "retx", "{:.0f}"),
    ("ok", "ok", "{}"),
)
SCALE = {"seconds": 1e3, "seconds_min": 1e3, "seconds_max": 1e3}
# Characters of a 10-point title line that fit a 6.4-inch figure (the conditions line of a
# figure can be twice as long: wrapped, not cut off at the figure's edge).
TITLE_CHARS = 80


def wrap_title(title: str, width: int = TITLE_CHARS) -> str:
    """Each line of ``title`` wrapped to at most ``width`` characters where it can be: at
    ", " (a condition is kept whole), else at spaces."""
    out = []
    for line in title.split("\n"):
        cur = ""
        for part in line.split(", "):
            if cur and len(cur) + 2 + len(part) > width:
                out.append(cur + ",")
                cur = part
            else:
                cur = f"{cur}, {part}" if cur else part
        out += textwrap.wrap(cur, width) or [cur]
    return "\n".join(out)


def cell(row: Row, key: str, fmt: str) -> str:
    value = getattr(row, key, None)
    if value is None:
        return "-"
    if key == "ok":
        if not value:
            return "WRONG"
        return "exact" if row.dtype == "int32" and row.mode != "ddp" else "yes"
    if key in ("packets", "retransmissions") and row.backend != "p4reduce":
        return "-"
    return fmt.format(value * SCALE.get(key, 1))


def table(rows: Sequence[Row], keys: Sequence[str]) -> str:
    """A plain-text table: the varying parameters ``keys`` first, then the measurements."""
    cols = [c for c in COLUMNS if c[0] in keys] + [
        c for c in COLUMNS if c[0] not in ("workers", "loss", "density", "bw_mbit", "k")
    ]
    cells = [[h for _, h, _ in cols]] + [[cell(r, k, f) for k, _, f in cols] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(cols))]
    return "\n".join(
        "  ".join(
            c.rjust(w) if i else c.ljust(w)
            for i, (c, w) in enumerate(zip(line, widths, strict=True))
        )
        for line in cells
    )


def save_figure(fig: Any, path: Path) -> None:
    """Write a matplotlib figure as the experiments' PNGs are written, then free it."""
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_csv(rows: Sequence[Row], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    dicts = [r.as_dict() for r in rows]
    names = list(dict.fromkeys(k for d in dicts for k in d))
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=names)
        w.writeheader()
        w.writerows(dicts)


def plot(
    series: dict[str, tuple[Sequence[float], Sequence[float]]], path: Path, **options: Any
) -> None:
    """One line per series name: (x values, y values), in one panel; ``options`` are
    ``plot_panels``'s (``title``, ``xlabel``, ``dashed`` for the computed series, ...)."""
    plot_panels({"": series}, path, **options)


def plot_panels(
    panels: dict[str, dict[str, tuple[Sequence[float], Sequence[float]]]],
    path: Path,
    *,
    title: str,
    xlabel: str,
    ylabel: str = "time per all-reduce (ms)",
    xlog: bool = False,
    ylog: bool = False,
    dashed: Sequence[str] = (),
    categorical: Sequence[str] | None = None,
) -> None:
    """``plot`` with one panel per name of ``panels``, side by side, each with its own y
    axis (series of different scales, e.g. one per link rate, stay readable)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = max(1, len(panels))
    # constrained layout makes room for a title of several lines (wrap_title)
    fig, axes = plt.subplots(1, n, figsize=(6.4 if n == 1 else 4.6 * n, 4.2),
                             layout="constrained", squeeze=False)  # fmt: skip
    # one colour per series name across the panels
    names = list(dict.fromkeys(n for series in panels.values() for n in series))
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = {n: palette[i % len(palette)] for i, n in enumerate(names)}
    for ax, (name, series) in zip(axes[0], panels.items(), strict=False):
        _draw(ax, series, colors, xlog=xlog, ylog=ylog, dashed=dashed, categorical=categorical)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        if name:
            ax.set_title(name, fontsize=9)
    if n == 1:
        axes[0][0].set_title(wrap_title(title), fontsize=10)
    else:
        fig.suptitle(wrap_title(title, TITLE_CHARS * n * 2 // 3), fontsize=10)
    save_figure(fig, path)


def _draw(
    ax: Any,  # a matplotlib Axes (matplotlib is imported only when plotting)
    series: dict[str, tuple[Sequence[float], Sequence[float]]],
    colors: dict[str, str],
    *,
    xlog: bool,
    ylog: bool,
    dashed: Sequence[str],
    categorical: Sequence[str] | None,
) -> None:
    for name, (xs, ys) in series.items():
        style = "--" if name in dashed else "-"
        ax.plot(list(xs), list(ys), style, marker="o", label=name, color=colors.get(name))
    if categorical is not None:
        ax.set_xticks(range(len(categorical)), list(categorical))
    if xlog:
        ax.set_xscale("log")
        xs_all = sorted({x for xs, _ in series.values() for x in xs})
        if xs_all and all(float(x).is_integer() for x in xs_all):
            from matplotlib.ticker import NullFormatter

            ax.set_xticks(xs_all, [f"{x:g}" for x in xs_all])
            ax.xaxis.set_minor_formatter(NullFormatter())
    if ylog:
        ax.set_yscale("log")
    else:
        ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7)


def bars(
    groups: Sequence[str],
    series: dict[str, Sequence[float]],
    path: Path,
    *,
    title: str,
    ylabel: str,
) -> None:
    """Grouped bars: one group per name in ``groups``, one bar per series in each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    width = 0.8 / max(1, len(series))
    for i, (name, ys) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        ax.bar(xs, list(ys), width, label=name)
        for x, y in zip(xs, ys, strict=True):
            ax.annotate(f"{y:.0f}", (x, y), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_ylabel(ylabel)
    ax.set_title(wrap_title(title), fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    save_figure(fig, path)
