"""The whole stack on loopback, started through its commands (docs/architecture.md):

1. ``p4reduce-p4c`` compiles ``p4src/dense.p4`` or ``p4src/sparse.p4`` into a temporary
   directory, with a pooled UDP port compiled in as the aggregation port (``-DAGG_UDP_PORT``,
   ``agg_ports.py``);
2. this process binds one UDP socket per worker on 127.0.0.1;
3. ``p4reduce-switch`` loads the program, with switch port r + 1 standing for worker r's
   socket (``-i r+1@udp:127.0.0.1:PORT``) and its UDP adapter on the aggregation port;
4. ``p4reduce-ctl push`` installs the pipeline and the switch's address, ``p4reduce-ctl loss``
   sets the loss simulator on the worker ports when asked, and ``p4reduce-ctl serve`` runs
   the registration service (each with its own, rising election id, so a one-shot command
   whose stream the switch has not yet seen close never blocks the next one).

With ``peers=[(ip, port), ...]`` the workers bring their own sockets (step 2 is skipped):
switch port r + 1 stands for ``peers[r]``. The torch backend (``p4reduce.host.torch``) starts
its loopback stack that way, with ``die_with_parent=True`` so that the switch and the service
also go when the process that started them is killed. The testbed's ``LocalStack``
(``testbed/local.py``) adds worker processes on the stack's own sockets.

Leaving the ``with`` block (normally, on an exception, on Ctrl-C) stops every process it
started: SIGTERM, then SIGKILL after a grace period, and removes the temporary directory.

    with LoopbackStack(ports=3, program="dense", peers=addresses) as stack:
        url = stack.url  # the registration service the workers join
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .. import contracts
from .agg_ports import AggPortLease, lease_agg_port
from .process import (
    Proc,
    Stack,
    StackError,
    _SpawnThread,
    command,
    die_with_parent_preexec,
    find_p4src,
    run_ctl,
    stop_signals_held,
    terminate,
)

SWITCH_MAC = "02:00:00:00:00:fe"
SWITCH_IP = "127.0.0.1"
PROGRAMS = ("dense", "sparse")


def _engine_arg(args: Sequence[str]) -> str | None:
    """The value of ``--engine`` in p4reduce-switch arguments (None when absent)."""
    for i, a in enumerate(args):
        if a == "--engine" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--engine="):
            return a.split("=", 1)[1]
    return None


class LoopbackStack(Stack):
    """The embedded switch and the controller's registration service on loopback.

    ``peers``: the workers' own UDP addresses, one per port (``len(peers) == ports``); the
    stack then binds no sockets. Without them it binds one socket per port
    (``worker_addresses``, ``sockets``) for workers it hands them to (the testbed's
    ``LocalStack.spawn_workers``). ``switch_args``: extra ``p4reduce-switch`` options
    (bench/switch.py passes ``--engine``). ``die_with_parent``: the switch and the service
    get SIGTERM when this process dies, however it dies (Linux; elsewhere only ``stop()``
    stops them). ``start_timeout``: seconds each process may take to say it is ready; the
    switch's native engine is compiled (on a cache miss) before that clock starts, under
    ``build_timeout`` of its own (``timings["native"]``).
    """

    def __init__(
        self,
        ports: int,
        program: str = "dense",
        *,
        k: int = 64,
        slots: int = 64,
        loss: float = 0.0,
        initial_timeout_ms: int | None = None,
        max_timeout_ms: int | None = None,
        retries: int | None = None,
        join_timeout: float = 60.0,
        workdir: str | Path | None = None,
        log: Callable[[str], None] | None = None,
        start_timeout: float = 60.0,
        peers: Sequence[tuple[str, int]] | None = None,
        die_with_parent: bool = False,
        switch_args: Sequence[str] = (),
        build_timeout: float = 600.0,
    ) -> None:
        if program not in PROGRAMS:
            raise StackError(f"program {program!r}: one of {', '.join(PROGRAMS)}")
        if not 1 <= ports <= contracts.MAX_WORKERS:
            raise StackError(f"{ports} worker ports: 1 .. {contracts.MAX_WORKERS}")
        if peers is not None and len(peers) != ports:
            raise StackError(f"{len(peers)} peer addresses for {ports} worker ports")
        self.peers = [(str(ip), int(port)) for ip, port in peers] if peers is not None else None
        self._preexec = die_with_parent_preexec() if die_with_parent else None
        self.ports = ports
        self.program = program
        self.k = k
        self.slots = slots
        self.loss = loss
        self.initial_timeout_ms = initial_timeout_ms
        self.max_timeout_ms = max_timeout_ms
        self.retries = retries
        self.join_timeout = join_timeout
        self.start_timeout = start_timeout
        self.build_timeout = build_timeout
        self._workdir_arg = workdir
        self._log = log or (lambda _msg: None)
        self.dir: Path | None = None
        self._own_dir = False
        self.sockets: list[socket.socket] = []
        self.procs: list[Proc] = []
        self.switch: Proc | None = None
        self.serve: Proc | None = None
        self.agg_port = 0
        self._lease: AggPortLease | None = None
        self.grpc_addr = ""
        self.url = ""
        self.timings: dict[str, float] = {}
        self.switch_args = list(switch_args)  # extra p4reduce-switch options (e.g. --engine)

    # ------------------------------------------------------------------ life cycle
    def start(self) -> None:
        if self._workdir_arg is None:
            self.dir = Path(tempfile.mkdtemp(prefix="p4reduce-stack-"))
            self._own_dir = True
        else:
            self.dir = Path(self._workdir_arg)
            self.dir.mkdir(parents=True, exist_ok=True)
        tried: set[int] = set()
        for attempt in range(3):
            self._release_port()
            self._lease = lease_agg_port(tried)
            self.agg_port = self._lease.port
            tried.add(self.agg_port)
            self._compile()
            if self.peers is None:
                self._bind_sockets()
            try:
                self._start_switch()
                break
            except StackError as err:
                # the port may have been taken between choosing and binding it: try another
                if attempt == 2 or "Address already in use" not in str(err):
                    raise
                self._close_sockets()
        self._configure()
        self._start_serve()

    def stop(self) -> None:
        """Stop every process (workers first, the switch last); idempotent. A second
        Ctrl-C or a SIGTERM meanwhile waits until it has finished."""
        with stop_signals_held():
            self._stop()

    def _stop(self) -> None:
        terminate([p.popen for p in reversed(self.procs)])
        for p in self.procs:  # reap anything that had already exited
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.popen.wait(timeout=1)
        self._close_sockets()
        self._release_port()
        if self._own_dir and self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    def _release_port(self) -> None:
        if self._lease is not None:
            self._lease.release()
            self._lease = None

    def pids(self) -> list[int]:
        return [p.pid for p in self.procs]

    # ------------------------------------------------------------------ steps
    def _timed(self, name: str, t0: float) -> None:
        self.timings[name] = time.perf_counter() - t0

    def _compile(self) -> None:
        assert self.dir is not None
        t0 = time.perf_counter()
        src = find_p4src()
        out = self.dir / "build"
        out.mkdir(exist_ok=True)
        args = [
            command("p4reduce-p4c"), "-I", str(src / "include"),
            f"-DAGG_UDP_PORT={self.agg_port}", "-o", str(out),
            "--p4runtime-files", str(out / f"{self.program}.p4info.txtpb"),
        ]  # fmt: skip
        if self.k != contracts.K_DEFAULT:
            args.append(f"-DK={self.k}")
        args.append(str(src / f"{self.program}.p4"))
        done = subprocess.run(args, capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            msg = (done.stderr.strip().splitlines() or ["no output"])[0]
            raise StackError(f"compiling {self.program}.p4 failed: {msg}")
        self.prefix = out / self.program
        self._timed("compile", t0)
        self._log(f"compiled {self.program}.p4 (K = {self.k}, aggregation port {self.agg_port})")
        self._prebuild()

    def _prebuild(self) -> None:
        """Put the switch's native engine into its cache before the switch starts, so the
        start deadline never includes a C compile (K = 1024: about 80 s on a loaded
        machine, once per program, K and pool port); the compile has ``build_timeout`` of
        its own. Where the native engine cannot run, the switch says so itself."""
        if _engine_arg(self.switch_args) == "python":
            return
        from ..switch.native.select import prebuild

        t0 = time.perf_counter()
        program = f"{self.program}.p4, K = {self.k}"

        def compiling() -> None:
            self._log(f"compiling the native engine for {program} (first start only)...")

        try:
            got = prebuild(self.prefix.with_suffix(".json"), compiling, self.build_timeout)
        except Exception as e:  # noqa: BLE001 - the switch loads the program itself and says why
            self._log(f"native engine for {program} not prebuilt: {e}")
            return
        finally:
            self._timed("native", t0)
        if got.compiled:
            self._log(f"native engine for {program} compiled and cached")
        elif got.reason is not None:
            self._log(f"native engine not available for {program}: {got.reason}")

    def _bind_sockets(self) -> None:
        self._close_sockets()
        for _ in range(self.ports):
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.bind(("127.0.0.1", 0))
            with contextlib.suppress(OSError):
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
                s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
            self.sockets.append(s)

    def worker_addresses(self) -> list[tuple[str, int]]:
        """The UDP address switch port r + 1 stands for, per rank r."""
        if self.peers is not None:
            return list(self.peers)
        return [s.getsockname()[:2] for s in self.sockets]

    def _close_sockets(self) -> None:
        for s in self.sockets:
            s.close()
        self.sockets = []

    def _spawn(self, name: str, args: Sequence[str], **kw: Any) -> Proc:
        assert self.dir is not None
        logs = self.dir / "logs"
        logs.mkdir(exist_ok=True)
        out, err = logs / f"{name}.out", logs / f"{name}.err"
        with open(out, "wb") as fo, open(err, "wb") as fe:
            kw.update(stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
            if self._preexec is not None:
                popen = _SpawnThread.popen(list(args), preexec_fn=self._preexec, **kw)
            else:
                popen = subprocess.Popen(list(args), **kw)
        proc = Proc(name, popen, out, err)
        self.procs.append(proc)
        return proc

    def _wait_ready(self, proc: Proc, what: str) -> str:
        """The process's first stdout line with ``ready`` in it; StackError if it exits or
        stays silent past the start timeout."""
        deadline = time.monotonic() + self.start_timeout
        while True:
            text = proc.stdout.read_text(errors="replace")
            for line in text.splitlines():
                if "ready" in line:
                    return line
            if not proc.alive():
                raise StackError(f"{what} did not start: {proc.error()}")
            if time.monotonic() > deadline:
                raise StackError(
                    f"{what} did not start within {self.start_timeout:g} s: {proc.error()}"
                )
            time.sleep(0.02)

    def _start_switch(self) -> None:
        t0 = time.perf_counter()
        args = [command("p4reduce-switch"), str(self.prefix.with_suffix(".json"))]
        for rank, (ip, port) in enumerate(self.worker_addresses()):
            args += ["-i", f"{rank + 1}@udp:{ip}:{port}"]
        args += [
            "--udp-listen", f"127.0.0.1:{self.agg_port}",
            "--grpc-server-addr", "127.0.0.1:0", "--log-level", "warn", *self.switch_args,
        ]  # fmt: skip
        self.switch = self._spawn("switch", args)
        try:
            line = self._wait_ready(self.switch, "p4reduce-switch")
        except StackError:
            if self.switch.alive():
                self.switch.popen.kill()
            self.switch.popen.wait()
            self.procs.remove(self.switch)  # reaped: pids() lists the stack's live processes
            raise
        m = re.search(r"P4Runtime ([\d.]+:\d+)", line)
        if m is None:
            raise StackError(f"p4reduce-switch: unexpected ready line {line!r}")
        self.grpc_addr = m[1]
        self._timed("switch", t0)
        self._log(f"switch ready (P4Runtime {self.grpc_addr}, {self.ports} worker ports)")

    def ctl(self, *args: str, election_id: int | None = None) -> dict[str, Any]:
        """Run a one-shot ``p4reduce-ctl --json`` command; its JSON answer."""
        return run_ctl(self.grpc_addr, *args, election_id=election_id)

    def _configure(self) -> None:
        t0 = time.perf_counter()
        self.ctl(
            "push", str(self.prefix), "--switch-ip", SWITCH_IP, "--switch-mac", SWITCH_MAC,
            election_id=1,
        )  # fmt: skip
        if self.loss > 0:
            ports = [f"--port={r + 1}" for r in range(self.ports)]
            self.ctl("loss", repr(self.loss), *ports, "--direction", "both", election_id=2)
            self._log(f"loss {self.loss:g} both ways on switch ports 1..{self.ports}")
        self._timed("configure", t0)

    def _start_serve(self) -> None:
        t0 = time.perf_counter()
        args = [
            command("p4reduce-ctl"), "--grpc-addr", self.grpc_addr, "--election-id", "3",
            "--json", "serve", "--listen", "127.0.0.1:0",
            "--switch-ip", SWITCH_IP, "--switch-mac", SWITCH_MAC,
            "--agg-port", str(self.agg_port), "--slots", str(self.slots),
            "--join-timeout", f"{self.join_timeout:g}",
        ]  # fmt: skip
        if self.initial_timeout_ms is not None:
            args += ["--initial-timeout-ms", str(self.initial_timeout_ms)]
        if self.max_timeout_ms is not None:
            args += ["--max-timeout-ms", str(self.max_timeout_ms)]
        if self.retries is not None:
            args += ["--retries", str(self.retries)]
        self.serve = self._spawn("serve", args)
        line = self._wait_ready(self.serve, "p4reduce-ctl serve")
        try:
            self.url = json.loads(line)["url"]
        except (ValueError, KeyError):
            raise StackError(f"p4reduce-ctl serve: unexpected ready line {line!r}") from None
        self._timed("serve", t0)
        self._log(f"registration service ready at {self.url}")
