"""p4reduce.cli_common.StopSignals: how the servers (p4reduce-switch, p4reduce-ctl serve)
learn that they should stop."""

from __future__ import annotations

import os
import signal
import threading
import time

from p4reduce.cli_common import StopSignals


def test_a_signal_ends_the_wait_and_the_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in StopSignals.SIGNALS}
    stop = StopSignals()
    try:
        assert stop.wait(0.05) is False
        os.kill(os.getpid(), signal.SIGTERM)
        t0 = time.monotonic()
        assert stop.wait(30.0) is True
        assert time.monotonic() - t0 < 5
        os.kill(os.getpid(), signal.SIGINT)  # recorded, no KeyboardInterrupt
        assert stop.wait(30.0) and stop.received[-1] == signal.SIGINT
    finally:
        stop.restore()
    assert {sig: signal.getsignal(sig) for sig in StopSignals.SIGNALS} == before


def test_the_handler_takes_no_lock_so_signals_inside_a_locked_region_are_harmless() -> None:
    """What hung ``p4reduce-ctl serve``: a handler that sets a threading.Event runs in the
    main thread while it holds the Event's lock inside wait(). Here the handler runs while
    this thread holds a lock, as it would inside any wait, and returns."""
    stop = StopSignals()
    lock = threading.Lock()
    try:
        with lock:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(100):  # the handler runs at one of these bytecodes
                if stop.received:
                    break
                time.sleep(0.01)
        assert stop.received == [signal.SIGTERM]
    finally:
        stop.restore()


def test_a_signal_taken_by_another_thread_still_ends_the_wait() -> None:
    stop = StopSignals()
    ready = threading.Event()
    done = threading.Event()

    def other() -> None:
        ready.set()
        done.wait(30)

    t = threading.Thread(target=other)
    t.start()
    try:
        ready.wait(30)
        assert t.native_id is not None
        os.kill(t.native_id, signal.SIGTERM)  # this thread takes it; Python runs it here
        assert stop.wait(30.0) is True
    finally:
        done.set()
        t.join()
        stop.restore()
