"""``p4reduce-ctl``: every subcommand in process with --json and human output, one-line
errors with a non-zero exit, and ``serve`` as a real process."""

from __future__ import annotations

import json
import re
import selectors
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from ctl_helpers import SWITCH_IP, SWITCH_MAC, Switch, agg_frame, member
from p4reduce.controller import RegistrationClient, RegistrationError
from p4reduce.controller.cli import main

CTL = Path(sys.executable).parent / "p4reduce-ctl"
M = [f"{r}:10.0.0.{r + 1}:{5000 + r}:02:00:00:00:00:{r + 1:02x}:{r + 1}" for r in range(4)]


class Run:
    def __init__(self, switch: Switch, capsys: pytest.CaptureFixture[str]) -> None:
        self.switch, self.capsys = switch, capsys

    def __call__(self, *argv: str, rc: int = 0) -> str:
        self.capsys.readouterr()
        got = main(["--grpc-addr", self.switch.addr, *argv])
        out, err = self.capsys.readouterr()
        assert got == rc, err
        if rc == 0:
            assert err == "" or all(
                line.startswith("p4reduce-ctl: warning:") for line in err.splitlines()
            )
            return out
        assert (
            out == "" and len(err.splitlines()) == 1 and err.startswith("p4reduce-ctl: error: ")
        ), err
        return err.strip()

    def json(self, *argv: str) -> Any:
        return json.loads(self(*argv, "--json"))


@pytest.fixture
def run(switch: Switch, capsys: pytest.CaptureFixture[str]) -> Run:
    return Run(switch, capsys)


@pytest.fixture
def pushed(run: Run, programs: dict[str, Path]) -> Run:
    run(
        "push",
        str(programs["dense"]),
        "--switch-ip",
        SWITCH_IP,
        "--switch-mac",
        SWITCH_MAC,
        "--host",
        "1:02:00:00:00:00:01",
        "--host",
        "2:02:00:00:00:00:02",
    )
    return run


def test_push(run: Run, programs: dict[str, Path], switch: Switch) -> None:
    got = run.json(
        "push",
        str(programs["sparse"]),
        "--switch-ip",
        SWITCH_IP,
        "--switch-mac",
        SWITCH_MAC,
        "--route",
        "10.1.0.0/16:3:02:00:00:00:00:fe:02:00:00:00:00:03",
    )
    assert (got["kind"], got["k"], got["program"]) == ("sparse", 64, "sparse")
    assert got["static"]["routes"][0]["prefix"] == "10.1.0.0/16"
    out = run("push", str(programs["dense"]) + ".json")
    assert out.startswith(f"pushed dense (dense, K = 64) to device 1 at {switch.addr}")
    prefix = programs["dense"]
    got = run.json(
        "push", "--device-config", f"{prefix}.json", "--p4info", f"{prefix}.p4info.txtpb"
    )
    assert got["kind"] == "dense"


def test_job_create_list_delete(pushed: Run) -> None:
    run = pushed
    got = run.json(
        "job", "create", "--job", "7", "--slots", "16", *[x for m in M[:3] for x in ("--member", m)]
    )
    assert (got["job_id"], got["job_index"], got["slot_base"], got["n"], got["mgid"]) == (
        7,
        1,
        0,
        3,
        257,
    )
    assert got["members"][2] == {
        "rank": 2,
        "ip": "10.0.0.3",
        "udp_port": 5002,
        "mac": "02:00:00:00:00:03",
        "switch_port": 3,
    }
    out = run("job", "create", "--job", "8", "--slots", "4", "--slot-base", "100", "--member", M[0])
    assert re.fullmatch(r"created job 8 \(key 0x[0-9a-f]{8}\)", out.splitlines()[0])
    secret_line = out.splitlines()[-1]
    assert secret_line.startswith("job secret (shown once; give it to the job's workers): ")
    listing = run.json("job", "list")
    assert [j["job_id"] for j in listing["jobs"]] == [7, 8] and listing["free_slots"] == 8192 - 20
    table = run("job", "list").splitlines()
    assert table[0].split() == [
        "JOB",
        "INDEX",
        "N",
        "SLOTS",
        "COUNT",
        "MGID",
        "RANK",
        "IP",
        "UDP",
        "MAC",
        "PORT",
    ]
    assert table[1].split() == [
        "7",
        "1",
        "3",
        "0..15",
        "16",
        "257",
        "0",
        "10.0.0.1",
        "5000",
        "02:00:00:00:00:01",
        "1",
    ]
    assert table[2].split() == ["1", "10.0.0.2", "5001", "02:00:00:00:00:02", "2"]
    assert table[4].split()[:4] == ["8", "2", "1", "100..103"]
    assert run.json("job", "delete", "--job", "7")["deleted"]["job_id"] == 7
    assert run("job", "delete", "--job", "8") == "deleted job 8 (slots 100..103 cleared)\n"
    assert run("job", "list") == "no jobs\n"


