"""Killing and restarting processes of a running loopback stack, as a crash and an
operator's restart do (the failure tests of docs/failures.md).

``restart_switch`` kills the stack's ``p4reduce-switch`` with SIGKILL and starts it again with
the same arguments, its P4Runtime server on the address it had (the registration service
reconnects there); ``restart_serve`` does the same with ``p4reduce-ctl serve`` on the URL it
had (workers find it there again), optionally with more options (``--state PATH``). The new
processes are the caller's to stop. ``kill_switch`` is the first half of ``restart_switch``,
for a stack that starts the switch again its own way (testbed/mininet/stack.py).
"""

from __future__ import annotations

import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any


def restart_switch(stack: Any, log: Path, timeout: float = 60.0) -> subprocess.Popen[bytes]:
    """kill -9 ``stack.switch`` and start it again (same arguments, same gRPC address);
    returns the new process once it printed its ready line. ``log``: its stdout and stderr."""
    return spawn_ready(kill_switch(stack), log, timeout)


def kill_switch(stack: Any) -> list[str]:
    """kill -9 ``stack.switch`` (a ``Proc``); its command line to start it again: the same
    arguments, ``--grpc-server-addr`` the address it had (``stack.grpc_addr``: an embedded
    switch started on port 0 picked it). The Mininet stack's ``restart_switch`` uses it too."""
    if stack.switch is None:
        raise RuntimeError("the stack has no switch process to restart")
    args = _kill(stack.switch.popen)
    args[args.index("--grpc-server-addr") + 1] = stack.grpc_addr
    return args


def restart_serve(
    stack: Any,
    log: Path,
    serve: subprocess.Popen[bytes] | None = None,
    extra: tuple[str, ...] = (),
    timeout: float = 60.0,
) -> subprocess.Popen[bytes]:
    """kill -9 the registration service (``serve``, by default ``stack.serve``'s process) and
    start it again on ``stack.url``'s address, with ``extra`` options after ``serve``."""
    if serve is None:
        if stack.serve is None:
            raise RuntimeError("the stack has no registration service to restart")
        serve = stack.serve.popen
    args = _kill(serve)
    port = urllib.parse.urlsplit(stack.url).port
    args[args.index("--listen") + 1] = f"127.0.0.1:{port}"
    at = args.index("serve") + 1
    for opt in extra:
        if opt.startswith("--") and opt in args:
            raise RuntimeError(f"{opt} is already an option of the service")
    args[at:at] = list(extra)
    return spawn_ready(args, log, timeout)


def _kill(popen: subprocess.Popen[bytes]) -> list[str]:
    args = [str(a) for a in popen.args]  # type: ignore[union-attr]
    popen.kill()
    popen.wait(10)
    return args


def spawn_ready(args: list[str], log: Path, timeout: float = 60.0) -> subprocess.Popen[bytes]:
    """Start ``args`` with stdout and stderr in ``log``; return once a line says ready."""
    with open(log, "wb") as out:
        new = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while b"ready" not in log.read_bytes():
        if new.poll() is not None or time.monotonic() > deadline:
            new.kill()
            new.wait()
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"{Path(args[0]).name} did not become ready: {tail}")
        time.sleep(0.05)
    return new
