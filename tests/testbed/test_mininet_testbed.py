"""The Mininet testbed (``p4reduce testbed``, testbed/mininet/): small runs that check the
results and that nothing is left behind (interfaces, namespaces, processes), also after a
failed worker and after Ctrl-C.

The runs need root and Debian's Mininet (CI installs it); they are skipped with the reason
otherwise. The command-line checks and the loss filter's arithmetic run everywhere.
"""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from p4reduce.testbed import cli
from p4reduce.testbed.local import StackError
from p4reduce.testbed.mininet import stack as stack_mod
from p4reduce.testbed.mininet import topology
from p4reduce.testbed.mininet.stack import LinkShape, MininetStack, mininet_missing
from p4reduce.testbed.mininet.switches import kind, supported_ks

P4REDUCE = str(Path(sys.executable).parent / "p4reduce")
MISSING = mininet_missing()
needs_mininet = pytest.mark.skipif(MISSING is not None, reason=str(MISSING))


# ---------------------------------------------------------------------- leftovers
def _cmdlines() -> dict[int, str]:
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                raw = Path(f"/proc/{entry}/cmdline").read_bytes()
            except OSError:
                continue
            out[int(entry)] = raw.replace(b"\0", b" ").decode(errors="replace")
    return out


MARKERS = ("mininet:p4r", "testbed/mininet/topology.py", "--url http://10.254.0.",
           "p4reduce.testbed.mininet.gloo_worker", "@p4r-eth")  # fmt: skip


def leftovers() -> list[str]:
    """What a testbed may leave: our root-namespace links, the state file, our processes,
    namespaces holding an address of the management subnet."""
    found = [f"link {name}" for name in topology.our_links()]
    if Path(topology.STATE).exists():
        found.append(f"state file {topology.STATE}")
    me = os.getpid()
    for pid, cmd in _cmdlines().items():
        if pid != me and any(m in cmd for m in MARKERS):
            found.append(f"process {pid}: {cmd[:100]}")
    root = topology.netns_inode(os.getpid())
    seen: set[int] = set()
    for pid in _cmdlines():
        ino = topology.netns_inode(pid)
        if ino is None or ino == root or ino in seen:
            continue
        seen.add(ino)
        r = subprocess.run(["nsenter", f"--net=/proc/{pid}/ns/net", "ip", "-o", "-4", "addr"],
                           capture_output=True, text=True)  # fmt: skip
        if topology.MGMT_NET in r.stdout:
            found.append(f"namespace of pid {pid} with a {topology.MGMT_NET}x address")
    return found


