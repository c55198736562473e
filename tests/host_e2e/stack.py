"""The aggregation stack for end-to-end tests of the host agent: ``p4reduce-switch`` running
a compiled program behind its loopback UDP adapter, ``p4reduce-ctl serve`` as the
registration service, and workers (threads of the test process) that join with sockets
bound before the switch started, as an orchestrator does (tests/integration shows the same
pattern step by step).

The switch's ports 1..P stand for a pool of pre-bound worker sockets. A worker gets a
``dup()`` of its pool socket: its session closes the duplicate, the pool keeps the port
bound, so one switch serves many jobs one after another.
"""

from __future__ import annotations

import concurrent.futures
import json
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from p4reduce.host import AllreduceSession, RetryPolicy
from p4reduce.host.quantize import block_exponents, bound, to_blocks
from p4reduce.switch.frontend.cli import main as p4c_main

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
SWITCH_MAC = "02:00:00:00:00:fe"
K = 64

# Fast retransmission for loopback, a bounded give-up so a broken test fails quickly.
RETRY = RetryPolicy(initial_timeout=0.05, max_timeout=0.4, give_up_after=30.0)


def compile_program(name: str, out: Path, agg_port: int) -> Path:
    """``p4src/NAME.p4`` compiled with ``-DAGG_UDP_PORT``; returns the build prefix."""
    rc = p4c_main(
        [
            "-I", str(ROOT / "p4src" / "include"), f"-DAGG_UDP_PORT={agg_port}",
            "-o", str(out), "--p4runtime-files", str(out / f"{name}.p4info.txtpb"),
            str(ROOT / "p4src" / f"{name}.p4"),
        ]
    )  # fmt: skip
    assert rc == 0, f"{name}.p4 does not compile"
    return out / name


