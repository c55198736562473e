"""Issue 34: datagrams from senders no switch port stands for are dropped by the switch's
UDP adapter, counted (``p4reduce-ctl stats``, the registration service's health) and named
by the ``AllreduceTimeout`` of a worker whose call failed meanwhile; a timeout without such
drops does not mention them."""

from __future__ import annotations

import re
import socket

import numpy as np
import pytest
from conftest import Jobs
from p4reduce.host import AllreduceTimeout, RetryPolicy

RETRY = RetryPolicy(initial_timeout=0.05, max_timeout=0.2, give_up_after=1.0)
HINT = re.compile(r"The switch dropped (\d+) datagram\(s\) from unknown senders since this worker")


def _timeout(s, x: np.ndarray) -> str:  # noqa: ANN001 - an AllreduceSession
    with pytest.raises(AllreduceTimeout) as info:
        s.allreduce(x)  # rank 1 never calls: the call fails after RETRY.give_up_after
    return str(info.value)


def test_a_timeout_names_the_drops_of_unknown_senders(dense: Jobs) -> None:
    s0, s1 = dense.join(2, slots=4, retry=RETRY, auto_recover=False)
    x = np.ones(100, np.int32)
    assert not HINT.search(_timeout(s0, x))  # a silent rank, no stranger: no hint
    s0.reset()
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as stranger:
        stranger.bind(("127.0.0.1", 0))  # an address no -i N@udp:HOST:PORT names
        for _ in range(5):
            stranger.sendto(b"\0" * 40, s0.switch)
    m = HINT.search(_timeout(s0, x))
    assert m is not None and int(m.group(1)) >= 5
    health = s0.registration.health()
    assert health["switch"]["unknown_sender"] >= 5
