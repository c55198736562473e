"""Running the parts as processes: finding their commands, starting them (optionally so
that they die with their parent), waiting for them and stopping them; ``Stack``, the
context-manager life cycle every stack (loopback, BMv2, Mininet) shares."""

from __future__ import annotations

import abc
import concurrent.futures
import contextlib
import ctypes
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from .. import resources

BIN = Path(sys.executable).parent


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
    """The file's last non-blank line ("" when it cannot be read)."""
    try:
        return last_line_of(path.read_text(errors="replace"))
    except OSError:
        return ""


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


def run_ctl(
    grpc_addr: str,
    *args: str,
    election_id: int | None = None,
    timeout: float = 60.0,
    prefix: Sequence[str] = (),
) -> dict[str, Any]:
    """Run a one-shot ``p4reduce-ctl --json`` command against ``grpc_addr`` (``prefix``: a
    command to run it under, such as entering a network namespace); its JSON answer, or
    StackError with the command's one-line error."""
    cmd = [*prefix, command("p4reduce-ctl"), "--grpc-addr", grpc_addr, "--json"]
    if election_id is not None:
        cmd += ["--election-id", str(election_id)]
    done = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        msg = last_line_of(done.stderr) or f"exit status {done.returncode}"
        raise StackError(f"p4reduce-ctl {args[0]} failed: {msg}")
    return json.loads(done.stdout) if done.stdout.strip() else {}


def last_line_of(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1] if lines else ""
