"""The outcome of one collective that runs as several ``AllreduceSession`` calls, and the
``Work`` object torch gets for it.

Two consumers wait on a collective: Python (``work.wait()``, ``dist.all_reduce``) and C++
(DDP's reducer and the functional collectives wait on ``work.get_future()``). Both must see
an error as an error, which torch's own tools do not give in 2.13:

- ``torch.futures.Future.set_exception`` stores the exception as the future's *value*, so
  C++ reads a Python object where it expects tensors (DDP crashes), and
  ``_create_work_from_future`` makes a Work whose ``wait`` ignores a failed future.
- A callback of ``Future.then`` that raises, on the other hand, fails the chained future
  in C++ (a ``RuntimeError`` naming the Python exception, which reaches ``backward()``).

So the source future is always completed with the tensors, and the future handed out is
``source.then(unwrap)``, whose callback raises the call's error when there is one.
``P4ReduceWork.wait`` raises the original exception (``AllreduceTimeout`` with its
``missing_ranks``, …) from a ``threading.Event`` and bounds the wait.

Threads: the session's thread runs the calls and only counts them off; the completion
(copy back, future, event) runs on a delivery thread, and the watchdog fails a collective
not settled within its timeout (delivery.py says why).
"""

from __future__ import annotations

import concurrent.futures
import datetime
import threading
import time
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from . import delivery
from .errors import CollectiveTimeout, P4ReduceError


def _unwrap(box: dict[str, BaseException]) -> Callable[[torch.futures.Future[Any]], Any]:
    def unwrap(src: torch.futures.Future[Any]) -> Any:
        err = box.get("error")
        if err is not None:
            raise err
        return src.value()

    return unwrap


