"""The threads that complete collectives, and the clock that bounds them.

A session's one background thread runs its calls, one after another; it must never run
anything else that could wait, because torch runs ``Future.then`` callbacks inline on the
thread that completes a future, and callbacks issue collectives and wait for them
(PowerSGD's do: ``dist.all_reduce(..., async_op=True).get_future().wait()``). Completed on
the session's thread, such a callback waits for a call queued behind itself: a hang for
ever. So:

- ``deliver(task)``: completions (copying staged results back, setting the future, and so
  the user's callbacks) run on delivery threads, which never run a session call. A task
  goes to an idle delivery thread, or to a new one when every one is busy — e.g. blocked
  in a callback that waits for the next collective, whose completion then gets a thread
  of its own. So no completion ever waits behind a callback, and chains of callbacks that
  wait for collectives complete at any depth; the thread count is the depth of the
  deepest such chain plus one. Idle threads end after ``IDLE_SECONDS``.
- ``watch(timeout, expire)``: one watchdog thread calls ``expire`` of every collective not
  settled within its timeout; ``expire`` fails the collective with an error naming what it
  waited for and delivers it. So a hang anywhere below — a session thread that never
  returns, a copy-back that never ends — reaches every waiter (``work.wait()``, and the
  future that DDP's reducer waits on in C++) as an error within the collective's timeout.

Both are process-wide, and start their threads on first use (again in a forked child).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable

log = logging.getLogger("p4reduce.torch")

IDLE_SECONDS = 10.0  # an idle delivery thread ends after this long


class _Worker:
    """One delivery thread's mailbox: ``task`` is handed over under the pool's lock."""

    __slots__ = ("task", "wake")

    def __init__(self) -> None:
        self.task: Callable[[], None] | None = None
        self.wake = threading.Event()


class DeliveryPool:
    """Runs each task at once on a thread of its own: an idle one, else a new one."""

    def __init__(self, name: str, idle_seconds: float = IDLE_SECONDS) -> None:
        self.name = name
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []  # a stack: the most recently idle thread goes first
        self._started = 0
        self._live = 0

    @property
    def threads(self) -> int:
        """Delivery threads alive now (busy or idle)."""
        with self._lock:
            return self._live

    def submit(self, task: Callable[[], None]) -> None:
        with self._lock:
            if self._idle:
                w = self._idle.pop()
                w.task = task
                w.wake.set()
                return
            self._started += 1
            self._live += 1
            n = self._started
        t = threading.Thread(target=self._run, args=(task,), name=f"{self.name}-{n}", daemon=True)
        try:
            t.start()
        except RuntimeError:  # no thread to be had: better late here than never
            with self._lock:
                self._live -= 1
            log.warning("%s: cannot start a thread; completing inline", self.name)
            _run_logged(task)

    def _run(self, task: Callable[[], None]) -> None:
        w = _Worker()
        while True:
            _run_logged(task)
            with self._lock:
                w.task = None
                w.wake.clear()
                self._idle.append(w)
            w.wake.wait(self.idle_seconds)
            with self._lock:
                if w.task is None:  # nothing was handed over: retire
                    self._idle.remove(w)
                    self._live -= 1
                    return
                task = w.task


def _run_logged(task: Callable[[], None]) -> None:
    try:
        task()
    except BaseException:  # noqa: BLE001 - a delivery thread must outlive a bad task
        log.exception("p4reduce: delivering a collective's completion failed")


class Watchdog:
    """Calls ``expire()`` of each watched item whose deadline passed and that was not
    ``unwatch``ed before; ``expire`` must not block (it runs on the watchdog's thread)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int]] = []  # (deadline, id); stale ids are skipped
        self._live: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()
        self._thread: threading.Thread | None = None

    def watch(self, timeout: float, expire: Callable[[], None]) -> int:
        deadline = time.monotonic() + timeout
        with self._cond:
            key = next(self._ids)
            self._live[key] = expire
            heapq.heappush(self._heap, (deadline, key))
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif self._heap[0][1] == key:
                self._cond.notify()  # an earlier deadline than the one slept on
        return key

    def unwatch(self, key: int) -> None:
        with self._cond:
            self._live.pop(key, None)
            if len(self._heap) > 2 * len(self._live) + 64:  # drop the settled ones' entries
                self._heap = [e for e in self._heap if e[1] in self._live]
                heapq.heapify(self._heap)

    @property
    def watched(self) -> int:
        with self._cond:
            return len(self._live)

    def _run(self) -> None:
        while True:
            with self._cond:
                while True:
                    while self._heap and self._heap[0][1] not in self._live:
                        heapq.heappop(self._heap)
                    if not self._heap:
                        self._cond.wait()
                        continue
                    deadline, key = self._heap[0]
                    left = deadline - time.monotonic()
                    if left <= 0:
                        heapq.heappop(self._heap)
                        expire = self._live.pop(key)
                        break
                    self._cond.wait(left)
            _run_logged(expire)


pool = DeliveryPool("p4reduce-deliver")
watchdog = Watchdog("p4reduce-watchdog")


def _after_fork_in_child() -> None:
    # The parent's threads do not exist in a forked child (a DataLoader worker, …): start
    # afresh, or a task would be handed to a thread that is not there.
    global pool, watchdog
    pool = DeliveryPool(pool.name, pool.idle_seconds)
    watchdog = Watchdog(watchdog.name)


os.register_at_fork(after_in_child=_after_fork_in_child)


def deliver(task: Callable[[], None]) -> None:
    """Run ``task`` on a delivery thread (see the module docstring)."""
    pool.submit(task)


def watch(timeout: float, expire: Callable[[], None]) -> int:
    """Call ``expire()`` in ``timeout`` seconds unless ``unwatch``ed before."""
    return watchdog.watch(timeout, expire)


def unwatch(key: int) -> None:
    watchdog.unwatch(key)