def test_stats_slots(pushed: Run, switch: Switch) -> None:
    run = pushed
    made = run.json(
        "job", "create", "--job", "7", "--slots", "8", "--member", M[0], "--member", M[1]
    )
    assert len(made["job_secret"]) >= 16 and 0 <= made["job_key"] <= 0xFFFFFFFF
    switch.device.inject(1, agg_frame(7, 0, 2, exponent=129, key=made["job_key"]))
    # slot 5: rank 0's block held NaN and +Inf, rank 1's -Inf: the cell ORs the bits
    switch.device.inject(1, agg_frame(7, 0, 5, key=made["job_key"], nonfinite=0x3))
    switch.device.inject(2, agg_frame(7, 1, 5, key=made["job_key"], nonfinite=0x4))
    switch.device.inject(1, agg_frame(99, 0, 2))
    got = run.json("stats")
    by_index = {j["job_index"]: j for j in got["jobs"]}
    assert by_index[1]["job_id"] == 7 and by_index[1]["aggregated"] == 3
    assert by_index[0]["job_id"] is None and by_index[0]["drops"]["unknown_sender"] == 1
    assert [j["job_id"] for j in run.json("stats", "--job", "7")["jobs"]] == [7]
    lines = run("stats").splitlines()
    assert lines[0].split() == [
        "JOB",
        "INDEX",
        "AGGREGATED",
        "MULTICAST",
        "RETX_ANSWERED",
        "DUPLICATES",
        "SENT",
        "DROPS",
    ]
    assert lines[1].split() == ["-", "0", "0", "0", "0", "0", "0", "unknown_sender=1"]
    assert lines[2].split()[:3] == ["7", "1", "3"]
    slots = run.json("slots", "--job", "7")
    assert len(slots["slots"]) == 8 and slots["kind"] == "dense"
    cell = slots["slots"][2]["sets"][0]
    assert (cell["ranks"], cell["missing"], cell["count"], cell["exponent"], cell["complete"]) == (
        [0],
        [1],
        1,
        129,
        False,
    )
    assert (cell["nonfinite"], cell["nonfinite_names"]) == (0, [])
    cell = slots["slots"][5]["sets"][0]
    assert (cell["ranks"], cell["complete"], cell["nonfinite"]) == ([0, 1], True, 0x7)
    assert cell["nonfinite_names"] == ["nan", "+inf", "-inf"]
    lines = run("slots", "--job", "7").splitlines()
    assert lines[0] == "job 7: slots 0..7 of 0..7 (pool 0..7), n = 2, 2 cell(s) in use"
    assert "NONFINITE" in lines[1].split()
    assert lines[2].split() == ["2", "2", "0", "0", "1", "1", "yes", "129", "-", "no"]
    assert lines[3].split() == [
        "5",
        "5",
        "0",
        "0,1",
        "-",
        "2",
        "yes",
        "130",
        "nan,+inf,-inf",
        "yes",
    ]
    assert len(run("slots", "--job", "7", "--all", "--range", "1:2").splitlines()) == 2 + 4
    got = run.json("slots", "--job", "7", "--range", "2", "--values")
    assert got["slots"][0]["sets"][0]["values"] == [1] * 64
    assert "unknown job 9" in run("slots", "--job", "9", rc=1)
    assert "outside job 7's 0..7" in run("slots", "--job", "7", "--range", "5:9", rc=1)