class Completion:
    """Counts the calls of one collective; when the last is done (or one failed and the
    rest were cancelled) a delivery thread runs ``finish`` (copying staged results back)
    and settles the future and the event — never the session's thread, which must stay
    free for the next call that a callback of this future may wait for (delivery.py).
    With a ``timeout`` the watchdog settles it with a ``CollectiveTimeout`` naming what it
    waited for when it is not settled in time.

    ``value``: what the future resolves to (the tensor list, or the bucket tensor of the
    DDP hook); ``check``: a last test of the result (the hook's size check); ``label``:
    the collective, for messages (``what`` is the group)."""

    def __init__(
        self,
        value: Any,
        what: str,
        finish: Callable[[], None] | None = None,
        check: Callable[[], None] | None = None,
        timeout: float | None = None,
        label: str = "the collective",
    ) -> None:
        self.value = value
        self.what = what
        self.label = label
        self.error: BaseException | None = None
        self.event = threading.Event()
        self._finish = finish
        self._check = check
        self._box: dict[str, BaseException] = {}
        self._source: torch.futures.Future[Any] = torch.futures.Future()
        self.future: torch.futures.Future[Any] = self._source.then(_unwrap(self._box))
        self._lock = threading.Lock()
        self._calls: list[concurrent.futures.Future[Any]] = []
        self._outstanding = 1  # the calls, plus one until seal(): no completion before then
        self._sealed = False
        self._delivering = False  # the calls are over: finish() runs on a delivery thread
        self._settled = False  # the future is being (or was) set: exactly once
        self._started = time.monotonic()
        self._timeout = timeout
        self._watch: int | None = None
        if timeout is not None:  # last: the watchdog may call _expire at once
            self._watch = delivery.watch(timeout, self._expire)

    def add(self, call: concurrent.futures.Future[Any]) -> None:
        with self._lock:
            self._calls.append(call)
            self._outstanding += 1
            failed = self.error is not None
        if failed:
            call.cancel()  # an earlier call failed meanwhile
        call.add_done_callback(self._done)

    def fail(self, err: BaseException) -> None:
        """Record ``err`` (the first error wins) and cancel the calls not yet started."""
        with self._lock:
            first = self.error is None
            if first:
                self.error = err
            calls = list(self._calls)
        if first:
            for c in calls:
                c.cancel()  # a queued call of a failed collective must not run

    def seal(self) -> None:
        """No more calls will be added. When they are all done already (an empty tensor,
        an error at submission) the completion runs here, on the caller's thread: no
        callback but our own is attached to the future yet."""
        with self._lock:
            self._sealed = True
        self._release(inline=True)

    def _done(self, call: concurrent.futures.Future[Any]) -> None:
        # Runs on the session's thread (or on whichever cancelled the call): no waiting.
        if call.cancelled():
            if self.error is None:
                self.fail(P4ReduceError(f"{self.what}: the session was closed before the call ran"))
        else:
            err = call.exception()
            if err is not None:
                self.fail(err)
        self._release(inline=False)

    def _release(self, inline: bool) -> None:
        with self._lock:
            self._outstanding -= 1
            last = self._outstanding == 0
            if last:
                self._delivering = True
        if last:
            if inline:
                self._complete()
            else:
                delivery.deliver(self._complete)

    def _complete(self) -> None:
        """On a delivery thread: copy back, check, settle."""
        if self.error is None and not self._settled:
            try:
                if self._finish is not None:
                    self._finish()
                if self._check is not None:
                    self._check()
            except Exception as err:  # noqa: BLE001 - becomes the collective's error
                self.fail(err)
        self._settle()

    def _expire(self) -> None:
        """The watchdog's: the collective is past its timeout. Fail it naming what it
        waits for, and settle it on a delivery thread (this one must not block)."""
        with self._lock:
            if self._settled:
                return
            waiting = self._waiting_for_locked()
        self.fail(
            CollectiveTimeout(
                f"{self.what}: {self.label} did not finish within {self._timeout:g} s: {waiting}",
                waiting_for=waiting,
            )
        )
        delivery.deliver(self._settle)

    def _settle(self) -> None:
        """Set the future (which runs its callbacks here) and the event, once."""
        with self._lock:
            if self._settled:
                return
            self._settled = True
            if self.error is not None:
                self._box["error"] = self.error
        if self._watch is not None:
            delivery.unwatch(self._watch)
        try:
            self._source.set_result(self.value)  # runs unwrap, and the user's callbacks
        finally:
            self.event.set()

    def waiting_for(self) -> str:
        """What the collective waits for now, in words (for timeout messages)."""
        with self._lock:
            return self._waiting_for_locked()

    def _waiting_for_locked(self) -> str:
        if self._settled:
            return "its future's callbacks, which are running"
        if not self._sealed:
            return "its submission (staging the tensors and queueing the session calls)"
        if self._delivering:
            return "its results to be copied back into the tensors (the session calls are done)"
        n = len(self._calls)
        for i, c in enumerate(self._calls, 1):
            if c.running():
                return (
                    f"session call {i} of {n}, running on the session's thread (waiting for "
                    f"the switch's answers; issued {time.monotonic() - self._started:.1f} s ago)"
                )
            if not c.done():
                return (
                    f"session call {i} of {n}, queued behind the session's earlier calls "
                    f"(the session's thread is busy with another collective's call)"
                )
        return "the completion of its calls"


class P4ReduceWork(dist.Work):
    """The Work of a collective that went through the switch. ``wait(timeout)`` blocks at
    most ``timeout`` (default: the group's timeout) and raises the collective's error."""

    def __init__(self, completion: Completion, timeout: datetime.timedelta) -> None:
        super().__init__()
        self._completion = completion
        self._timeout = timeout

    def wait(self, timeout: datetime.timedelta = datetime.timedelta(0)) -> bool:
        c = self._completion
        limit = timeout if timeout and timeout.total_seconds() > 0 else self._timeout
        if not c.event.wait(limit.total_seconds()):
            if c.error is not None:
                # it failed and is being settled now: the watchdog's timeout (which named
                # what it waited for before the failure changed that) or the call's error
                raise c.error
            waiting = c.waiting_for()
            raise CollectiveTimeout(
                f"{c.what}: {c.label} did not finish within {limit.total_seconds():g} s: {waiting}",
                waiting_for=waiting,
            )
        if c.error is not None:
            raise c.error
        return True

    def get_future(self) -> torch.futures.Future[Any]:
        return self._completion.future

    def is_completed(self) -> bool:
        return self._completion.event.is_set()

    def is_success(self) -> bool:
        return self.is_completed() and self._completion.error is None

    def exception(self) -> BaseException | None:
        return self._completion.error

    def result(self) -> Any:
        self.wait()
        return self._completion.value

    def synchronize(self) -> None:
        self.wait()


def failed(err: BaseException, what: str, value: Any = None) -> Completion:
    """A completion that failed before any call was made."""
    c = Completion(value, what)
    c.fail(err)
    c.seal()
    return c
