"""A ``p4reduce-switch`` process for the tests of this folder: started, read up to its ready
line (its P4Runtime address and, when it has one, its UDP adapter's), and stopped."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path

EXE = Path(sys.executable).parent / "p4reduce-switch"


class Switch:
    def __init__(self, args: list[str]) -> None:
        self.proc = subprocess.Popen(
            [str(EXE), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        m = re.search(r"P4Runtime ([\d.]+):(\d+)(?:, UDP adapter ([\d.]+):(\d+))?", line)
        if m is None:
            self.proc.kill()
            raise AssertionError(f"switch did not start: {line!r} {self.proc.stderr.read()!r}")
        self.grpc = f"{m[1]}:{m[2]}"
        self.udp = (m[3], int(m[4])) if m[3] else None

    def stop(self, sig: int = signal.SIGTERM) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=20)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