class Process:
    """A command whose first stdout line says it is ready; stopped with SIGTERM."""

    def __init__(self, args: list[str], ready: str) -> None:
        self.args = args
        self.proc = subprocess.Popen(
            args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.line = self.proc.stdout.readline()
        if ready not in self.line:
            self.proc.kill()
            _, err = self.proc.communicate(timeout=20)
            raise AssertionError(f"{args[0]} did not start: {self.line!r} {err!r}")

    def stop(self) -> int:
        """SIGTERM, then SIGKILL if it does not exit; returns the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for f in (self.proc.stdout, self.proc.stderr):
            if f is not None:
                f.close()
        return self.proc.returncode

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@dataclass
class Stack:
    """One switch + registration service, with a pool of pre-bound worker sockets."""

    program: str
    prefix: Path
    agg_port: int
    pool: list[socket.socket]
    slots: int = 64
    switch: Process | None = None
    serve: Process | None = None
    url: str = ""
    grpc: str = ""
    next_job: int = 1
    loss_ports: set[int] = field(default_factory=set)
    switch_args: list[str] = field(default_factory=list)  # e.g. ["--engine", "python"]

    def start(self) -> Stack:
        args = [str(BIN / "p4reduce-switch"), str(self.prefix.with_suffix(".json"))]
        for i, s in enumerate(self.pool):
            args += ["-i", f"{i + 1}@udp:127.0.0.1:{s.getsockname()[1]}"]
        args += ["--udp-listen", f"127.0.0.1:{self.agg_port}"]
        args += ["--grpc-server-addr", "127.0.0.1:0", "--log-level", "warn", *self.switch_args]
        self.switch = Process(args, "ready")
        m = re.search(r"P4Runtime ([\d.]+:\d+)", self.switch.line)
        assert m, self.switch.line
        self.grpc = m[1]
        try:
            self.serve = Process(
                [
                    str(BIN / "p4reduce-ctl"), "--grpc-addr", self.grpc, "serve",
                    "--listen", "127.0.0.1:0", "--program", str(self.prefix),
                    "--switch-ip", "127.0.0.1", "--switch-mac", SWITCH_MAC,
                    "--agg-port", str(self.agg_port), "--slots", str(self.slots),
                ],
                "ready",
            )  # fmt: skip
        except BaseException:
            self.switch.stop()
            raise
        m = re.search(r"registration (http://[\d.:]+)", self.serve.line)
        assert m, self.serve.line
        self.url = m[1]
        return self

    def stop(self) -> None:
        """Stop the service and the switch (each exits 0 on SIGTERM)."""
        codes = []
        for p in (self.serve, self.switch):
            if p is not None:
                codes.append(p.stop())
        self.serve = self.switch = None
        assert all(c == 0 for c in codes), f"exit codes {codes}"

    def ctl(self, *args: str) -> dict[str, Any]:
        """``p4reduce-ctl --json ...``; a second election id, since ``serve`` holds 1."""
        done = subprocess.run(
            [str(BIN / "p4reduce-ctl"), "--grpc-addr", self.grpc, "--election-id", "2",
             "--json", *args],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    def set_loss(self, p: float, ranks: Sequence[int]) -> None:
        ports = [str(r + 1) for r in ranks]
        args = ["loss", str(p), "--direction", "both"]
        for port in ports:
            args += ["--port", port]
        self.ctl(*args)
        self.loss_ports.update(int(x) for x in ports)

    def clear_loss(self) -> None:
        if self.loss_ports:
            args = ["loss", "0", "--direction", "both"]
            for port in sorted(self.loss_ports):
                args += ["--port", str(port)]
            self.ctl(*args)
            self.loss_ports.clear()

    def job_ids(self) -> list[int]:
        return [j["job_id"] for j in self.ctl("job", "list")["jobs"]]

    def join(
        self,
        n: int,
        *,
        retry: RetryPolicy = RETRY,
        slots: int | None = None,
        timeout: float = 30.0,
        first: int = 0,
        auto_recover: bool = True,
        engine: str = "native",
        nonfinite: str = "propagate",
        threads: int = 1,
    ) -> list[AllreduceSession]:
        """n workers join a new job concurrently; returns their sessions by rank. Rank r
        uses pool socket ``first + r`` (switch port ``first + r + 1``)."""
        assert first + n <= len(self.pool)
        job = self.next_job
        self.next_job += 1
        secret = f"test-secret-of-job-{job}"  # one per job, shared by its ranks

        def one(rank: int) -> AllreduceSession:
            return AllreduceSession.join(
                self.url, job, rank, n, sock=self.pool[first + rank].dup(),
                switch_port=first + rank + 1, slots=slots, timeout=timeout, retry=retry,
                auto_recover=auto_recover, secret=secret, engine=engine, nonfinite=nonfinite,
                threads=threads,
            )  # fmt: skip

        with concurrent.futures.ThreadPoolExecutor(n) as ex:
            futures = [ex.submit(one, r) for r in range(n)]
            concurrent.futures.wait(futures)
        sessions = [f.result() for f in futures if f.exception() is None]
        errors = [f.exception() for f in futures if f.exception() is not None]
        if errors:
            for s in sessions:
                s.close()
            raise errors[0]
        return sessions


def on_all(
    sessions: Sequence[AllreduceSession], fn: Callable[[AllreduceSession, int], Any]
) -> list[Any]:
    """``fn(session, rank)`` on one thread per worker; results by rank. Every thread is
    joined before returning; the first exception (by rank) is raised."""
    with concurrent.futures.ThreadPoolExecutor(len(sessions)) as ex:
        futures = [ex.submit(fn, s, r) for r, s in enumerate(sessions)]
        concurrent.futures.wait(futures)
    return [f.result() for f in futures]


def close_all(sessions: Sequence[AllreduceSession]) -> list[Any]:
    for s in sessions:
        s.close()
    return [s.left for s in sessions]


# ------------------------------------------------------------------ data and checks


def make_tensor(
    rng: np.random.Generator, m: int, dtype: type, density: float = 1.0, k: int = K
) -> np.ndarray:
    """M elements; with density < 1 only that fraction of the K-blocks is non-zero."""
    if dtype == np.float32:
        x = (rng.standard_normal(m) * np.exp2(rng.integers(-8, 8, m))).astype(np.float32)
    else:
        x = rng.integers(-(2**31), 2**31, m, dtype=np.int64).astype(np.int32)
    if density < 1.0:
        nb = -(-m // k)
        keep = rng.random(nb) < density
        x[~np.repeat(keep, k)[:m]] = 0
    return x


def reference(xs: Sequence[np.ndarray]) -> np.ndarray:
    """The reference sum: in float64 for float32 inputs (exact for the test data, whose
    exponents span less than the 29 bits float64 has in excess), wrapping for int32."""
    if xs[0].dtype == np.float32:
        return np.sum([x.astype(np.float64) for x in xs], axis=0)
    return np.sum([x.astype(np.int64) for x in xs], axis=0).astype(np.int32)  # wraps


def _bound(xs: Sequence[np.ndarray], k: int, slots: int | None) -> np.ndarray:
    """Per element, docs/protocol.md's bound n² · 2^(E − 159) with the agreed exponent E
    of the element's quantization unit, which the test recomputes from the inputs: the
    largest exponent any worker has in the element's block (dense), or in the block's
    stride class of ``slots`` (sparse quantizes a whole class with one exponent)."""
    n = len(xs)
    m = xs[0].size
    e = np.max([block_exponents(to_blocks(x, k)) for x in xs], axis=0).astype(np.int64)
    if slots is not None:
        nb = e.size
        rows = -(-nb // slots)
        grid = np.zeros(rows * slots, dtype=np.int64)
        grid[:nb] = e
        e = np.tile(grid.reshape(rows, slots).max(axis=0), rows)[:nb]
    per_block = np.asarray(bound(n, e), dtype=np.float64)
    return np.repeat(per_block, k)[:m].reshape(xs[0].shape)


def check_float(result: np.ndarray, xs: Sequence[np.ndarray], tol: np.ndarray) -> None:
    """|result − Σx| ≤ bound + half an ulp of the float32 result, per element."""
    assert result.dtype == np.float32 and result.shape == xs[0].shape
    exact = reference(xs)
    r = result.astype(np.float64)
    half_ulp = np.spacing(np.abs(result)).astype(np.float64) / 2
    err = np.abs(r - exact)
    bad = err > tol + half_ulp
    assert not bad.any(), (
        f"{int(bad.sum())} of {bad.size} elements off; first at {int(np.argmax(bad))}: "
        f"got {r.reshape(-1)[np.argmax(bad)]}, exact {exact.reshape(-1)[np.argmax(bad)]}"
    )


def check(result: np.ndarray, xs: Sequence[np.ndarray], *, sparse_slots: int | None = None) -> None:
    """int32: exactly the wrapping sum; float32: within the bound of the unit it travelled
    in (block for dense, stride class for sparse: pass the job's slot count)."""
    if xs[0].dtype == np.int32:
        assert result.dtype == np.int32 and result.shape == xs[0].shape
        np.testing.assert_array_equal(result, reference(xs))
        return
    tol = _bound(xs, K, sparse_slots)
    check_float(result, xs, tol)
