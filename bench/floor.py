"""The kernel floor for the switch benchmarks: ``bench/c/reflector.c``, compiled at bench run
time by switch/native/build.py (the compiler and content-hash cache of the native engine), as a reflector that does
the switch's receives and multicast sends with recvmmsg/sendmmsg and no P4, and as a batched
C load generator of aggregation packets (docs/benchmarks.md, "kernel floor").

Used by bench/switch.py, bench/sidebyside.py (raw-socket modes), bench/allreduce.py and
bench/torch_ddp.py (``kernel_floor``, per datagram and over UDP GSO/GRO); not a benchmark on
its own.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import struct
import subprocess
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

SOURCE = Path(__file__).resolve().parent / "c" / "reflector.c"
FLAGS = ("-O2", "-Wall")
UDP_SEGMENT, UDP_GRO = 103, 104  # linux/udp.h


class FloorUnavailable(RuntimeError):
    """No C compiler, or reflector.c did not build: the floor figures are left out."""


def build() -> Path:
    """The reflector program, compiled and cached by the one run-time build
    (switch/native/build.py: P4REDUCE_CC, the content-hash cache)."""
    from p4reduce.switch.native.build import BuildError, build_files

    try:
        return build_files("reflector", SOURCE, FLAGS)
    except BuildError as exc:
        raise FloorUnavailable(str(exc)) from None


def worker_sockets(n: int) -> list[socket.socket]:
    out = []
    for _ in range(n):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
        out.append(s)
    return out


@contextlib.contextmanager
def reflector(peers: Sequence[tuple[str, int]], gso: bool = False) -> Iterator[tuple[str, int]]:
    """A running reflector for these worker addresses; yields its address. ``gso``: over UDP
    GSO/GRO (reflector.c -g: segmented sends, super-datagrams split)."""
    exe = build()
    text = ",".join(f"{ip}:{port}" for ip, port in peers)
    proc = subprocess.Popen(
        [str(exe), *(["-g"] if gso else []), "serve", "0", text],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "ready":
            raise FloorUnavailable(f"reflector did not start: {line}")
        yield ("127.0.0.1", int(line[1]))
    finally:
        assert proc.stdin is not None
        proc.stdin.close()  # its signal to exit
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def packet_file(path: Path, packets: Sequence[Sequence[bytes]]) -> None:
    """packets[rank][i], all of one length: the client's input."""
    length = len(packets[0][0])
    cycle = len(packets[0])
    with open(path, "wb") as f:
        f.write(struct.pack("<III", len(packets), cycle, length))
        for per_rank in packets:
            assert len(per_rank) == cycle and all(len(p) == length for p in per_rank)
            f.write(b"".join(per_rank))


def run_client(
    target: tuple[str, int] | None,
    socks: Sequence[socket.socket],
    packets: Sequence[Sequence[bytes]],
    rounds: int,
    window: int,
    timeout: float = 300.0,
    gso: bool = False,
) -> dict[str, float]:
    """The C load generator: ``rounds`` packets per worker, ``window`` in flight. Returns
    seconds, packets_in and results; raises RuntimeError if it stalls. ``target`` None: the
    sockets are AF_PACKET sockets bound to interfaces and ``packets`` whole Ethernet frames
    (bench/sidebyside.py). ``gso``: each worker's window leaves as UDP_SEGMENT sends and
    results are read with UDP_GRO (reflector.c -g)."""
    exe = build()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "packets.bin"
        packet_file(path, packets)
        fds = [s.fileno() for s in socks]
        done = subprocess.run(
            [str(exe), *(["-g"] if gso else []), "client",
             "raw" if target is None else f"{target[0]}:{target[1]}",
             str(path), str(rounds),
             str(window), ",".join(map(str, fds))],
            pass_fds=fds, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip() or f"client exit {done.returncode}")
    return json.loads(done.stdout)


_floors: dict[tuple[int, int, int, int, bool], float] = {}