def run_testbed(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([P4REDUCE, "testbed", *args], capture_output=True, text=True,
                          timeout=timeout)  # fmt: skip


# ---------------------------------------------------------------------- everywhere
def test_not_root_is_one_line(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setattr(stack_mod.os, "geteuid", lambda: 1000)
    assert cli.main(["testbed"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs root" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, word",
    [(["--loss", "0.9"], "--loss"), (["--workers", "0"], "--workers"),
     (["--experiment", "nope"], "--experiment"), (["--bw", "x"], "--bw"),
     (["--k", "512"], "--k"), (["--switch", "bmv2,nope"], "--switch"),
     (["--switch", "bmv2,bmv2"], "--switch")],
)  # fmt: skip
def test_bad_command_lines_are_one_line(argv: list[str], word: str, capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    assert cli.main(["testbed", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and word in err and err.startswith("p4reduce testbed: error:")


def test_jumbo_mtu_only_where_k_needs_it() -> None:
    """K = 1024's 4,148-byte IP packets do not fit a 1500-byte MTU: its links get 9000."""
    assert [stack_mod.data_link_mtu(k) for k in (64, 256, 1024)] == [1500, 1500, 9000]
    spec = topology.parse_spec(json.dumps({"hosts": 2, "mtu": 9000}))
    assert spec["mtu"] == 9000
    assert topology.parse_spec('{"hosts": 2}')["mtu"] == 1500
    with pytest.raises(topology.TopologyError, match="MTU 20000"):
        topology.parse_spec(json.dumps({"hosts": 2, "mtu": 20000}))


def run_cbpf(prog: str, rand: int) -> int:
    """The loss filter's classic BPF, interpreted: its return value for one ``ld rand``."""
    a = 0
    insns = [tuple(int(x) for x in i.split()) for i in prog.split(",")[1:]]
    pc = 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == 0x20:
            assert k == 0xFFFFF000 + 56  # SKF_AD_RANDOM
            a = rand
        elif code == 0x54:
            a &= k
        elif code == 0x35:
            pc += jt if a >= k else jf
        elif code == 0x06:
            return k
        pc += 1


@pytest.mark.parametrize("p", [0.0, 0.001, 0.01, 0.05, 0.5])
def test_loss_filter_drops_the_asked_fraction(p: float) -> None:
    prog = topology.loss_filter(p)
    bits = topology.LOSS_BITS
    # every low-20-bit value once: the drop fraction is exact up to the rounding of p * 2^20
    drops = sum(run_cbpf(prog, v) == 2 for v in range(0, 1 << bits, 1 << 6)) / (1 << (bits - 6))
    assert abs(drops - p) <= 2.0 ** -(bits - 6)
    assert run_cbpf(prog, 0) == 0  # the low values pass, the high ones are dropped


# ---------------------------------------------------------------------- with Mininet
@needs_mininet
def test_a_point_is_right_and_leaves_nothing(tmp_path: Path) -> None:
    r = run_testbed("-n", "2", "-m", "3000", "--dtype", "int32", "--repeat", "1", "--json",
                    "--out", str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stderr
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["backend"], x["mode"]) for x in rows] == [("p4reduce", "dense"), ("gloo", "ring")]
    for x in rows:
        assert x["ok"] and x["max_abs_error"] == 0 and x["workers"] == 2 and x["seconds"] > 0
    assert rows[0]["packets"] == 2 * 47  # ceil(3000 / 64) blocks per worker, int32: no priming
    with open(tmp_path / "single.csv") as f:
        assert len(list(csv.DictReader(f))) == 2
    assert (tmp_path / "single.png").stat().st_size > 0
    assert leftovers() == []


@needs_mininet
@pytest.mark.skipif(1024 not in supported_ks(), reason="p4src/ does not build K = 1024 here")
def test_k1024_over_jumbo_links(tmp_path: Path) -> None:
    r = run_testbed("-n", "2", "-m", "5000", "--dtype", "int32", "--repeat", "1", "--k", "1024",
                    "--no-gloo", "--json", "--out", str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stderr
    (row,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert row["ok"] and row["max_abs_error"] == 0
    assert row["packets"] == 2 * 5  # ceil(5000 / 1024) blocks per worker
    assert leftovers() == []


@needs_mininet
def test_sparse_under_link_loss_is_exact(tmp_path: Path) -> None:
    r = run_testbed("-n", "3", "--mode", "sparse", "--density", "0.3", "--loss", "0.03",
                    "--dtype", "int32", "-m", "6000", "--no-gloo", "--repeat", "2",
                    "--retx-ms", "40", "--json", "--out", str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stderr
    (row,) = [json.loads(line) for line in r.stdout.splitlines()]
    assert row["ok"] and row["max_abs_error"] == 0 and row["mode"] == "sparse"
    assert row["retransmissions"] > 0  # the links did lose frames
    assert leftovers() == []


@needs_mininet
def test_a_failed_worker_stops_the_run_and_leaves_nothing(tmp_path: Path) -> None:
    stray = None
    with pytest.raises(StackError, match="bad-1 failed"):
        with MininetStack(2, LinkShape(bw=10.0), switch=kind("embedded"),
                          workdir=tmp_path) as st:  # fmt: skip
            h0, h1 = st.hosts
            # a process the stack does not know about, in a host: the driver must kill it
            stray = subprocess.Popen(["nsenter", f"--net=/proc/{h0.pid}/ns/net", "sleep", "600"],
                                     start_new_session=True)  # fmt: skip
            plan = json.dumps([{"elements": 1000, "dtype": "int32"}])
            common = ["--job", "1", "--n", "2", "--slots", "64", "--timeout", "30", "--plan", plan]
            secret = {"P4REDUCE_JOB_SECRET": "the-job-secret-of-this-test"}
            good = st.spawn_in(h0, "good-0", [
                sys.executable, "-m", "p4reduce.testbed.worker", "--url", st.url, "--rank", "0",
                "--bind", h0.ip, "--mac", h0.mac, "--switch-port", "1", *common],
                env=secret)  # fmt: skip
            bad = st.spawn_in(h1, "bad-1", [  # nothing listens on port 1: the join fails
                sys.executable, "-m", "p4reduce.testbed.worker", "--url",
                f"http://{st.net['mgmt_ip']}:1", "--rank", "1", "--bind", h1.ip, "--mac",
                h1.mac, "--switch-port", "2", *common], env=secret)  # fmt: skip
            pids = [p.pid for p in st.procs]
            st.wait([good, bad], timeout=60)
    assert stray is not None and stray.wait(timeout=10) is not None
    alive = [p for p in pids if Path(f"/proc/{p}").exists()]
    assert alive == []
    assert leftovers() == []


@needs_mininet
def test_ctrl_c_stops_everything(tmp_path: Path) -> None:
    p = subprocess.Popen([P4REDUCE, "testbed", "-n", "2", "-m", "400000", "--no-gloo",
                          "--out", str(tmp_path)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not any("p4reduce.testbed.mininet.jobs_worker" in c for c in _cmdlines().values()):
        assert p.poll() is None and time.monotonic() < deadline, p.communicate()[1]
        time.sleep(0.1)
    time.sleep(1.0)  # the workers are joining or reducing
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "p4reduce: error: interrupted"
    assert leftovers() == []


@needs_mininet
def test_bmv2_missing_is_one_line(tmp_path: Path) -> None:
    """Where p4reduce.p4lang finds no BMv2 (here: an empty prefix and a PATH without it)."""
    env = dict(os.environ, P4LANG_ROOT=str(tmp_path / "none"),
               PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/sbin", "/usr/bin",
                                     "/sbin", "/bin"]))  # fmt: skip
    r = subprocess.run([P4REDUCE, "testbed", "--switch", "bmv2", "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=120, env=env)  # fmt: skip
    assert r.returncode == 1
    assert r.stderr.count("\n") == 1 and "simple_switch_grpc" in r.stderr
    assert leftovers() == []


@needs_mininet
def test_a_killed_orchestrator_leaves_nothing(tmp_path: Path) -> None:
    """SIGKILL: no teardown code runs in it; its children go by their parent-death signal,
    and the driver tears down when its stdin closes (which comes with its own parent-death
    SIGTERM: that signal must not cut the teardown short)."""
    p = subprocess.Popen([P4REDUCE, "testbed", "-n", "2", "-m", "400000", "--no-gloo",
                          "--out", str(tmp_path)], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 60
    while not any("p4reduce.testbed.mininet.jobs_worker" in c for c in _cmdlines().values()):
        assert p.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    p.kill()
    p.wait()
    # the driver's own teardown (net.stop) takes seconds, more on a loaded machine
    deadline = time.monotonic() + 120
    while leftovers() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert leftovers() == []


@needs_mininet
def test_the_next_run_cleans_up_after_a_killed_driver() -> None:
    """A driver killed outright cannot tear down; what it leaves (interfaces, a process in
    a host's namespace) is found by its management address and removed under the lock."""
    spec = json.dumps({"hosts": 2, "bw": 10})
    d = subprocess.Popen([stack_mod.SYSTEM_PYTHON, topology.__file__, spec],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert d.stdout is not None
    h1 = json.loads(d.stdout.readline())["hosts"][0]["pid"]
    stray = subprocess.Popen(["nsenter", f"--net=/proc/{h1}/ns/net", "sleep", "600"],
                             start_new_session=True)  # fmt: skip
    d.kill()
    d.wait()
    d.stdout.close()
    if d.stdin is not None:
        d.stdin.close()
    assert leftovers() != []
    assert topology.clean_if_free()
    assert stray.wait(timeout=10) == -signal.SIGTERM
    assert leftovers() == []