def test_loss_and_reset(pushed: Run) -> None:
    run = pushed
    assert run("loss") == "no loss set\n"
    got = run.json("loss", "0.5", "--port", "2", "--direction", "in")
    assert got == {"p": 0.5, "threshold": 2**31, "direction": "in", "ports": [2]}
    assert (
        run("loss", "0.25", "--port", "1")
        == "loss 0.25 (both) on port(s) 1 (threshold 1073741824)\n"
    )
    assert run.json("loss") == {
        "ports": {"1": {"in": 0.25, "out": 0.25}, "2": {"in": 0.5, "out": 0.0}}
    }
    assert run("loss").splitlines()[1].split() == ["1", "0.25", "0.25"]
    run("job", "create", "--job", "7", "--slots", "8", "--member", M[0])
    got = run.json("reset")
    assert got["jobs_removed"] == [7] and got["slots_cleared"]
    assert run.json("loss") == {"ports": {}}
    assert run("reset") == "reset: jobs removed: none; slot state, loss and counters zeroed\n"


def test_errors_are_one_line(run: Run, programs: dict[str, Path]) -> None:
    assert "no pipeline on device 1" in run("job", "list", rc=1)
    assert "no pipeline" in run("stats", rc=1)
    run("push", str(programs["dense"]))
    assert run("job", "delete", "--job", "7", rc=1) == "p4reduce-ctl: error: unknown job 7"
    run("job", "create", "--job", "7", "--slots", "16", "--member", M[0])
    assert run("job", "create", "--job", "7", "--slots", "1", "--member", M[1], rc=1).endswith(
        "job 7 exists already"
    )
    assert run(
        "job", "create", "--job", "8", "--slots", "4", "--slot-base", "14", "--member", M[0], rc=1
    ).endswith("slots 14..17 overlap job 7 (slots 0..15)")
    assert run(
        "job", "create", "--job", "8", "--slots", "4", "--member", M[0], "--member", M[0], rc=1
    ).endswith("rank 0 given twice")
    assert run("job", "create", "--job", "8", "--slots", "4", "--member", M[1], rc=1).endswith(
        "1 member for n = 2: rank 0 missing"
    )
    assert run(
        "job", "create", "--job", "8", "--slots", "4", "--member", M[0], "--n", "33", rc=2
    ).endswith("worker count n 33 is outside 1..32")
    assert "bad IPv4 address of rank 0 '10.0.0.300'" in run(
        "job",
        "create",
        "--job",
        "8",
        "--slots",
        "4",
        "--member",
        "0:10.0.0.300:5000:02:00:00:00:00:01:1",
        rc=2,
    )
    assert "bad member" in run(
        "job", "create", "--job", "8", "--slots", "4", "--member", "0:10.0.0.1", rc=2
    )
    assert "job id 0 is outside" in run("job", "delete", "--job", "0", rc=2)
    assert "loss probability 1.5 is outside 0..1" in run("loss", "1.5", rc=2)
    assert "switch port 512" in run("loss", "0.1", "--port", "512", rc=2)
    assert "no compiled program" in run("push", "/nonexistent/prog", rc=1)
    assert "the following arguments are required" in run("job", "create", rc=2)
    assert "invalid choice" in run("frobnicate", rc=2)
    assert "election id 0 is outside" in run("--election-id", "0", "job", "list", rc=2)


def test_switch_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    # a listener that never speaks HTTP/2: nothing certain fails, so the connect bound expires
    with socket.socket() as mute:
        mute.bind(("127.0.0.1", 0))
        mute.listen(1)
        addr = f"127.0.0.1:{mute.getsockname()[1]}"
        assert main(["--grpc-addr", addr, "--timeout", "0.3", "stats"]) == 1
    out, err = capsys.readouterr()
    assert (
        out == ""
        and err
        == f"p4reduce-ctl: error: switch unreachable at {addr} (no P4Runtime server "
        "answered within 0.3 s)\n"
    )


SLOW = 1.5  # seconds a slowed switch takes per Read


@pytest.fixture
def slow_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """The switch answers every Read after SLOW seconds (a switch under heavy load)."""
    import time

    from p4reduce.switch.p4runtime import entities

    real = entities.read

    def slow(state: Any, entity: Any) -> Any:
        time.sleep(SLOW)
        return real(state, entity)

    monkeypatch.setattr(entities, "read", slow)


# the operation that expires: the read itself, or the pipeline request before it while the
# slowed switch still holds its lock for the previous command's read
EXPIRED = (
    r"p4reduce-ctl: error: (read|get pipeline)[^:]*: the switch at 127\.0\.0\.1:\d+ did not answer within "
    r"0\.5 s \(--timeout or \$P4REDUCE_P4RT_TIMEOUT sets the limit\)"
)


