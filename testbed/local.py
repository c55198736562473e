"""The whole stack on loopback, started through its commands (docs/architecture.md):

1. ``p4reduce-p4c`` compiles ``p4src/dense.p4`` or ``p4src/sparse.p4`` into a temporary
   directory, with a free UDP port compiled in as the aggregation port (``-DAGG_UDP_PORT``);
2. this process binds one UDP socket per worker on 127.0.0.1;
3. ``p4reduce-switch`` loads the program, with switch port r + 1 standing for worker r's
   socket (``-i r+1@udp:127.0.0.1:PORT``) and its UDP adapter on the aggregation port;
4. ``p4reduce-ctl push`` installs the pipeline and the switch's address, ``p4reduce-ctl loss``
   sets the loss simulator on the worker ports when asked, and ``p4reduce-ctl serve`` runs
   the registration service (each with its own, rising election id, so a one-shot command
   whose stream the switch has not yet seen close never blocks the next one);
5. workers are processes (``python -m p4reduce.testbed.worker``) that get their socket by
   file descriptor (``pass_fds``), join the job at the service and run their calls.

With ``peers=[(ip, port), ...]`` the workers bring their own sockets (step 2 is skipped):
switch port r + 1 stands for ``peers[r]``. The torch backend (``p4reduce.host.torch``) starts
its loopback stack that way, with ``die_with_parent=True`` so that the switch and the service
also go when the process that started them is killed.

Leaving the ``with`` block (normally, on an exception, on Ctrl-C) stops every process it
started: SIGTERM, then SIGKILL after a grace period, and removes the temporary directory.

    with LocalStack(ports=3, program="dense") as stack:
        procs = stack.spawn_workers(job_id=1, n=3, plan=[...])
        results = stack.wait_workers(procs, timeout=60)
"""

from __future__ import annotations

import abc
import concurrent.futures
import contextlib
import ctypes
import fcntl
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .. import contracts, resources
from ..controller.credentials import JOB_SECRET_ENV, new_secret
from ..free_port import free_port

# The aggregation port is compiled into the P4 program (-DAGG_UDP_PORT), and the native
# switch engine caches its shared object by the content hash of the C generated from that
# program (docs/native.md, "Cache and fallbacks"). A stack that compiled a random port in would
# therefore generate and compile C at every start; stacks take the first free port of this
# fixed pool instead (the programs' default first), so a second start hits the cache. The
# contracts' spec stays the only place the port is defined; only when the whole pool is busy (many
# stacks at once) does a stack fall back to a random port, and compile.
AGG_PORT_POOL = range(contracts.AGG_PORT, contracts.AGG_PORT + 16)
AGG_PORT_LOCKS = Path(tempfile.gettempdir())
"""Where the pool's lock files live (``p4reduce-agg-port-PORT.lock``): one directory for
every process of the machine, so that stacks of different processes (parallel test runs,
several users) never pick the same port."""


@dataclass
class AggPortLease:
    """An aggregation port held for a stack's (or a test session's) lifetime.

    A pool port is held by an exclusive ``flock`` on its lock file: unlike a bind test,
    that holds between choosing the port and the switch binding it, and across the
    restarts of a switch on the same port; the kernel drops it when the holder exits,
    however it exits. A port outside the pool (the pool was full) holds nothing."""

    port: int
    fd: int | None = field(default=None, repr=False)

    @property
    def pooled(self) -> bool:
        return self.fd is not None

    def release(self) -> None:
        """Let another stack take the port (idempotent)."""
        if self.fd is not None:
            os.close(self.fd)  # closing the last descriptor drops the flock
            self.fd = None

    def __enter__(self) -> AggPortLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _lock_port(port: int) -> int | None:
    """A descriptor holding the port's pool lock, or None when another holds it (or the
    lock file cannot be opened, e.g. made by another user with a restrictive umask)."""
    try:
        fd = os.open(
            AGG_PORT_LOCKS / f"p4reduce-agg-port-{port}.lock", os.O_RDONLY | os.O_CREAT, 0o666
        )
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def lease_agg_port(tried: set[int] | frozenset[int] = frozenset()) -> AggPortLease:
    """The first port of AGG_PORT_POOL not in ``tried`` whose lock this process can take
    and that 127.0.0.1 can bind now (held until ``release``), else a random free UDP port
    (held by nobody)."""
    for port in AGG_PORT_POOL:
        if port in tried:
            continue
        fd = _lock_port(port)
        if fd is None:
            continue
        if _bindable(port):  # a process outside p4reduce's locks may have it
            return AggPortLease(port, fd)
        os.close(fd)
    return AggPortLease(free_port("udp"))


SWITCH_MAC = "02:00:00:00:00:fe"
SWITCH_IP = "127.0.0.1"
PROGRAMS = ("dense", "sparse")
BIN = Path(sys.executable).parent


def _engine_arg(args: Sequence[str]) -> str | None:
    """The value of ``--engine`` in p4reduce-switch arguments (None when absent)."""
    for i, a in enumerate(args):
        if a == "--engine" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--engine="):
            return a.split("=", 1)[1]
    return None


