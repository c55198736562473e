"""The switch between two Mininet hosts' veths: h1 pings h2 across p4reduce-switch.

Needs root and Debian's Mininet (CI installs it); skipped with the reason otherwise. The
Mininet side runs under the system Python, where the Debian package installs it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
SYSTEM_PYTHON = "/usr/bin/python3"


def mininet_missing() -> str | None:
    if os.geteuid() != 0:
        return "needs root (Mininet creates namespaces and veths)"
    if shutil.which("mn") is None or not Path(SYSTEM_PYTHON).exists():
        return "Mininet is not installed (apt-get install mininet)"
    r = subprocess.run([SYSTEM_PYTHON, "-c", "import mininet.net"], capture_output=True)
    if r.returncode != 0:
        return "the system Python cannot import mininet"
    return None


@pytest.mark.skipif(mininet_missing() is not None, reason=str(mininet_missing()))
def test_ping_across_the_switch_between_two_mininet_hosts() -> None:
    exe = Path(sys.executable).parent / "p4reduce-switch"
    r = subprocess.run(
        [SYSTEM_PYTHON, str(HERE / "mininet_ping.py"), str(exe), str(HERE / "fwd_const.p4")],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert " 0% packet loss" in r.stdout
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    assert "s1-eth1" not in links and "s1-eth2" not in links  # torn down
