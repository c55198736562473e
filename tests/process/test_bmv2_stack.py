"""``p4reduce check --switch bmv2`` and ``p4reduce demo --switch bmv2`` on the real BMv2
(testbed/bmv2.py): small runs whose results are checked as on the embedded switch, and that
leave no namespace or process behind, also after Ctrl-C and after SIGKILL.

The runs need p4c, simple_switch_grpc (p4reduce.p4lang finds them in /opt/p4lang or on PATH)
and root; they are skipped with one line saying which is missing. The error lines run
everywhere.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from p4reduce.testbed import bmv2, cli

P4REDUCE = str(Path(sys.executable).parent / "p4reduce")
WHY = bmv2.missing()
needs_bmv2 = pytest.mark.skipif(bool(WHY), reason=WHY)


def run(*args: str, timeout: float = 180, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:  # fmt: skip
    return subprocess.run([P4REDUCE, *args], capture_output=True, text=True, timeout=timeout,
                          env=env)  # fmt: skip


def namespaces_of(pid: int) -> dict[str, int]:
    """The namespaces of ``pid``'s stacks that exist now, with their inode numbers."""
    out = {}
    for ns in bmv2.ours():
        if ns.startswith(f"{bmv2.NS_PREFIX}{pid}x"):
            with contextlib.suppress(OSError):
                out[ns] = os.stat(bmv2.NETNS_DIR / ns).st_ino
    return out


def processes_in(inodes: set[int]) -> list[str]:
    """Processes living in one of these network namespaces: their pid and name. (A process
    started with ``nsenter`` has the program's command line, not the namespace's name.)"""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                link = os.readlink(f"/proc/{entry}/ns/net")
                comm = Path(f"/proc/{entry}/comm").read_text().strip()
            except OSError:
                continue
            if int(link[link.index("[") + 1 : -1]) in inodes:
                found.append(f"{entry} {comm}")
    return found


class Watch:
    """Records the namespaces a ``p4reduce`` process creates while it runs, so that the
    test can check afterwards that they, and every process inside them, are gone."""

    def __init__(self, p: subprocess.Popen[str]) -> None:
        self.p = p
        self.seen: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.seen.update(namespaces_of(self.p.pid))

    def wait_for(self, comm: str, timeout: float = 120) -> None:
        """Until a process named ``comm`` runs in one of the namespaces."""
        deadline = time.monotonic() + timeout
        while not any(x.endswith(f" {comm}") for x in processes_in(set(self.seen.values()))):
            assert self.p.poll() is None, "the command ended first"
            assert time.monotonic() < deadline, f"no {comm} within {timeout:g} s"
            time.sleep(0.1)

    def left(self) -> list[str]:
        self._stop.set()
        self._thread.join()
        assert self.seen, "the command created no namespace"
        return list(namespaces_of(self.p.pid)) + processes_in(set(self.seen.values()))


# ---------------------------------------------------------------------- everywhere
@pytest.mark.parametrize("sub", ["check", "demo"])
def test_missing_tools_is_one_line(sub: str, tmp_path: Path) -> None:
    env = dict(os.environ, P4LANG_ROOT=str(tmp_path / "none"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]))  # fmt: skip
    r = run(sub, "--switch", "bmv2", "--json", env=env, timeout=120)
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith(f"p4reduce {sub}: error:") and "simple_switch_grpc" in r.stderr
    assert "Traceback" not in r.stderr
    assert json.loads(r.stdout)["ok"] is False


def test_not_root_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(bmv2.p4lang, "missing_reason", lambda *tools: "")
    monkeypatch.setattr(bmv2.os, "geteuid", lambda: 1000)
    assert cli.main(["check", "--switch", "bmv2", "--json"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs root" in err and "Traceback" not in err


def test_missing_reason_names_the_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("P4LANG_ROOT", str(tmp_path))
    monkeypatch.setenv("PATH", "/nonexistent")
    why = bmv2.missing()
    assert "simple_switch_grpc" in why and "p4c" in why and "\n" not in why


# ---------------------------------------------------------------------- on BMv2
@needs_bmv2
@pytest.mark.parametrize(
    "argv, exact",
    [(["-n", "2", "-m", "3000"], False),
     (["-n", "3", "-m", "2000", "--mode", "sparse", "--density", "0.3", "--dtype", "int32",
       "--loss", "0.05"], True)],
    ids=["dense-float32", "sparse-int32-loss"],
)  # fmt: skip
def test_check_on_bmv2(argv: list[str], exact: bool) -> None:
    p = subprocess.Popen([P4REDUCE, "check", "--switch", "bmv2", "--json", *argv],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    watch = Watch(p)
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    r = json.loads(out)
    assert r["ok"] and r["identical"] and r["switch"] == "bmv2" and r["mismatches"] == 0
    assert r["packets"] > 0
    if exact:
        assert r["max_abs_error"] == 0 and r["dtype"] == "int32"
    else:
        assert 0 < r["max_abs_error"] <= r["bound"]
    assert watch.left() == []


@needs_bmv2
def test_demo_on_bmv2() -> None:
    p = subprocess.Popen([P4REDUCE, "demo", "--switch", "bmv2", "-n", "2", "--steps", "3",
                          "--json", "--timeout", "120"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    watch = Watch(p)
    out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    r = json.loads(out.strip().splitlines()[-1])
    assert r["ok"] and r["loss_fell"] and r["switch_kind"] == "bmv2"
    assert r["max_abs_param_diff"] <= r["tolerance"]
    # 6,922 parameters: 109 blocks of 64 per step and rank, aggregated by BMv2's registers
    assert r["switch"]["aggregated"] >= 2 * 3 * 109
    assert r["aggregation_per_step"]["retransmissions"] == 0
    assert watch.left() == []


@needs_bmv2
def test_ctrl_c_leaves_nothing() -> None:
    p = subprocess.Popen([P4REDUCE, "check", "--switch", "bmv2", "-n", "2", "-m", "200000"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)  # fmt: skip
    watch = Watch(p)
    watch.wait_for("simple_switch_g")  # comm: the first 15 characters
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "p4reduce: error: interrupted"
    assert watch.left() == []


@needs_bmv2
def test_sigkill_leaves_namespaces_the_next_start_deletes() -> None:
    """SIGKILL runs no teardown: the children go by their parent-death signal, and the
    namespaces (nothing holds them any more) are deleted by the next stack's start."""
    p = subprocess.Popen([P4REDUCE, "check", "--switch", "bmv2", "-n", "2", "-m", "200000"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    watch = Watch(p)
    watch.wait_for("simple_switch_g")
    p.kill()
    p.wait(timeout=30)
    inodes = set(watch.seen.values())
    deadline = time.monotonic() + 30
    while processes_in(inodes):  # the switch, the service, the workers: parent-death signal
        assert time.monotonic() < deadline, processes_in(inodes)
        time.sleep(0.1)
    assert namespaces_of(p.pid)  # no teardown ran
    assert set(namespaces_of(p.pid)) <= set(bmv2.sweep_stale())
    assert watch.left() == []


def test_p4lang_finds_the_tools_off_path() -> None:
    """The tools are found in their prefix even when PATH lacks it (skip: not installed)."""
    if bmv2.p4lang.missing("simple_switch_grpc", "p4c"):
        pytest.skip(bmv2.p4lang.missing_reason("simple_switch_grpc", "p4c"))
    saved = os.environ["PATH"]
    try:
        os.environ["PATH"] = "/usr/bin:/bin"
        assert bmv2.p4lang.find("simple_switch_grpc") is not None
    finally:
        os.environ["PATH"] = saved
