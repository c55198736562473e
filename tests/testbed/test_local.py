"""Helpers that need no stack: signals held during a teardown (testbed.local), free ports
(p4reduce.free_port)."""

from __future__ import annotations

import os
import signal
import socket
import threading
import time

import pytest
from p4reduce.testbed.local import stop_signals_held

import p4reduce.free_port as free_port_module
from p4reduce.free_port import free_port


def wait_for_handlers() -> None:
    """A signal sent to this process runs its Python handler at the next bytecode of the
    main thread; give the kernel a moment to deliver it first."""
    for _ in range(5):
        time.sleep(0.01)


def test_sigterm_during_the_block_is_delivered_after_it() -> None:
    got: list[int] = []
    before = signal.signal(signal.SIGTERM, lambda sig, _frame: got.append(sig))
    try:
        with stop_signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGTERM)
            wait_for_handlers()
            assert got == []  # the teardown goes on
        assert got == [signal.SIGTERM]  # once, afterwards
        assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
    finally:
        signal.signal(signal.SIGTERM, before)


def test_ctrl_c_during_the_block_interrupts_after_it() -> None:
    finished = False
    with pytest.raises(KeyboardInterrupt):
        with stop_signals_held():
            os.kill(os.getpid(), signal.SIGINT)
            wait_for_handlers()
            finished = True
    assert finished
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_nothing_held_when_nothing_came_or_off_the_main_thread() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_signals_held():
        pass
    assert signal.getsignal(signal.SIGTERM) is before
    seen: list[object] = []

    def other() -> None:
        with stop_signals_held():  # signal.signal() would raise off the main thread
            seen.append(signal.getsignal(signal.SIGTERM))

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert seen == [before]


# ------------------------------------------------------------------ free ports


@pytest.mark.parametrize("protocol", ["tcp", "udp"])
def test_free_port_is_bindable_and_below_the_ephemeral_range(protocol: str) -> None:
    kind = socket.SOCK_STREAM if protocol == "tcp" else socket.SOCK_DGRAM
    start = free_port_module.ephemeral_start()
    for _ in range(20):
        port = free_port(protocol)
        if start is not None and start > free_port_module.LOWEST + 64:
            assert free_port_module.LOWEST <= port < start
        with socket.socket(socket.AF_INET, kind) as s:
            s.bind(("127.0.0.1", port))


def test_free_port_avoids_a_taken_port_and_falls_back_to_the_kernel(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        taken = held.getsockname()[1]
        # a one-port range that is taken: the kernel's choice, which is free
        monkeypatch.setattr(free_port_module, "LOWEST", taken - 65)
        monkeypatch.setattr(free_port_module, "ephemeral_start", lambda: taken + 1)
        monkeypatch.setattr(free_port_module.random, "Random", lambda: FixedPick(taken))
        assert free_port("tcp") != taken
    with pytest.raises(ValueError, match="tcp or udp"):
        free_port("sctp")


class FixedPick:
    def __init__(self, port: int) -> None:
        self.port = port

    def randrange(self, _lo: int, _hi: int) -> int:
        return self.port
