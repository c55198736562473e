"""Interleaved rounds: the p4reduce calls of the points of one batch, taken in turns.

The scaling ratio p4reduce(8) / p4reduce(2) divides two medians that were measured one
after the other. On a shared 2-core VM a slow stretch of a few seconds (another tenant of
the host, the host's own housekeeping) lands on one point and not the other, and the ratio
swung by ±0.2 between runs of the same code (docs/results.md). So the points of a batch run
their timed calls in ``rounds`` turns: round 0 of every point in order, then round 1, ...
Each round of a point is a job of its own, with an equal share of the point's calls, its
own join and ``warmup`` untimed calls (so that no round's first call pays for a new
session), and its own worker processes, started once the previous job's have ended
(runner.run_batch): first tried with one process per host for all rounds, the 2-worker
rounds ran beside the larger point's hosts leaving and joining, and took 108 ms where they
took 92 alone. Afterwards the rounds' lines become one point again: calls renumbered in
order, and each worker's CPU windows (testbed/cpu.py) added up.

Job ids: a point's own id for round 0, and ``id + ROUND_STRIDE * r`` for round r.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from .. import cpu
from ..local import WorkerResult

ROUND_STRIDE = 1000  # job ids of later rounds: above every point's own id (1, 2, ...)


def shares(total: int, rounds: int) -> list[int]:
    """``total`` calls over at most ``rounds`` rounds, as even as they go, none empty."""
    rounds = max(1, min(rounds, total))
    return [total // rounds + (1 if r < total % rounds else 0) for r in range(rounds)]


def round_items(items: Sequence[Any], repeat: int, rounds: int, r: int) -> tuple[Any, ...] | None:
    """The items of round ``r`` (each with its share of the calls as ``repeat``), or None
    when the point has fewer rounds. ``items`` are runner.Item (``repeat`` None: the
    point's ``repeat``)."""
    out = []
    for it in items:
        parts = shares(it.repeat or repeat, rounds)
        if r >= len(parts):
            return None
        out.append(replace(it, repeat=parts[r]))
    return tuple(out)


def round_job(job: int, r: int) -> int:
    return job + ROUND_STRIDE * r


def merge(per_round: Sequence[Sequence[WorkerResult]]) -> list[WorkerResult]:
    """One point's workers' results from its rounds' (in round order, ranks in order in
    each): lines with their calls renumbered across the rounds, and each worker's CPU
    windows added into one, on its last line of the item."""
    merged = []
    for rank_results in zip(*per_round, strict=True):
        first = rank_results[0]
        lines: list[dict[str, Any]] = []
        offset: dict[int, int] = {}
        windows: dict[int, list[dict[str, float]]] = {}
        for res in rank_results:
            seen: dict[int, int] = {}
            for ln in res.lines:
                item = ln["item"]
                new = {k: v for k, v in ln.items() if k != "cpu"}
                new["call"] = offset.get(item, 0) + ln["call"]
                seen[item] = max(seen.get(item, 0), ln["call"] + 1)
                if "cpu" in ln:
                    windows.setdefault(item, []).append(ln["cpu"])
                lines.append(new)
            for item, n in seen.items():
                offset[item] = offset.get(item, 0) + n
        for item, ws in windows.items():
            last = max((ln for ln in lines if ln["item"] == item), key=lambda ln: ln["call"])
            last["cpu"] = cpu.combine(ws)
        bad = next((res for res in rank_results if res.returncode != 0), None)
        merged.append(
            WorkerResult(
                first.rank,
                bad.returncode if bad else 0,
                lines,
                "; ".join(res.error for res in rank_results if res.error),
            )
        )
    return merged
