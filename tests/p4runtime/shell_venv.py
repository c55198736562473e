"""p4runtime-shell in a virtual environment of its own, as users run it.

p4runtime-shell 0.0.6 pins protobuf < 3.21, p4runtime 1.4.1 and IPython 7.31, which p4reduce
does not carry (its core uses current protobuf). The interop tests run the shell with this
environment's Python in a separate process against our switch, so they also prove the wire
compatibility of an old-protobuf client with our server.

The environment is made once from the package registry and kept under the checkout's build/
folder (a file lock keeps the two halves of ``make test`` from making it twice); where it
cannot be made (no registry), the tests skip saying why.
"""

from __future__ import annotations

import fcntl
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REQUIREMENT = "p4runtime-shell==0.0.6"
VENV = ROOT / "build" / "p4runtime-shell-venv"
STAMP = VENV / ".p4reduce-ready"


def _python() -> Path:
    return VENV / "bin" / "python"


def _usable() -> bool:
    return (
        STAMP.is_file()
        and STAMP.read_text() == REQUIREMENT
        and subprocess.run(
            [str(_python()), "-c", "import p4runtime_sh.shell"], capture_output=True, timeout=60
        ).returncode
        == 0
    )


def _make() -> str:
    """Make the environment; '' on success, else the reason it could not be made."""
    subprocess.run(["rm", "-rf", str(VENV)], check=True)
    steps = [
        [sys.executable, "-m", "venv", str(VENV)],
        [str(_python()), "-m", "pip", "install", "-q", "--disable-pip-version-check", REQUIREMENT],
    ]
    for cmd in steps:
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            return f"{' '.join(cmd[-2:])} took over 600 s"
        if done.returncode != 0:
            lines = [ln for ln in done.stderr.splitlines() if ln.strip()]
            return lines[-1] if lines else f"exit {done.returncode}"
    STAMP.write_text(REQUIREMENT)
    return ""


def shell_python() -> str:
    """The Python of p4runtime-shell's environment (made on first use); skips the calling test
    with one line when it cannot be made."""
    VENV.parent.mkdir(parents=True, exist_ok=True)
    with open(VENV.parent / "p4runtime-shell-venv.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not _usable():
            why = _make()
            if why:
                pytest.skip(f"cannot make a virtual environment with {REQUIREMENT}: {why}")
    return str(_python())
