"""The whole aggregation stack as users run it: ``p4reduce-switch`` with the dense program
and the loopback UDP adapter, configured by ``p4reduce-ctl`` over P4Runtime (one-shot
commands, then the ``serve`` registration service), and workers that are plain UDP sockets
sending frames crafted from docs/protocol.md."""

from __future__ import annotations

import json
import re
import socket
import struct
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from p4reduce.controller import RegistrationClient
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.testbed.local import AggPortLease, lease_agg_port, terminate

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SWITCH_MAC = "02:00:00:00:00:fe"
K = 64
JOB = 7


@dataclass
class Build:
    prefix: Path  # PREFIX.json + PREFIX.p4info.txtpb
    agg_port: int
    out: Path
    lease: AggPortLease
    tried: set[int] = field(default_factory=set)

    def relocate(self) -> None:
        """Another pool port, compiled in: a process outside the pool's locks (a stack of an
        older checkout on a shared machine) holds this one."""
        self.tried.add(self.agg_port)
        lease = lease_agg_port(self.tried)
        self.lease.release()
        self.lease = lease
        self.prefix, self.agg_port = _compile(self.out / str(lease.port), lease.port), lease.port


@pytest.fixture(scope="module")
def build(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Build]:
    """The dense program compiled for an aggregation port nobody else uses: the adapter
    hands frames to the program with the adapter's own port as UDP destination. The port
    comes from the stacks' fixed pool and is held for the module (so the native engine's
    cache hits from the second run on, and a parallel run takes another one)."""
    out = tmp_path_factory.mktemp("build")
    lease = lease_agg_port()
    b = Build(_compile(out, lease.port), lease.port, out, lease)
    try:
        yield b
    finally:
        b.lease.release()


def _compile(out: Path, port: int) -> Path:
    rc = p4c_main(
        [
            "-I", str(ROOT / "p4src" / "include"), f"-DAGG_UDP_PORT={port}",
            "-o", str(out), "--p4runtime-files", str(out / "dense.p4info.txtpb"),
            str(ROOT / "p4src" / "dense.p4"),
        ]
    )  # fmt: skip
    assert rc == 0
    return out / "dense"


class Process:
    """A command whose first stdout line says it is ready; stopped with SIGTERM."""

    def __init__(self, args: list[str], ready: str) -> None:
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.line = self.proc.stdout.readline()
        if ready not in self.line:
            self.proc.kill()
            raise AssertionError(
                f"{args[0]} did not start: {self.line!r} {self.proc.stderr.read()!r}"
            )

    def stop(self) -> int:
        terminate([self.proc], grace=20)
        return self.proc.returncode


@dataclass
class Worker:
    rank: int
    sock: socket.socket
    port: int  # switch port

    @property
    def udp_port(self) -> int:
        return self.sock.getsockname()[1]

    @property
    def mac(self) -> str:
        return f"02:00:00:00:01:{self.rank:02x}"


@pytest.fixture
def stack(build: Build) -> Iterator[tuple[Process, list[Worker]]]:
    workers = []
    for rank in range(3):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        s.bind(("127.0.0.1", 0))
        s.settimeout(10)
        workers.append(Worker(rank, s, rank + 1))
    for attempt in range(3):
        args = [str(BIN / "p4reduce-switch"), str(build.prefix.with_suffix(".json"))]
        for w in workers:
            args += ["-i", f"{w.port}@udp:127.0.0.1:{w.udp_port}"]
        args += ["--udp-listen", f"127.0.0.1:{build.agg_port}", "--grpc-server-addr", "127.0.0.1:0"]
        try:
            switch = Process(args, "ready")
            break
        except AssertionError as err:
            if attempt == 2 or "Address already in use" not in str(err):
                for w in workers:
                    w.sock.close()
                raise
            build.relocate()
    try:
        yield switch, workers
    finally:
        assert switch.stop() == 0
        for w in workers:
            w.sock.close()


def grpc_addr(switch: Process) -> str:
    m = re.search(r"P4Runtime ([\d.]+:\d+)", switch.line)
    assert m, switch.line
    return m[1]


def ctl(switch: Process, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "p4reduce-ctl"), "--grpc-addr", grpc_addr(switch), *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip


def ctl_json(switch: Process, *args: str) -> dict:
    done = ctl(switch, "--json", *args)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def agg(
    rank: int, slot: int, set_: int, values: list[int] | None, key: int, packet_id: int = 1
) -> bytes:
    """A worker's UDP payload (docs/protocol.md, Aggregation header), with the job key."""
    flags = 0 if values is not None else 0x2
    header = struct.pack(
        "!BBHHBBIIII", (1 << 4) | flags, rank, JOB, (set_ << 15) | slot, 130 + rank, 0,
        packet_id, slot, 0, key,
    )  # fmt: skip
    return header + (struct.pack(f"!{K}i", *values) if values is not None else b"")


def result(payload: bytes) -> tuple[int, int, int, list[int] | None]:
    """(flags, slot, exponent, lanes) of a result."""
    b0, _rank, job, setslot, exponent = struct.unpack_from("!BBHHB", payload)
    assert b0 >> 4 == 1 and job == JOB
    flags = b0 & 0xF
    lanes = None if flags & 0x2 else list(struct.unpack_from(f"!{K}i", payload, 24))
    return flags, setslot & 0x7FFF, exponent, lanes


def values_of(rank: int) -> list[int]:
    return [rank * 1000 + i - 32 for i in range(K)]


def send_all(build: Build, workers: list[Worker], slot: int, set_: int, key: int) -> None:
    for w in workers:
        w.sock.sendto(
            agg(w.rank, slot, set_, values_of(w.rank), key), ("127.0.0.1", build.agg_port)
        )


