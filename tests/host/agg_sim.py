"""A deterministic event-loop simulator: n protocol sessions, the model switch and a lossy
network between them, on a virtual clock.

Every packet gets a random delay, may be lost on the way up or down, and may be
duplicated. Results reorder freely. Worker packets reorder across workers and across
slots, but one worker's packets to one slot arrive in the order they were sent (FIFO per
worker and slot): the switch rules cannot tell a late copy of use u from a contribution
once use u + 1 has cleared the worker's bit (docs/host.md, "What the network must
keep"), so the simulator keeps the order a single path keeps. Timers fire exactly at the
deadlines the calls ask for (SetTimer).
Each worker runs its queue of tensors back to back: when a call finishes it starts the
next one at the same instant, so workers drift apart across calls as they would for real.
"""

from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field

import numpy as np
from agg_model import ModelSwitch
from p4reduce.host.protocol import Call, Done, Failed, Send, Session, SetTimer


@dataclass
class Outcome:
    call_id: int
    done: bool
    time: float
    result: np.ndarray | None
    error: Exception | None
    stats: object


@dataclass
class Worker:
    session: Session
    queue: list[np.ndarray] = field(default_factory=list)
    call: Call | None = None
    deadline: float | None = None
    outcomes: list[Outcome] = field(default_factory=list)
    silent: bool = False  # drops everything it would send and everything sent to it


class Sim:
    def __init__(
        self,
        switch: ModelSwitch,
        sessions: list[Session],
        *,
        seed: int = 0,
        loss_up: float = 0.0,
        loss_down: float = 0.0,
        dup: float = 0.0,
        delay: tuple[float, float] = (1e-4, 2e-3),
    ) -> None:
        self.switch = switch
        self.workers = [Worker(s) for s in sessions]
        self.rng = random.Random(seed)
        self.loss_up, self.loss_down, self.dup, self.delay = loss_up, loss_down, dup, delay
        self.now = 0.0
        self._q: list[tuple[float, int, str, int, bytes | float]] = []
        self._seq = 0
        self._fifo: dict[tuple[int, int], float] = {}  # (rank, slot) -> last arrival upward
        self.delivered_up = 0

    # ------------------------------------------------------------ driving

    def enqueue(self, rank: int, tensors: list[np.ndarray]) -> None:
        """Give worker ``rank`` tensors to all-reduce, one call after the other."""
        w = self.workers[rank]
        w.queue.extend(tensors)
        if w.call is None or w.call.state == "done" or w.session.current is not w.call:
            self._next_call(rank)

    def resume(self, rank: int) -> None:
        w = self.workers[rank]
        assert w.call is not None
        self._apply(rank, w.call.resume(self.now))

    def run(self, until: float = float("inf"), max_events: int = 1_000_000) -> None:
        """Process events until none is left or the clock would pass ``until``; more than
        ``max_events`` events means a livelock (AssertionError)."""
        q = self._q
        events = 0
        while q and q[0][0] <= until:
            events += 1
            assert events <= max_events, f"more than {max_events} events: livelock?"
            t, _, kind, rank, data = heapq.heappop(q)
            self.now = max(self.now, t)
            w = self.workers[rank]
            if kind == "up":
                if w.silent:
                    continue
                self.delivered_up += 1
                for dest, res in self.switch.receive(rank, data):  # type: ignore[arg-type]
                    self._transmit("down", dest, res, self.loss_down)
            elif kind == "down":
                if w.call is not None and not w.silent:
                    self._apply(rank, w.call.on_packet(data, self.now))  # type: ignore[arg-type]
            elif kind == "timer":
                if w.call is not None and w.deadline == data:
                    self._apply(rank, w.call.on_timer(self.now))
        if until != float("inf"):
            self.now = max(self.now, until)

    def busy(self) -> bool:
        return any(w.call is not None and w.call.state == "running" for w in self.workers)

    # ------------------------------------------------------------ internals

    def _push(self, t: float, kind: str, rank: int, data: bytes | float) -> None:
        self._seq += 1
        heapq.heappush(self._q, (t, self._seq, kind, rank, data))

    def _transmit(self, kind: str, rank: int, data: bytes, loss: float) -> None:
        copies = 2 if self.rng.random() < self.dup else 1
        for _ in range(copies):
            if self.rng.random() < loss:
                continue
            t = self.now + self.rng.uniform(*self.delay)
            if kind == "up":
                key = (rank, int.from_bytes(data[4:6], "big") & 0x7FFF)
                t = max(t, self._fifo.get(key, 0.0))
                self._fifo[key] = t
            self._push(t, kind, rank, data)

    def _next_call(self, rank: int) -> None:
        w = self.workers[rank]
        if not w.queue:
            return
        w.call = w.session.allreduce(w.queue.pop(0))
        self._apply(rank, w.call.start(self.now))

    def _apply(self, rank: int, actions: list) -> None:
        w = self.workers[rank]
        for a in actions:
            if isinstance(a, Send):
                if not w.silent:
                    self._transmit("up", rank, a.data, self.loss_up)
            elif isinstance(a, SetTimer):
                w.deadline = a.deadline
                if a.deadline is not None:
                    self._push(a.deadline, "timer", rank, a.deadline)
            elif isinstance(a, Done):
                assert w.call is not None
                w.outcomes.append(Outcome(w.call.call_id, True, self.now, a.result, None, a.stats))
                w.deadline = None
                self._next_call(rank)
            elif isinstance(a, Failed):
                assert w.call is not None
                w.outcomes.append(Outcome(w.call.call_id, False, self.now, None, a.error, a.stats))
                w.deadline = None
            else:  # pragma: no cover
                raise AssertionError(f"unknown action {a!r}")
