"""The native protocol core: ``NativeDenseCall`` and ``NativeSparseCall`` run the per-event
work of a call (result parsing and filtering, quantizing the next block, building packets,
timers) in C (``host/_engine/``), with the same events and the same actions as the
Python core, which stays the specification.

Each is the Python call class itself (so the vectorised per-call set-up, the block
exponents and non-finite bits, the non-zero bitmap, sparse's next-block tables, is the
same code) with the event methods handed to a ``_engine_c.Core`` made when the call starts
(its ``call_id`` is known then). The core writes the result rows (dequantized, or NaN/±Inf,
as each result arrives, as ``Call._store`` does), the agreed exponents and the results'
non-finite bits into this object's own arrays, with the dequantization tables of
``quantize._tables``.

``Session(engine="native")`` makes these; ``available()`` says whether the module was
built (``make install`` / ``pip install -e .``: setup.py compiles it). Without it the
session falls back to the Python core with a one-line warning.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import numpy as np

from ... import contracts
from .. import quantize
from .dense import DenseCall
from .events import Action, Done, Failed, Send, SetTimer, StuckSlot
from .sparse import SparseCall

log = logging.getLogger("p4reduce.host")

try:
    from .. import _engine_c as _C
except ImportError as _err:  # a source checkout that was never built
    _C = None
    _WHY = str(_err)
else:
    _WHY = ""

# the C core's ST_* and S_* enums follow these (contracts.h is generated from the same spec)
_STATES = contracts.CALL_STATES
# a group's state when one core is in it: broken first, then failed (_group_state)
_SEVERE = (_STATES.index("broken"), _STATES.index("failed"))
_STAT_FIELDS = contracts.CALL_STAT_FIELDS
_EMPTY_U8 = np.zeros(0, dtype=np.uint8)
_EMPTY_I64 = np.zeros(0, dtype=np.int64)
_EMPTY_F32 = np.zeros(0, dtype=np.float32)
_EMPTY_F64 = np.zeros(0, dtype=np.float64)
_warned = False


def available() -> bool:
    """Whether the native core was compiled (``_engine_c`` imports)."""
    return _C is not None


def unavailable_notice() -> None:
    """The one-line notice when a native session falls back to the Python core."""
    global _warned
    if not _warned:
        _warned = True
        log.warning("p4reduce: native protocol core not built (%s); using the Python core", _WHY)


class _Native:
    """The event methods of ``Call``, run by the C core. Mixed into the Python classes."""

    _core: Any = None

    def _make_core(self, lo: int = 0, hi: int = -1) -> Any:
        c: Any = self
        ses = c.session
        pol = c._retry
        sparse = isinstance(self, SparseCall)
        tab = quantize._tables(ses.n) if c.is_float else None
        if not c._result.flags.c_contiguous:  # never: _result_rows makes it so
            raise ValueError(f"call {c.call_id}: the result rows are not C-contiguous")
        if c.is_float:
            c.blocks = np.ascontiguousarray(c.blocks, dtype=np.float32)
        agreed = c._class_agreed if sparse else getattr(c, "_agreed", _EMPTY_U8)
        return _C.Core(  # type: ignore[union-attr]
            sparse=sparse,
            is_float=c.is_float,
            msg_type=ses.msg_type,
            rank=ses.rank,
            job_id=ses.job_id,
            job_key=ses.job_key,
            call_id=c.call_id,
            n=ses.n,
            k=c.k,
            slots=c.nslots,
            blocks_count=c.nblocks,
            active=c.active,
            initial=pol.initial_timeout,
            multiplier=pol.multiplier,
            max_timeout=pol.max_timeout,
            give_up=pol.give_up_after,
            max_attempts=-1 if pol.max_attempts is None else pol.max_attempts,
            sets=ses._sets,
            blocks=c.blocks if c.is_float else _EMPTY_U8,
            be=_EMPTY_U8 if c.is_float else np.ascontiguousarray(c._be),
            own=c._own if c.is_float else _EMPTY_U8,
            nonzero=np.ascontiguousarray(c._nonzero, dtype=np.uint8),
            agreed=agreed,
            after=np.ascontiguousarray(c._after, dtype=np.int64) if sparse else _EMPTY_I64,
            first_nonzero=(
                np.ascontiguousarray(c._first_nonzero, dtype=np.int64) if sparse else _EMPTY_I64
            ),
            class_own=np.ascontiguousarray(c._class_own) if sparse else _EMPTY_U8,
            result=c._result,
            q_mode=tab.q_mode if tab is not None else 0,
            q_table=tab.q_table if tab is not None else _EMPTY_U8,
            regular_from=tab.q_regular_from if tab is not None else 0,
            # quantize.dequantize's kernel arguments: float32 scale (power-of-two n) or not
            d_f32=tab is not None and tab.p is not None,
            d_scale=tab.d_scale if tab is not None and tab.p is not None else _EMPTY_F32,
            d_mul64=tab.d_mul64 if tab is not None else _EMPTY_F64,
            d_regular_from=tab.d_regular_from if tab is not None else 0,
            nf=np.ascontiguousarray(c._nf) if c.is_float else None,
            nf_out=c._nf_out if c.is_float else None,
            lo=lo,
            hi=hi,
        )

    # ------------------------------------------------------------ events

    _group: tuple[Any, ...] | None = None  # the cores of a call run by several threads

    def _the_core(self) -> Any:
        # Made at the first event, when the session has given the call its number.
        if self._group is not None:
            raise RuntimeError(
                f"call {getattr(self, 'call_id', '?')} runs on {len(self._group)} driver "
                "threads: only the native driver (run_native) drives it"
            )
        if self._core is None:
            self._core = self._make_core()
        return self._core

    def _the_group(self, threads: int) -> tuple[Any, ...] | None:
        """At the driver's start: ``threads`` cores over disjoint, contiguous, ascending
        slot ranges of the window (None: one core does, with fewer than two slots each
        thread could own)."""
        if self._group is None and self._core is None:
            active: int = self.active  # type: ignore[attr-defined]
            t = min(threads, active, _C.MAX_THREADS)  # type: ignore[union-attr]
            if t > 1:
                cuts = [active * i // t for i in range(t + 1)]
                self._group = tuple(self._make_core(cuts[i], cuts[i + 1]) for i in range(t))
        return self._group

    def start(self, now: float) -> list[Action]:
        c: Any = self
        if c.state != "new":
            raise RuntimeError(f"call {c.call_id} already started ({c.state})")
        return self._actions(self._the_core().start(now), now)

    def on_packet(self, data: bytes, now: float) -> list[Action]:
        return self._actions(self._the_core().on_packet(data, now), now)

    def on_timer(self, now: float) -> list[Action]:
        return self._actions(self._the_core().on_timer(now), now)

    def resume(self, now: float) -> list[Action]:
        c: Any = self
        if c.state != "failed":
            raise RuntimeError(f"call {c.call_id} is {c.state}: only a failed call resumes")
        c.error = None
        return self._actions(self._the_core().resume(now), now)

    def _cores(self) -> tuple[Any, ...]:
        if self._group is not None:
            return self._group
        return () if self._core is None else (self._core,)

    def next_deadline(self) -> float | None:
        dls = [d for d in (core.next_deadline() for core in self._cores()) if d is not None]
        return min(dls) if dls else None

    def outstanding(self, now: float) -> list[StuckSlot]:
        return [_slot(d, now) for core in self._cores() for d in core.outstanding()]

    # ------------------------------------------------------------ the native driver

    def run_native(self, fd: int, mode: int, budget: float) -> tuple[Action | None, Any]:
        """Run the call on socket ``fd`` in C with the GIL released, for at most ``budget``
        seconds: mode 0 starts it, 1 resumes it, 2 goes on. Returns the ending action
        (``Done`` / ``Failed``, None while it runs) and the socket's counters (sent,
        bytes_sent, received, bytes_received, queued, dropped, [(errno, count)]).

        With the session's ``threads`` > 1 the call is split at its start into that many
        cores over disjoint slot ranges, each run by its own thread (``_engine_c.run_group``;
        docs/host.md, "Several driver threads")."""
        c: Any = self
        if mode == 0 and c.state != "new":
            raise RuntimeError(f"call {c.call_id} already started ({c.state})")
        if mode == 1:
            if c.state != "failed":
                raise RuntimeError(f"call {c.call_id} is {c.state}: only a failed call resumes")
            c.error = None
        group = self._the_group(getattr(c.session, "threads", 1)) if mode == 0 else self._group
        if group is not None:
            ended, end, io = _C.run_group(group, fd, mode, budget)  # type: ignore[union-attr]
        else:
            ended, end, io = self._the_core().run(fd, mode, budget)
        acts = self._actions([end] if ended else [], time.monotonic())
        return (acts[-1] if acts else None), io

    # ------------------------------------------------------------ internals

    def _actions(self, raw: list[tuple], now: float) -> list[Action]:
        c: Any = self
        cores = self._cores()
        st = c.stats
        if len(cores) == 1:
            for name, v in zip(_STAT_FIELDS, cores[0].stats(), strict=True):
                setattr(st, name, v)
            c.state = _STATES[cores[0].state]
        else:  # the call's counters are its cores' sums; its state the most severe one's
            for name, *vs in zip(_STAT_FIELDS, *(core.stats() for core in cores), strict=True):
                setattr(st, name, sum(vs))
            c.state = _group_state([core.state for core in cores])
        acts: list[Action] = []
        for a in raw:
            kind = a[0]
            if kind == "send":
                acts.append(Send(a[1], a[2], a[3]))
            elif kind == "timer":
                acts.append(SetTimer(a[1]))
            elif kind == "done":
                acts.append(self._done())
            elif kind == "timeout":
                stuck = tuple(_slot(d, now) for d in a[1])
                flight = tuple(_slot(d, now) for d in a[2])
                err = c._timeout_error(stuck, flight)
                c.error = err
                acts.append(Failed(err, st))
            else:  # "protocol"
                err = c._protocol_error(a[1])
                c.error = err
                acts.append(Failed(err, st))
        return acts

    def _done(self) -> Done:
        """Call._finish, once the core has every sum (it did the timers and the state)."""
        c: Any = self
        flat = c._assemble().reshape(-1)
        result = flat[: c.m].reshape(c.shape)
        c.result = result
        c.blocks = c.blocks[:0]  # the core keeps its own reference until it goes
        c._be = None
        return Done(result, c.stats)


def _group_state(states: list[int]) -> str:
    """The state of a call run by several cores: broken or failed if one core is (the
    others were stopped with it), new or done if all are, else running."""
    for st in _SEVERE:
        if st in states:
            return _STATES[st]
    if all(st == states[0] for st in states):
        return _STATES[states[0]]
    return "running"


def _slot(d: tuple, now: float) -> StuckSlot:
    slot, set_, block, priming, attempts, first = d
    return StuckSlot(
        slot=slot,
        set=set_,
        block=block,
        priming=priming,
        attempts=attempts,
        waiting=max(0.0, now - first),
    )


Native = _Native  # what the runner looks for


class NativeDenseCall(_Native, DenseCall):
    """A ``DenseCall`` whose events run in the native core."""


class NativeSparseCall(_Native, SparseCall):
    """A ``SparseCall`` whose events run in the native core."""