def test_one_shot_commands_drive_an_aggregation(
    build: Build, stack: tuple[Process, list[Worker]]
) -> None:
    switch, workers = stack
    pushed = ctl_json(switch, "push", str(build.prefix), "--switch-ip", "127.0.0.1",
                      "--switch-mac", SWITCH_MAC)  # fmt: skip
    assert (pushed["kind"], pushed["k"]) == ("dense", K)
    members = [f"--member={w.rank}:127.0.0.1:{w.udp_port}:{w.mac}:{w.port}" for w in workers]
    job = ctl_json(switch, "job", "create", "--job", str(JOB), "--slots", "4", *members)
    assert len(job["members"]) == 3
    key = job["job_key"]

    send_all(build, workers, slot=2, set_=0, key=key)
    expected = [sum(values_of(r)[i] for r in range(3)) for i in range(K)]
    for w in workers:
        data, _ = w.sock.recvfrom(4096)
        flags, slot, exponent, lanes = result(data)
        assert (flags, slot, exponent, lanes) == (0x1, 2, 132, expected)

    # a retransmission into the complete slot is answered by unicast, to its sender only
    workers[0].sock.sendto(agg(0, 2, 0, values_of(0), key), ("127.0.0.1", build.agg_port))
    data, _ = workers[0].sock.recvfrom(4096)
    assert result(data) == (0x1 | 0x4, 2, 132, expected)
    # a forged rank and an out-of-range slot are dropped and counted
    workers[1].sock.sendto(agg(0, 1, 0, values_of(0), key), ("127.0.0.1", build.agg_port))
    workers[1].sock.sendto(agg(1, 4, 0, values_of(1), key), ("127.0.0.1", build.agg_port))
    # and so is a packet from a registered worker with another key
    workers[1].sock.sendto(agg(1, 1, 0, values_of(1), key ^ 1), ("127.0.0.1", build.agg_port))

    state = ctl_json(switch, "slots", "--job", str(JOB), "--range", "2")
    set0 = state["slots"][0]["sets"][0]
    assert (set0["ranks"], set0["count"], set0["complete"]) == ([0, 1, 2], 3, True)
    stats = {s["job_index"]: s for s in ctl_json(switch, "stats")["jobs"]}
    mine = stats[job["job_index"]]
    assert (mine["aggregated"], mine["results_multicast"], mine["retransmits_answered"]) == (
        3,
        1,
        1,
    )
    assert mine["drops"]["wrong_rank"] == 1 and mine["drops"]["slot_range"] == 1
    assert mine["drops"]["bad_key"] == 1

    assert ctl(switch, "job", "delete", "--job", str(JOB)).returncode == 0
    listed = ctl_json(switch, "job", "list")
    assert listed["jobs"] == []
    # the deleted job's workers are now unknown senders
    workers[0].sock.sendto(agg(0, 2, 1, values_of(0), key), ("127.0.0.1", build.agg_port))
    stats = {s["job_index"]: s for s in ctl_json(switch, "stats")["jobs"]}
    assert stats[0]["drops"]["unknown_sender"] == 1

    # errors are one line and a non-zero exit
    bad = ctl(switch, "job", "delete", "--job", "99")
    assert bad.returncode != 0 and bad.stderr.count("\n") == 1 and "error" in bad.stderr


def test_registration_service_installs_the_job_once_all_ranks_joined(
    build: Build, stack: tuple[Process, list[Worker]]
) -> None:
    switch, workers = stack
    serve = Process(
        [
            str(BIN / "p4reduce-ctl"), "--grpc-addr", grpc_addr(switch), "serve",
            "--listen", "127.0.0.1:0", "--program", str(build.prefix),
            "--switch-ip", "127.0.0.1", "--switch-mac", SWITCH_MAC,
            "--agg-port", str(build.agg_port), "--slots", "8",
        ],
        "ready",
    )  # fmt: skip
    try:
        url = re.search(r"registration (http://[\d.:]+)", serve.line)
        assert url, serve.line
        client = RegistrationClient(url[1], timeout=30, secret="the-secret-of-this-test-job")
        assignments: dict[int, object] = {}

        def join(w: Worker) -> None:
            assignments[w.rank] = client.join(
                JOB, rank=w.rank, n=3, ip="127.0.0.1", udp_port=w.udp_port, mac=w.mac,
                switch_port=w.port,
            )  # fmt: skip

        threads = [threading.Thread(target=join, args=(w,)) for w in workers]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert sorted(assignments) == [0, 1, 2]
        a0 = assignments[0]
        assert (a0.agg_port, a0.slot_count, a0.k, a0.n) == (build.agg_port, 8, K, 3)
        assert all(a.slot_base == a0.slot_base for a in assignments.values())

        send_all(build, workers, slot=7, set_=1, key=a0.job_key)
        expected = [sum(values_of(r)[i] for r in range(3)) for i in range(K)]
        for w in workers:
            data, _ = w.sock.recvfrom(4096)
            assert result(data)[3] == expected

        generations = []
        barrier = [
            threading.Thread(
                target=lambda r=w.rank: generations.append(client.barrier(JOB, rank=r))
            )
            for w in workers
        ]
        for t in barrier:
            t.start()
        for t in barrier:
            t.join(timeout=30)
        assert generations == [0, 0, 0]
        left = [client.leave(JOB, rank=w.rank) for w in workers]
        assert [x["deleted"] for x in left] == [False, False, True]
    finally:
        assert serve.stop() == 0
    assert ctl_json(switch, "job", "list")["jobs"] == []
