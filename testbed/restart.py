"""Killing and restarting the switch of a running loopback stack, as a crash and an
operator's restart do (the failure tests of docs/failures.md).

``restart_switch`` kills the stack's ``p4reduce-switch`` with SIGKILL and starts it again with
the same arguments, its P4Runtime server on the address it had (the registration service
reconnects there); the new process is the caller's to stop.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any


def restart_switch(stack: Any, log: Path, timeout: float = 60.0) -> subprocess.Popen[bytes]:
    """kill -9 ``stack.switch`` and start it again (same arguments, same gRPC address);
    returns the new process once it printed its ready line. ``log``: its stdout and stderr."""
    if stack.switch is None:
        raise RuntimeError("the stack has no switch process to restart")
    old = stack.switch.popen
    args = [str(a) for a in old.args]
    args[args.index("--grpc-server-addr") + 1] = stack.grpc_addr
    old.kill()
    old.wait(10)
    with open(log, "wb") as out:
        new = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while b"ready" not in log.read_bytes():
        if new.poll() is not None or time.monotonic() > deadline:
            new.kill()
            new.wait()
            tail = log.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the restarted switch did not become ready: {tail}")
        time.sleep(0.05)
    return new
