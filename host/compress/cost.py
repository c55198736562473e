"""The cost model that picks, per bucket and step, the collective a compressed gradient
travels by:

- ``"dense"``: a dense all-reduce through the switch; every block travels, the unselected
  ones as zeros: B + min(S, B) packets per worker (float32: priming + every block);
- ``"sparse"``: a sparse all-reduce through the switch; only the union U of the blocks
  some worker selected travels: min(S, B) + U packets per worker;
- ``"allgather"``: an allgather over the process group (gloo) of every worker's
  (index, block) pairs, summed on every worker: n · c · (K + 1) · 4 bytes received per
  worker for c selected blocks.

Each path has a linear model ``seconds = fixed + rate · volume`` (volume: packets for the
switch paths, bytes for the allgather), fitted by least squares to its last ``window``
measurements (through the origin while only one volume was seen). A path never measured
is tried first (in the order of ``paths``), and one whose last measurement is more than
``refresh`` choices old is measured again, so the model follows a network that changes.
Every input is identical on every worker (the timings are the workers' mean, aggregated
with the gradient), so every worker chooses the same path.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

PATHS = ("dense", "sparse", "allgather")


def volumes(
    *, blocks: int, slots: int, union: int, selected: int, n: int, k: int, extra: int = 0
) -> dict[str, float]:
    """The volume each path moves for one collective of ``blocks`` blocks of which
    ``union`` are selected by some worker and ``selected`` by each; ``extra``: elements
    every worker adds to the allgather besides its pairs."""
    active = min(slots, blocks)
    return {
        "dense": float(blocks + active),
        "sparse": float(active + min(union, blocks)),
        "allgather": float(n * (selected * (k + 1) + extra) * 4),
    }


@dataclass
class _Fit:
    samples: deque[tuple[float, float]]
    last_step: int = -1

    def predict(self, volume: float) -> float | None:
        if not self.samples:
            return None
        vs = [v for v, _ in self.samples]
        ts = [t for _, t in self.samples]
        m = len(vs)
        mv, mt = sum(vs) / m, sum(ts) / m
        var = sum((v - mv) ** 2 for v in vs)
        if var > 0:
            rate = sum((v - mv) * (t - mt) for v, t in zip(vs, ts, strict=True)) / var
            fixed = mt - rate * mv
            if rate >= 0 and fixed >= 0:
                return fixed + rate * volume
        # one volume seen (or a fit with a negative part): proportional to the volume
        return mt / mv * volume if mv > 0 else mt


@dataclass
class CostModel:
    """Chooses the cheapest of ``paths`` from measured timings (see the module docstring)."""

    paths: tuple[str, ...] = PATHS
    window: int = 8
    refresh: int = 50
    _fits: dict[str, _Fit] = field(default_factory=dict, repr=False)
    _choices: int = 0
    _pending: set[str] = field(default_factory=set, repr=False)

    def __post_init__(self) -> None:
        bad = [p for p in self.paths if p not in PATHS]
        if bad or not self.paths:
            raise ValueError(f"CostModel paths {self.paths}: a non-empty subset of {PATHS}")
        if self.window < 1 or self.refresh < 0:
            raise ValueError(f"CostModel: window {self.window} ≥ 1, refresh {self.refresh} ≥ 0")
        for p in PATHS:
            self._fits.setdefault(p, _Fit(deque(maxlen=self.window)))

    def observe(self, path: str, volume: float, seconds: float) -> None:
        """One measured collective of ``volume`` on ``path`` that took ``seconds``."""
        fit = self._fits[path]
        fit.samples.append((float(volume), float(seconds)))
        fit.last_step = self._choices
        self._pending.discard(path)

    def predict(self, path: str, volume: float) -> float | None:
        """Estimated seconds of ``path`` for ``volume``; None before any measurement."""
        return self._fits[path].predict(volume)

    def choose(self, vols: dict[str, float], allowed: tuple[str, ...] | None = None) -> str:
        """The path to use for a collective with these volumes (deterministic)."""
        paths = [p for p in self.paths if allowed is None or p in allowed]
        if not paths:
            raise ValueError(f"no path of {self.paths} is allowed ({allowed})")
        self._choices += 1
        # A path's measurement arrives a step after it ran (aggregated with the next
        # step's gradient): one already chosen for measuring is not chosen again for it.
        for p in paths:  # never measured: measure it now
            if not self._fits[p].samples and p not in self._pending:
                self._pending.add(p)
                return p
        if self.refresh:
            stale = [
                p
                for p in paths
                if self._choices - self._fits[p].last_step > self.refresh and p not in self._pending
            ]
            if stale:
                p = min(stale, key=lambda p: self._fits[p].last_step)
                self._pending.add(p)
                return p
        known = [p for p in paths if self._fits[p].samples]
        if not known:  # every path is being measured: the first
            return paths[0]
        costs = {p: self.predict(p, vols[p]) for p in known}
        return min(known, key=lambda p: (costs[p], paths.index(p)))
