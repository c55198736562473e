"""Hierarchical aggregation on loopback: R ToR switches and a spine, each a ``p4reduce-switch``
process wired by UDP ports (``-i N@udp:HOST:PORT``), one job across them installed by
``controller/tree.py`` (one P4Runtime connection per switch), and R x W unchanged host
sessions, each told its own ToR's address (docs/protocol.md, "Hierarchical aggregation").

    with TreeLoopback(racks=2, per_rack=2) as t:
        results = t.run([x0, x1, x2, x3])          # every worker's allreduce, on threads

    python -m p4reduce.testbed.tree_loopback --racks 2 --per-rack 2 [--elements N] [--calls C]
        [--loss P] [--json]                         # time per call, every result checked

Addresses: the spine listens on 127.0.39.1, ToR r on 127.0.39.(r + 2), all on one pooled
aggregation port compiled into the program (``p4reduce.stack.agg_ports``); rack r's workers
are ToR r's ports 1..W, its uplink port 40; the spine's port r + 1 is ToR r.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..controller import Controller, Member
from ..controller.client import Assignment
from ..controller.static_config import StaticConfig
from ..controller.tree import Parent, Rack, TreeJob, assignments, create_tree, delete_tree
from ..host import quantize
from ..host.api import AllreduceSession
from ..stack.agg_ports import lease_agg_port
from ..stack.process import die_with_parent_preexec, find_p4src, terminate

SPINE_IP, SPINE_MAC = "127.0.39.1", "02:00:00:00:39:01"
UPLINK = 40  # each ToR's port towards the spine
MAX_RACKS = 32
START_TIMEOUT = 240.0  # a cold native-engine compile on a loaded machine


def tor_ip(r: int) -> str:
    return f"127.0.39.{r + 2}"


def tor_mac(r: int) -> str:
    return f"02:00:00:00:39:{r + 2:02x}"


def _python_cli(module: str) -> list[str]:
    """A p4reduce command's main() run by this Python (no console script needed)."""
    return [sys.executable, "-c", f"import sys; from {module} import main; sys.exit(main())"]


class TreeError(Exception):
    """A part of the stack did not come up (one line: which, and why)."""


