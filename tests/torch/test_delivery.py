"""The completion threads and the watchdog (host/torch/delivery.py) in one process, with a
one-thread executor standing in for a session's background thread: no callback runs on
it, a callback may wait for a collective queued behind its own, a blocked delivery holds up
no other, and a collective that hangs fails within its timeout naming what it waited for."""

from __future__ import annotations

import concurrent.futures
import datetime
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch
from p4reduce.host.torch import CollectiveTimeout
from p4reduce.host.torch.completion import Completion, P4ReduceWork
from p4reduce.host.torch.delivery import DeliveryPool, Watchdog

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def session() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    """A session's one background thread."""
    ex = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="session")
    yield ex
    ex.shutdown(wait=True, cancel_futures=True)


def collective(
    session: concurrent.futures.ThreadPoolExecutor,
    fn: Callable[[], Any] = lambda: None,
    calls: int = 1,
    timeout: float = 10.0,
    finish: Callable[[], None] | None = None,
) -> Completion:
    """A collective of ``calls`` calls of ``fn`` on the session's thread."""
    c = Completion([torch.zeros(1)], "test group", finish=finish, timeout=timeout)
    for _ in range(calls):
        c.add(session.submit(fn))
    c.seal()
    return c


def test_callbacks_never_run_on_the_session_thread(session: Any) -> None:
    threads: list[str] = []
    gate = threading.Event()
    c = collective(session, lambda: gate.wait(10))
    chained = c.future.then(lambda f: threads.append(threading.current_thread().name))
    gate.set()  # the callback is attached before the call ends
    chained.wait()
    assert threads and not threads[0].startswith("session")
    assert threads[0].startswith("p4reduce-deliver")


def test_a_callback_may_wait_for_a_collective_queued_behind_its_own(session: Any) -> None:
    # What PowerSGD does: the callback issues the next collective on the same session and
    # waits for it, through the future and through the Work. Completed on the session's
    # thread this waited for ever (with a timeout: failed); now it completes.
    def next_collective(_: torch.futures.Future[Any]) -> str:
        inner = collective(session, lambda: "inner")
        P4ReduceWork(inner, datetime.timedelta(seconds=10)).wait()
        return str(collective(session).future.wait()[0].shape)

    assert collective(session).future.then(next_collective).wait() == "torch.Size([1])"


def test_nested_waiting_callbacks_of_any_depth(session: Any) -> None:
    def level(k: int) -> torch.futures.Future[int]:
        fut = collective(session).future
        if k == 0:
            return fut.then(lambda f: 0)
        return fut.then(lambda f: level(k - 1).wait() + 1)

    assert level(20).wait() == 20


def test_a_blocked_delivery_holds_up_no_other() -> None:
    pool = DeliveryPool("test-deliver", idle_seconds=0.2)
    gate = threading.Event()
    second = threading.Event()
    pool.submit(lambda: gate.wait(10))
    pool.submit(second.set)
    assert second.wait(5)  # ran while the first was blocked
    assert pool.threads == 2
    gate.set()
    deadline = time.monotonic() + 10
    while pool.threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pool.threads == 0  # idle threads end


def test_an_idle_delivery_thread_is_reused() -> None:
    pool = DeliveryPool("test-deliver", idle_seconds=5)
    names: list[str] = []
    for _ in range(5):
        done = threading.Event()
        pool.submit(lambda d=done: (names.append(threading.current_thread().name), d.set()))
        assert done.wait(5)
        time.sleep(0.01)  # the thread goes back to idle
    assert len(set(names)) == 1 and pool.threads == 1


def test_the_watchdog_expires_in_deadline_order_and_forgets_unwatched() -> None:
    dog = Watchdog("test-watchdog")
    fired: list[str] = []
    done = threading.Event()
    dog.watch(0.3, lambda: (fired.append("late"), done.set()))
    dog.watch(0.1, lambda: fired.append("early"))
    key = dog.watch(0.2, lambda: fired.append("unwatched"))
    dog.unwatch(key)
    assert done.wait(5)
    assert fired == ["early", "late"] and dog.watched == 0
    for _ in range(1000):  # settled entries do not pile up
        dog.unwatch(dog.watch(3600, lambda: None))
    assert len(dog._heap) < 200


def _timed_out(c: Completion) -> CollectiveTimeout:
    with pytest.raises(RuntimeError, match="CollectiveTimeout") as info:
        c.future.wait()  # a C++ wait, as DDP's reducer does: the failed future
    assert "did not finish within 0.3 s" in str(info.value)
    err = c.error
    assert isinstance(err, CollectiveTimeout) and err.waiting_for in str(info.value)
    return err


def test_a_call_that_never_returns_fails_naming_it(session: Any) -> None:
    gate = threading.Event()
    c = collective(session, lambda: gate.wait(10), calls=2, timeout=0.3)
    assert "session call 1 of 2, running on the session's thread" in _timed_out(c).waiting_for
    gate.set()


def test_a_call_queued_behind_a_hung_one_fails_naming_it(session: Any) -> None:
    gate = threading.Event()
    session.submit(gate.wait, 10)  # another collective's call that never returns
    c = collective(session, calls=1, timeout=0.3)
    t0 = time.monotonic()
    with pytest.raises(CollectiveTimeout, match="queued behind the session's earlier calls"):
        P4ReduceWork(c, datetime.timedelta(seconds=0.3)).wait()
    assert time.monotonic() - t0 < 5
    assert "queued behind" in _timed_out(c).waiting_for
    gate.set()


def test_a_copy_back_that_never_ends_fails_naming_it(session: Any) -> None:
    gate = threading.Event()
    sealed = threading.Event()
    c = collective(session, lambda: sealed.wait(10), finish=lambda: gate.wait(10), timeout=0.3)
    sealed.set()  # the call ends after seal(): the copy back runs on a delivery thread
    t0 = time.monotonic()
    assert "copied back" in _timed_out(c).waiting_for
    assert time.monotonic() - t0 < 5  # not the 10 s of the copy back
    gate.set()


def test_a_submission_that_never_ends_fails_naming_it() -> None:
    c = Completion([torch.zeros(1)], "test group", timeout=0.3)  # never sealed
    assert "its submission" in _timed_out(c).waiting_for


def test_a_settled_collective_is_not_expired(session: Any) -> None:
    c = collective(session, timeout=0.2)
    c.future.wait()
    time.sleep(0.4)
    assert c.error is None and c.event.is_set()