def test_the_p4runtime_timeout_is_configurable_and_its_expiry_one_line(
    pushed: Run, slow_reads: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read slower than the timeout fails with one line naming the operation and the
    limit; --timeout and $P4REDUCE_P4RT_TIMEOUT set it, and a longer one lets it through."""
    from p4reduce.controller import Controller
    from p4reduce.controller.p4rt import DEFAULT_TIMEOUT

    run = pushed
    assert re.fullmatch(EXPIRED, run("--timeout", "0.5", "stats", rc=1)), "flag"
    monkeypatch.setenv("P4REDUCE_P4RT_TIMEOUT", "0.5")
    assert re.fullmatch(EXPIRED, run("stats", rc=1)), "environment"
    assert run.json("--timeout", "20", "stats")["jobs"] == []  # the flag wins
    monkeypatch.setenv("P4REDUCE_P4RT_TIMEOUT", "soon")
    assert run("stats", rc=1) == (
        "p4reduce-ctl: error: $P4REDUCE_P4RT_TIMEOUT='soon': a positive number of seconds expected"
    )
    monkeypatch.delenv("P4REDUCE_P4RT_TIMEOUT")
    assert Controller(run.switch.addr).conn.timeout == DEFAULT_TIMEOUT == 30.0
    assert Controller(run.switch.addr, timeout=2.5).conn.timeout == 2.5


def test_election_conflict(pushed: Run, switch: Switch) -> None:
    from p4reduce.controller import Controller

    with Controller(switch.addr):  # another primary holds election id 1
        err = pushed("job", "create", "--job", "7", "--slots", "1", "--member", M[0], rc=1)
        assert "election id 1 is held by another controller" in err
        assert pushed("job", "list") == "no jobs\n"  # reads need no arbitration
        assert pushed(
            "--election-id", "0:2", "job", "create", "--job", "7", "--slots", "1", "--member", M[0]
        )


def _ready_line(proc: subprocess.Popen[str], timeout: float = 20.0) -> str:
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        proc.kill()
        raise AssertionError("serve printed nothing")
    return proc.stdout.readline()


@pytest.mark.parametrize("as_json", [False, True])
def test_serve_process(
    switch: Switch, programs: dict[str, Path], as_json: bool, tmp_path: Path
) -> None:
    token = "operator-token-from-a-file-0123"
    (tmp_path / "token").write_text(token + "\n")
    argv = [
        str(CTL),
        "--grpc-addr",
        switch.addr,
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--program",
        str(programs["dense"]),
        "--switch-ip",
        SWITCH_IP,
        "--switch-mac",
        SWITCH_MAC,
        "--slots",
        "8",
        "--retries",
        "7",
        "--operator-token-file",
        str(tmp_path / "token"),
    ] + (["--json"] if as_json else [])
    assert token not in " ".join(argv)  # the token never appears in argv
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = _ready_line(proc)
        if as_json:
            ready = json.loads(line)
            assert ready["ready"] and ready["grpc_addr"] == switch.addr
            url = ready["url"]
        else:
            m = re.fullmatch(
                r"p4reduce-ctl: ready \(registration (http://127\.0\.0\.1:\d+), P4Runtime (\S+), device 1\)\n",
                line,
            )
            assert m and m.group(2) == switch.addr, line
            url = m.group(1)
        client = RegistrationClient(url, timeout=10, secret="a-secret-for-the-serve-test")

        def join(r: int) -> Any:
            w = member(r)
            return client.join(7, r, 2, w.ip, w.udp_port, w.mac, w.switch_port)

        with ThreadPoolExecutor(2) as pool:
            got = list(pool.map(join, range(2)))
        assert {(a.slot_base, a.slot_count, a.timeouts.retries) for a in got} == {(0, 8, 7)}
        operator = RegistrationClient(url, timeout=10, operator_token=token)
        assert [j["job_id"] for j in operator.jobs()] == [7]
        with pytest.raises(RegistrationError) as refused:
            client.jobs()  # a job secret does not list other tenants' jobs
        assert refused.value.status == 403
        proc.send_signal(signal.SIGTERM if as_json else signal.SIGINT)
        out, err = proc.communicate(timeout=15)
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_errors(switch: Switch) -> None:
    proc = subprocess.run(
        [str(CTL), "--grpc-addr", switch.addr, "serve", "--listen", "127.0.0.1:0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 1 and proc.stdout == ""
    assert re.fullmatch(
        r"p4reduce-ctl: error: no pipeline on device 1 at \S+ \(run p4reduce-ctl push first\)\n",
        proc.stderr,
    )