class StackError(Exception):
    """A part of the stack failed: one line, naming the part."""


def find_p4src() -> Path:
    """The P4 programs' folder: ``$P4REDUCE_P4SRC``, the installed package data, or the
    checkout's ``p4src/`` (p4reduce.resources)."""
    try:
        return resources.p4src()
    except resources.ResourceNotFound as err:
        raise StackError(str(err)) from None


def command(name: str) -> str:
    """The path of one of the p4reduce-* commands: beside this Python, else on PATH."""
    path = BIN / name
    if path.exists():
        return str(path)
    found = shutil.which(name)
    if found is None:
        raise StackError(f"command {name} not found (is p4reduce installed? run make install)")
    return found


@contextlib.contextmanager
def stop_signals_held() -> Iterator[None]:
    """Hold SIGINT and SIGTERM while the block (a teardown) runs, then deliver them: a
    second Ctrl-C or a SIGTERM must neither cut a teardown short and leave processes
    behind, nor be lost (a launcher's SIGTERM still ends the process afterwards). Only in
    the main thread, where Python runs signal handlers."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {
        sig: signal.signal(sig, lambda got, _frame: caught.append(got))
        for sig in (signal.SIGINT, signal.SIGTERM)
    }
    try:
        yield
    finally:
        for sig, handler in previous.items():
            # None: a handler installed from C, which Python cannot restore
            signal.signal(sig, signal.SIG_DFL if handler is None else handler)
        for sig in dict.fromkeys(caught):
            signal.raise_signal(sig)


def terminate(popens: Sequence[subprocess.Popen[bytes]], grace: float = 10.0) -> None:
    """SIGTERM to every process still running, in the order given, then wait for them all
    together: whatever has not exited ``grace`` seconds later gets SIGKILL."""
    live = [p for p in popens if p.poll() is None]
    for p in live:
        with contextlib.suppress(ProcessLookupError):
            p.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for p in live:
        try:
            p.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                p.kill()
            p.wait()


def failed(popen: subprocess.Popen[bytes]) -> bool:
    """Whether a child has exited with an error. A child that SIGINT killed (exit status
    -2 or 130) was stopped by the terminal's Ctrl-C, which reaches the whole process group:
    that is the user interrupting us, not the child failing, so it raises KeyboardInterrupt
    here rather than being reported as "worker N failed" (the parent may see the child's
    exit before its own signal handler has run)."""
    code = popen.poll()
    if code in (-signal.SIGINT, 128 + signal.SIGINT):
        raise KeyboardInterrupt
    return code is not None and code != 0


def last_line(path: Path) -> str:
    try:
        lines = [ln.strip() for ln in path.read_text(errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [ln for ln in lines if ln]
    return lines[-1] if lines else ""


_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent_preexec() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child get SIGTERM when its parent dies (Linux
    ``PR_SET_PDEATHSIG``), or None where there is no such thing. The function is resolved
    here, before the fork, so the child only makes one foreign call before ``exec``."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the signal was armed
            os._exit(1)

    return preexec


class _SpawnThread:
    """One daemon thread per process that starts the die-with-parent children.

    Linux sends the parent-death signal when the *thread* that forked the child ends, not
    the process: a stack started from a short-lived thread would be killed with it. A
    daemon thread is never joined, so it lives exactly as long as the process."""

    _lock = threading.Lock()
    _queue: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]] | None
    _queue = None

    @classmethod
    def popen(cls, args: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        with cls._lock:
            if cls._queue is None:
                cls._queue = queue.SimpleQueue()
                threading.Thread(
                    target=cls._serve, args=(cls._queue,), name="p4reduce-spawn", daemon=True
                ).start()
            q = cls._queue
        done: concurrent.futures.Future[subprocess.Popen[bytes]] = concurrent.futures.Future()
        q.put((lambda: subprocess.Popen(args, **kw), done))
        return done.result()

    @staticmethod
    def _serve(
        q: queue.SimpleQueue[tuple[Callable[[], Any], concurrent.futures.Future[Any]]],
    ) -> None:
        while True:
            fn, done = q.get()
            try:
                done.set_result(fn())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                done.set_exception(exc)


@dataclass
class Proc:
    """A process this stack started, with its output going to files in the work directory."""

    name: str
    popen: subprocess.Popen[bytes]
    stdout: Path
    stderr: Path

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    def error(self) -> str:
        """The last line the process wrote on stderr (its one-line error, by convention)."""
        return last_line(self.stderr) or f"exit status {self.popen.returncode}"


@dataclass
class WorkerResult:
    rank: int
    returncode: int
    lines: list[dict[str, Any]] = field(default_factory=list)  # its JSON stdout lines
    error: str = ""


_S = TypeVar("_S", bound="Stack")


class Stack(abc.ABC):
    """What every stack (loopback, BMv2, Mininet) is as a context manager: ``start()`` on
    entry, and ``stop()`` both on exit and when ``start()`` fails half way, so whatever it
    had started (processes, namespaces, links) is gone either way."""

    @abc.abstractmethod
    def start(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    def __enter__(self: _S) -> _S:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LocalStack(Stack):
    """The embedded switch, the controller's registration service and worker processes.

    ``peers``: the workers' own UDP addresses, one per port (``len(peers) == ports``); the
    stack then binds no sockets and ``spawn_workers`` is unavailable. ``switch_args``: extra
    ``p4reduce-switch`` options (bench/switch.py passes ``--engine``). ``die_with_parent``:
    the switch and the service get SIGTERM when this process dies, however it dies (Linux;
    elsewhere only ``stop()`` stops them). ``start_timeout``: seconds each process may take
    to say it is ready; the switch's native engine is compiled (on a cache miss) before
    that clock starts, under ``build_timeout`` of its own (``timings["native"]``).
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
        if not 1 <= ports <= 32:
            raise StackError(f"{ports} worker ports: 1 .. 32")
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
        self._worker_seq = 0
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
        if self.k != 64:
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
        cmd = [command("p4reduce-ctl"), "--grpc-addr", self.grpc_addr, "--json"]
        if election_id is not None:
            cmd += ["--election-id", str(election_id)]
        done = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            msg = last_line_of(done.stderr) or f"exit status {done.returncode}"
            raise StackError(f"p4reduce-ctl {args[0]} failed: {msg}")
        return json.loads(done.stdout) if done.stdout.strip() else {}

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

    # ------------------------------------------------------------------ workers
    def spawn_workers(
        self,
        job_id: int,
        n: int,
        plan: Sequence[dict[str, Any]],
        *,
        timeout: float = 60.0,
        extra: Sequence[str] = (),
    ) -> list[Proc]:
        """Start n worker processes for job ``job_id``, rank r on switch port r + 1 with
        this stack's socket r; each runs ``plan`` (see testbed/worker.py)."""
        if self.peers is not None:
            raise StackError("this stack's workers bring their own sockets (peers=...)")
        if not 1 <= n <= self.ports:
            raise StackError(f"{n} workers: this stack has {self.ports} worker ports")
        self._worker_seq += 1
        procs = []
        plan_text = json.dumps(list(plan))
        # the job's secret (docs/controller.md, "Credentials"): one per spawn, in the
        # environment, never in argv where every local user could read it
        env = {**os.environ, JOB_SECRET_ENV: new_secret()}
        for rank in range(n):
            s = self.sockets[rank]
            args = [
                sys.executable, "-m", "p4reduce.testbed.worker",
                "--url", self.url, "--job", str(job_id), "--rank", str(rank), "--n", str(n),
                "--fd", str(s.fileno()), "--switch-port", str(rank + 1),
                "--slots", str(self.slots), "--timeout", f"{timeout:g}",
                "--plan", plan_text, *extra,
            ]  # fmt: skip
            procs.append(
                self._spawn(
                    f"worker{self._worker_seq}-{rank}", args, pass_fds=[s.fileno()], env=env
                )
            )
        return procs

    def wait_workers(
        self,
        procs: Sequence[Proc],
        timeout: float,
        *,
        progress: Callable[[float, int], None] | None = None,
        progress_every: float = 5.0,
        overall: float | None = None,
    ) -> list[WorkerResult]:
        """Wait for every worker. When one fails, or the timeout passes, the others are
        stopped and StackError names the first failure. ``progress(elapsed, finished)`` is
        called every ``progress_every`` seconds. ``overall``: the time limit to name in the
        timeout's message (when the caller's limit covers more than this wait)."""
        t0 = time.monotonic()
        next_report = t0 + progress_every
        failure: str | None = None
        while True:
            running = [p for p in procs if p.alive()]
            for rank, p in enumerate(procs):
                if failure is None and failed(p.popen):
                    failure = f"worker {rank} failed: {p.error()}"
            if failure is None:
                for what in (self.switch, self.serve):
                    if what is not None and not what.alive():
                        failure = f"{what.name} exited unexpectedly: {what.error()}"
            if not running or failure is not None:
                break
            now = time.monotonic()
            if now - t0 > timeout:
                failure = f"timed out after {overall or timeout:g} s ({len(running)} of {len(procs)} workers still running)"
                break
            if progress is not None and now >= next_report:
                progress(now - t0, len(procs) - len(running))
                next_report = now + progress_every
            time.sleep(0.02)
        if failure is not None:
            for p in procs:
                if p.alive():
                    with contextlib.suppress(ProcessLookupError):
                        p.popen.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.popen.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    p.popen.kill()
                    p.popen.wait()
            raise StackError(failure)
        results = []
        for rank, p in enumerate(procs):
            lines = []
            for text in p.stdout.read_text(errors="replace").splitlines():
                text = text.strip()
                if text.startswith("{"):
                    lines.append(json.loads(text))
            results.append(WorkerResult(rank, p.popen.returncode, lines))
        return results


def last_line_of(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