def kernel_floor(
    n: int, m: int, k: int, slots: int, gso: bool = False, log: Callable[[str], None] = print
) -> float:
    """Seconds the host kernel needs for an M-element all-reduce's packets between n workers:
    reflector.c's batched client sends ceil(M/K) aggregation packets per worker, ``slots``
    in flight, through the C reflector (the switch's exchanges with no P4), and receives the
    results; ``gso``: the same over UDP GSO/GRO (reflector.c -g), the floor of p4reduce's
    offload path. NaN (said through ``log``) where no C compiler exists or, for ``gso``,
    the kernel has no UDP GSO/GRO. Measured once per shape."""
    key = (n, m, k, slots, gso)
    if key not in _floors and gso and not gso_available():
        log("UDP GSO/GRO floor unavailable: this kernel lacks UDP_SEGMENT or UDP_GRO")
        _floors[key] = float("nan")
    if key not in _floors:
        rounds = -(-m // k)
        socks = worker_sockets(n)
        try:
            with reflector([s.getsockname() for s in socks], gso=gso) as addr:
                packets = dense_packets(n, 1, slots, k)
                done = run_client(addr, socks, packets, rounds, slots, gso=gso)
                _floors[key] = done["seconds"]
        except FloorUnavailable as err:
            log(f"kernel floor unavailable: {err}")
            _floors[key] = float("nan")
        finally:
            for s in socks:
                s.close()
    return _floors[key]


@contextlib.contextmanager
def udp_offload_env(offload: str) -> Iterator[None]:
    """$P4REDUCE_UDP_OFFLOAD for the switch and worker processes started inside ("off": per
    datagram, "on": UDP GSO/GRO where the kernel has them), and the same setting for
    workers run as threads of this process."""
    from p4reduce.host import _engine_c
    from p4reduce.switch.native.ioloop import OFFLOAD_ENV

    before = os.environ.get(OFFLOAD_ENV)
    os.environ[OFFLOAD_ENV] = "0" if offload == "off" else "1"
    was = _engine_c.udp_offload(offload != "off")
    try:
        yield
    finally:
        _engine_c.udp_offload(was)
        if before is None:
            del os.environ[OFFLOAD_ENV]
        else:
            os.environ[OFFLOAD_ENV] = before


def dense_packets(n: int, job_id: int, slots: int, k: int, key: int = 0) -> list[list[bytes]]:
    """One cycle of a dense job's packets per rank: rounds t = 0 .. 2*slots-1 use slot
    t % slots with set (t // slots) % 2, as the protocol core does for a long tensor, and
    K zero elements (the switch's work does not depend on the values); ``key``: the job's
    data-plane key (docs/protocol.md; the reflector ignores it)."""
    from p4reduce.host import wire

    payload = bytes(4 * k)
    out = []
    for rank in range(n):
        per = []
        for t in range(2 * slots):
            hdr = wire.header_bytes(
                wire.MSG_DENSE, 0, rank, job_id, (t // slots) % 2, t % slots, 0, 1, t, 0, key
            )
            per.append(hdr + payload)
        out.append(per)
    return out


def gso_available() -> bool:
    """Whether this kernel takes UDP_SEGMENT and UDP_GRO (the -g floor and p4reduce's
    offload path need both)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.getsockopt(socket.IPPROTO_UDP, UDP_SEGMENT)
        s.setsockopt(socket.IPPROTO_UDP, UDP_GRO, 1)
        return True
    except OSError:
        return False
    finally:
        s.close()


def switch_engines() -> list[str | None]:
    """The engines ``p4reduce-switch --engine`` offers, or [None] (its default) without it."""
    from p4reduce.testbed.local import command

    try:
        text = subprocess.run(
            [command("p4reduce-switch"), "--help"], capture_output=True, text=True, timeout=60
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return [None]
    if "--engine" not in text:
        return [None]
    return [e for e in ("python", "native") if e in text.split("--engine", 1)[1][:200]] or [None]