@dataclass
class TreeLoopback:
    racks: int = 2
    per_rack: int = 2
    program: str = "sparse"  # takes dense and sparse calls
    slots: int = 8
    job_id: int = 39
    engine: str = "native"  # the hosts' protocol core
    workdir: Path | None = None  # logs and the build (default: a temporary directory)
    spine: Controller = field(init=False)
    tors: list[Controller] = field(init=False)
    rack_specs: list[Rack] = field(init=False)
    job: TreeJob = field(init=False)
    port: int = field(init=False)
    sessions: list[AllreduceSession] = field(init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.racks <= MAX_RACKS or not 1 <= self.per_rack <= 32:
            raise ValueError(f"{self.racks} racks x {self.per_rack}: 1..32 each expected")
        self._stack = contextlib.ExitStack()
        self._procs: list[subprocess.Popen[bytes]] = []

    @property
    def n(self) -> int:
        return self.racks * self.per_rack

    def __enter__(self) -> TreeLoopback:
        try:
            self._start()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    # ------------------------------------------------------------------ start
    def _start(self) -> None:
        s = self._stack
        work = self.workdir or Path(s.enter_context(tempfile.TemporaryDirectory()))
        self.port = s.enter_context(lease_agg_port()).port
        build = self._compile(work)
        socks = []
        for _ in range(self.n):
            sk = s.enter_context(socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
            sk.bind(("127.0.0.1", 0))
            socks.append(sk)
        addrs = [sk.getsockname()[:2] for sk in socks]
        s.callback(lambda: terminate(self._procs))
        prog = build.with_suffix(".json")
        spine_peers = {r + 1: (tor_ip(r), self.port) for r in range(self.racks)}
        grpc = [self._switch(work, "spine", prog, SPINE_IP, spine_peers)]
        for r in range(self.racks):
            w0 = r * self.per_rack
            peers = {w + 1: addrs[w0 + w] for w in range(self.per_rack)}
            peers[UPLINK] = (SPINE_IP, self.port)
            grpc.append(self._switch(work, f"tor{r}", prog, tor_ip(r), peers))
        self.spine, *self.tors = [s.enter_context(Controller(g)) for g in grpc]
        for ctl, ip, mac in [(self.spine, SPINE_IP, SPINE_MAC),
                             *((t, tor_ip(r), tor_mac(r)) for r, t in enumerate(self.tors))]:  # fmt: skip
            ctl.push(build)
            ctl.install_static(StaticConfig(ip, mac))
        self.rack_specs = [
            Rack(self.tors[r],
                 [Member(r * self.per_rack + w, *addrs[r * self.per_rack + w],
                         f"02:00:00:01:{r:02x}:{w:02x}", w + 1) for w in range(self.per_rack)],
                 tor_ip(r), tor_mac(r), spine_port=r + 1, uplink_port=UPLINK, udp_port=self.port)
            for r in range(self.racks)
        ]  # fmt: skip
        self.job = create_tree(self.spine, Parent(SPINE_IP, SPINE_MAC, self.port),
                               self.rack_specs, self.job_id, self.slots)  # fmt: skip
        s.callback(lambda: delete_tree(self.spine, self.tors, self.job_id))
        # unchanged host sessions: each told its ToR's address, the total n, its global rank
        self.sessions = [
            s.enter_context(contextlib.closing(AllreduceSession(
                a, sk, engine=self.engine, transparent_retry=False)))
            for a, sk in zip(self.assignments(), socks, strict=True)
        ]  # fmt: skip

    def _compile(self, work: Path) -> Path:
        src, out = find_p4src(), work / "build"
        done = subprocess.run(
            [*_python_cli("p4reduce.switch.frontend.cli"), "-I", str(src / "include"),
             f"-DAGG_UDP_PORT={self.port}", "-o", str(out), "--p4runtime-files",
             str(out / f"{self.program}.p4info.txtpb"), str(src / f"{self.program}.p4")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if done.returncode != 0:
            raise TreeError(f"compiling {self.program}.p4 failed: {done.stderr.strip()[-500:]}")
        return out / self.program

    def _switch(self, work: Path, name: str, prog: Path, ip: str,
                peers: dict[int, tuple[str, int]]) -> str:  # fmt: skip
        """Start one switch; its P4Runtime address once it says it is ready."""
        args = [*_python_cli("p4reduce.switch.process.cli"), str(prog)]
        for port, (host, udp) in sorted(peers.items()):
            args += ["-i", f"{port}@udp:{host}:{udp}"]
        args += ["--udp-listen", f"{ip}:{self.port}", "--grpc-server-addr", "127.0.0.1:0",
                 "--log-level", "warn"]  # fmt: skip
        out, err = work / f"{name}.out", work / f"{name}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe,
                                    preexec_fn=die_with_parent_preexec())  # fmt: skip
        self._procs.append(proc)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            m = re.search(r"ready \(P4Runtime ([\d.]+:\d+)", out.read_text(errors="replace"))
            if m:
                return m[1]
            if proc.poll() is not None or time.monotonic() > deadline:
                why = (err.read_text(errors="replace").strip().splitlines() or ["no output"])[-1]
                raise TreeError(f"switch {name} did not start: {why}")
            time.sleep(0.05)

    def assignments(self) -> list[Assignment]:
        """Every worker's assignment by global rank (controller/tree.py's ``assignments``),
        with first timeouts of 20 ms (loopback)."""
        every = assignments(self.job, self.rack_specs, self.port,
                            {"initial_ms": 20, "max_ms": 200, "retries": 200})  # fmt: skip
        return [Assignment.from_dict(a) for a in every]

    # ------------------------------------------------------------------ use
    def set_loss(self, p: float) -> None:
        """Loss ``p`` both ways on every port of every switch: every link, both directions,
        is lost on twice (one switch's egress, the other's ingress)."""
        for ctl in [self.spine, *self.tors]:
            ctl.set_loss(p, direction="both")

    def run(self, inputs: list[np.ndarray], mode: str = "dense") -> list[np.ndarray]:
        """Every worker's allreduce of its input, on threads (raises the first error)."""
        if len(inputs) != self.n:
            raise ValueError(f"{len(inputs)} inputs for {self.n} workers")
        out: list[Any] = [None] * self.n
        errors: list[BaseException] = []

        def worker(rank: int) -> None:
            try:
                out[rank] = self.sessions[rank].allreduce(inputs[rank], mode=mode)
            except BaseException as e:  # noqa: BLE001 - raised by the caller's thread
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(r,), daemon=True) for r in range(self.n)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(300)
        if any(th.is_alive() for th in threads):
            raise TreeError("a worker's allreduce did not return within 300 s")
        if errors:
            raise errors[0]
        return out


def float_bound(inputs: list[np.ndarray]) -> float:
    """docs/protocol.md, "Quantization" (host/quantize.py's ``bound``) with E from the largest
    magnitude (no block's exponent is larger), plus the float32 rounding of the sum."""
    e = np.frexp(np.float64(max(float(np.max(np.abs(x))) for x in inputs)))[1] + 127
    total = float(np.max(np.abs(np.sum(inputs, axis=0, dtype=np.float64))))
    return float(quantize.bound(len(inputs), e)) + total * 2.0**-23


def measure(t: TreeLoopback, elements: int, calls: int, seed: int = 0) -> list[dict[str, Any]]:
    """Per dtype, the mean wall time of ``calls`` allreduces of ``elements`` and whether
    every result was right (int32 exact, float32 within ``float_bound``)."""
    rnd = np.random.default_rng(seed)
    rows = []
    for dtype in ("int32", "float32"):
        ok, times = True, []
        for _ in range(calls):
            if dtype == "int32":
                xs = [rnd.integers(-(2**31), 2**31, elements, dtype=np.int64).astype(np.int32)
                      for _ in range(t.n)]  # fmt: skip
                want = (
                    np.sum(np.stack(xs).astype(np.int64), axis=0).astype(np.uint32).view(np.int32)
                )
            else:
                xs = [rnd.standard_normal(elements).astype(np.float32) for _ in range(t.n)]
                want = np.sum(np.stack(xs).astype(np.float64), axis=0)
            t0 = time.perf_counter()
            got = t.run(xs)
            times.append(time.perf_counter() - t0)
            for g in got:
                if dtype == "int32":
                    ok = ok and bool(np.array_equal(g, want))
                else:
                    ok = ok and float(np.max(np.abs(g - want))) <= float_bound(xs)
        rows.append({"racks": t.racks, "per_rack": t.per_rack, "dtype": dtype,
                     "elements": elements, "calls": calls, "mean_s": float(np.mean(times)),
                     "correct": ok})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m p4reduce.testbed.tree_loopback",
        description="time allreduce calls through ToR switches and a spine on loopback",
    )
    ap.add_argument("--racks", type=int, default=2)
    ap.add_argument("--per-rack", type=int, default=2)
    ap.add_argument("--elements", type=int, default=65536)
    ap.add_argument("--calls", type=int, default=5)
    ap.add_argument("--loss", type=float, default=0.0, help="on every port of every switch")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    if not 0 <= a.loss < 1 or a.elements < 1 or a.calls < 1:
        ap.error("--loss in [0, 1), --elements and --calls at least 1")
    try:
        with TreeLoopback(a.racks, a.per_rack) as t:
            t.set_loss(a.loss)
            rows = measure(t, a.elements, a.calls)
    except (TreeError, ValueError) as e:
        print(f"{ap.prog}: error: {e}", file=sys.stderr)
        return 1
    for row in rows:
        row["loss"] = a.loss
        print(json.dumps(row) if a.json else
              f"{row['racks']} racks x {row['per_rack']}: {row['dtype']} {row['elements']} "
              f"elements, {row['mean_s'] * 1000:.1f} ms per call (mean of {row['calls']}), "
              f"loss {a.loss:g}, {'correct' if row['correct'] else 'WRONG'}")  # fmt: skip
    return 0 if all(r["correct"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
