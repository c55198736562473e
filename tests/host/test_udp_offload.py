"""The native driver's two UDP paths (host/_engine/udpio.h): with UDP GSO/GRO (segmented
sends, super-datagrams split on receipt) and per datagram. Same inputs through both paths
against a one-worker reflector that itself receives with GRO and answers with segmented
sends: the results are the same bytes, the datagrams the reflector saw are the same set,
and in the offload path the driver did send segmented messages and had GRO on."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import sanitized
from offload_reflector import OffloadReflector
from p4reduce.host import UdpTransport, run_call
from p4reduce.host.protocol import Done, RetryPolicy, Session
from p4reduce.host.protocol.native import available

pytestmark = pytest.mark.skipif(not available(), reason="native core not built")


@pytest.fixture
def offload_setting() -> Iterator[None]:
    from p4reduce.host import _engine_c

    before = _engine_c.udp_offload()
    yield
    _engine_c.udp_offload(before)


def _run(x: np.ndarray, offload: bool, threads: int, msg_type: int) -> tuple[bytes, set, int, set]:
    from p4reduce.host import _engine_c

    _engine_c.udp_offload(offload)
    retry = RetryPolicy(initial_timeout=0.5, max_timeout=1.0, give_up_after=30)
    ses = Session(rank=0, n=1, job_id=9, job_key=7, slots=32, k=256, msg_type=msg_type,
                  retry=retry, engine="native", threads=threads)  # fmt: skip
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", 0))
    r = OffloadReflector(sock.fileno())
    tr = UdpTransport(r.address, sock=sock)
    try:
        end = run_call(ses.allreduce(x), tr)
    finally:
        r.stop()
        tr.close()
    assert isinstance(end, Done), end
    return end.result.tobytes(), set(r.seen), r.coalesced, r.driver_gro


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("msg_type", [1, 2])
def test_both_paths_give_the_same_bytes(offload_setting: None, threads: int, msg_type: int) -> None:
    x = (np.arange(200_003) % 977 - 400).astype(np.float32) * np.float32(0.25)
    plain, plain_seen, plain_coalesced, plain_gro = _run(x, False, threads, msg_type)
    fast, fast_seen, fast_coalesced, fast_gro = _run(x, True, threads, msg_type)
    assert plain == fast == x.tobytes()
    assert plain_seen == fast_seen  # the same datagrams reached the "switch"
    assert plain_coalesced == 0 and plain_gro == {0}
    assert fast_coalesced > 0  # the driver sent segmented messages
    assert fast_gro == {1}  # and received with GRO on (the answers were segmented)


def test_the_setting_reads_and_sets(offload_setting: None) -> None:
    from p4reduce.host import _engine_c

    _engine_c.udp_offload(False)
    assert _engine_c.udp_offload() is False
    assert _engine_c.udp_offload(True) is False
    assert _engine_c.udp_offload(None) is True


_ASAN_SCRIPT = sanitized.LOAD_ENGINE + textwrap.dedent(
    """
    sys.path.insert(0, sys.argv[2])
    import numpy as np
    import test_udp_offload as t
    x = (np.arange(60_001) % 977 - 400).astype(np.float32)
    for threads in (1, 3):
        for msg_type in (1, 2):
            plain = t._run(x, False, threads, msg_type)
            fast = t._run(x, True, threads, msg_type)
            assert plain[0] == fast[0] == x.tobytes() and fast[2] > 0 and fast[3] == {1}
    print("sanitized offload run ok")
    """
)


@pytest.mark.timeout(600)
def test_both_paths_under_address_and_undefined_behaviour_sanitizers(tmp_path: Path) -> None:
    """The driver (segmented sends, super-datagrams split, one and several threads) built
    with -fsanitize=address,undefined, against the GSO/GRO reflector."""
    built = sanitized.asan_engine(tmp_path)
    if built is None:
        pytest.skip("no C compiler with libasan on this machine")
    so, env = built
    done = sanitized.run_child(_ASAN_SCRIPT, [str(so), str(Path(__file__).parent)], env, 500)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    assert "sanitized offload run ok" in done.stdout


_REFUSED_SCRIPT = textwrap.dedent(
    """
    import subprocess, sys
    # this network namespace's loopback takes 1,000-byte packets: a K = 256 packet (1,048
    # bytes) goes as IP fragments one by one, but a segmented send of them is refused
    subprocess.run(["ip", "link", "set", "lo", "up", "mtu", "1000"], check=True)
    sys.path.insert(0, sys.argv[1])
    import numpy as np
    import test_udp_offload as t
    x = (np.arange(30_001) % 977 - 400).astype(np.float32)
    for threads in (1, 2):
        plain, fast = t._run(x, False, threads, 1), t._run(x, True, threads, 1)
        assert plain[0] == fast[0] == x.tobytes() and plain[1] == fast[1]
    print("refused run ok")
    """
)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root")
def test_a_refused_segmented_send_goes_per_datagram() -> None:
    """Where the route cannot take a segmented send (EMSGSIZE: the segment exceeds the MTU,
    in a network namespace of its own), the driver says so in one line, turns GSO off and
    sends the same packets per datagram: the same result bytes and the same datagrams at the
    reflector as with the offload off."""
    done = subprocess.run(
        ["unshare", "--net", sys.executable, "-c", _REFUSED_SCRIPT, str(Path(__file__).parent)],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "refused run ok" in done.stdout
    notes = [ln for ln in done.stderr.splitlines() if "UDP GSO" in ln]
    assert len(notes) == 1 and "segmented send refused" in notes[0], done.stderr
