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
"""

from __future__ import annotations

import concurrent.futures
import datetime
import threading
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from .errors import P4ReduceError


def _unwrap(box: dict[str, BaseException]) -> Callable[[torch.futures.Future[Any]], Any]:
    def unwrap(src: torch.futures.Future[Any]) -> Any:
        err = box.get("error")
        if err is not None:
            raise err
        return src.value()

    return unwrap


class Completion:
    """Counts the calls of one collective; when the last is done (or one failed and the
    rest were cancelled) runs ``finish`` (copying staged results back) and completes the
    future and the event, in the thread that finished last.

    ``value``: what the future resolves to (the tensor list, or the bucket tensor of the
    DDP hook); ``check``: a last test of the result (the hook's size check)."""

    def __init__(
        self,
        value: Any,
        what: str,
        finish: Callable[[], None] | None = None,
        check: Callable[[], None] | None = None,
    ) -> None:
        self.value = value
        self.what = what
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
        """No more calls will be added."""
        self._release()

    def _done(self, call: concurrent.futures.Future[Any]) -> None:
        if call.cancelled():
            if self.error is None:
                self.fail(P4ReduceError(f"{self.what}: the session was closed before the call ran"))
        else:
            err = call.exception()
            if err is not None:
                self.fail(err)
        self._release()

    def _release(self) -> None:
        with self._lock:
            self._outstanding -= 1
            last = self._outstanding == 0
        if last:
            self._complete()

    def _complete(self) -> None:
        if self.error is None:
            try:
                if self._finish is not None:
                    self._finish()
                if self._check is not None:
                    self._check()
            except Exception as err:  # noqa: BLE001 - becomes the collective's error
                self.error = err
        if self.error is not None:
            self._box["error"] = self.error
        self._source.set_result(self.value)  # runs the unwrap callback here
        self.event.set()


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
            raise TimeoutError(
                f"{c.what}: the collective did not finish within {limit.total_seconds():g} s"
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
