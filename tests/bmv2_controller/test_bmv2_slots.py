"""The controller's slot state on real BMv2 (simple_switch_grpc, whose P4Runtime server
answers UNIMPLEMENTED to RegisterEntry): the slots are cleared and read through control
messages on the CPU port (docs/controller.md, "Slot state"). The switch runs without any
data-plane interface: worker contributions enter as PacketOuts too (admission does not look
at the ingress port; control messages are taken from the CPU port only).

Skipped with one line where p4c or simple_switch_grpc is not installed (/opt/p4lang or PATH).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4reduce.controller import Controller, Host, StaticConfig, program

from p4reduce import p4lang
from p4reduce.free_port import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "controller"))
from ctl_helpers import ROOT, SWITCH_IP, SWITCH_MAC, agg_frame, key_of, members  # noqa: E402

REASON = p4lang.missing_reason("p4c", "simple_switch_grpc")
pytestmark = pytest.mark.skipif(bool(REASON), reason=REASON or "ok")
CTL = Path(sys.executable).parent / "p4reduce-ctl"
STATIC = StaticConfig(
    SWITCH_IP, SWITCH_MAC, tuple(Host(p, f"02:00:00:00:00:{p:02x}") for p in range(1, 3))
)


@pytest.fixture(scope="module")
def dense(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """p4src/dense.p4 compiled by the real p4c: OUT/dense.json + OUT/dense.p4info.txtpb."""
    out = tmp_path_factory.mktemp("bmv2-build")
    got = subprocess.run(
        [p4lang.find("p4c") or "p4c", "--target", "bmv2", "--arch", "v1model",
         "-I", str(ROOT / "p4src" / "include"), "-o", str(out),
         "--p4runtime-files", str(out / "dense.p4info.txtpb"), str(ROOT / "p4src" / "dense.p4")],
        capture_output=True, text=True, timeout=300, env=p4lang.env(),
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    assert "warning" not in got.stderr, got.stderr  # p4src compiles cleanly with real p4c
    return out / "dense"


@pytest.fixture
def bmv2(tmp_path: Path) -> Iterator[str]:
    """simple_switch_grpc with no interfaces, CPU port 510; its P4Runtime address."""
    grpc_addr = f"127.0.0.1:{free_port()}"
    log = (tmp_path / "simple_switch_grpc.log").open("w")
    proc = subprocess.Popen(
        [p4lang.find("simple_switch_grpc") or "simple_switch_grpc", "--no-p4",
         "--device-id", "1", "--thrift-port", str(free_port()), "--",
         "--grpc-server-addr", grpc_addr, "--cpu-port", str(program.CPU_PORT)],
        stdout=log, stderr=subprocess.STDOUT, env=p4lang.env(),
    )  # fmt: skip
    try:
        yield grpc_addr
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def _connect(addr: str) -> Controller:
    deadline = time.monotonic() + 30
    while True:
        try:
            return Controller(addr).connect(connect_timeout=2)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def _ctl(addr: str, *args: str) -> dict:
    got = subprocess.run(
        [str(CTL), "--grpc-addr", addr, "--json", *args],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert got.returncode == 0, got.stderr
    return {"out": json.loads(got.stdout), "err": got.stderr}


def _cells(slots: dict) -> list[tuple[int, int, list[int], int]]:
    """(slot, set, ranks, count) of every non-empty cell."""
    return [
        (s["slot"], c["set"], c["ranks"], c["count"])
        for s in slots["slots"]
        for c in s["sets"]
        if c["ranks"] or c["count"]
    ]


def test_clear_and_read_slots_on_bmv2(bmv2: str, dense: Path) -> None:
    ctl = _connect(bmv2)
    try:
        ctl.push(dense)
        ctl.install_static(STATIC)
        ctl.create_job(7, members(2), 4, slot_base=0, key=key_of(7))
        assert ctl.conn.register_access is False  # refused once, by the probe
        # rank 0 into slot 1 set 0 and slot 3 set 1: absorbed (n = 2), state left behind
        ctl.conn.packet_out(agg_frame(7, 0, 1, 0, exponent=140, values=list(range(64))))
        ctl.conn.packet_out(agg_frame(7, 0, 3, 1, flags=program.FLAG_NO_PAYLOAD))
        _, states = ctl.slots(7, values=True)
        cell = states[1].sets[0]
        assert (cell.ranks, cell.count, cell.has_data, cell.exponent) == ([0], 1, True, 140)
        assert cell.values == list(range(64))
        assert states[3].sets[1].ranks == [0] and not states[3].sets[1].has_data
    finally:
        ctl.close()  # the command line below becomes primary to send its control messages

    got = _ctl(bmv2, "slots", "--job", "7")
    assert _cells(got["out"]) == [(1, 0, [0], 1), (3, 1, [0], 1)]

    # the same job again on the same range: the earlier state is gone
    _ctl(bmv2, "job", "delete", "--job", "7")
    with _connect(bmv2) as ctl:
        ctl.create_job(7, members(2), 4, slot_base=0, key=key_of(7))
        ctl.conn.packet_out(agg_frame(7, 1, 2, 0))
        ctl.slots(7)  # answered after the contribution: the stream keeps their order
    got = _ctl(bmv2, "slots", "--job", "7")
    assert _cells(got["out"]) == [(2, 0, [1], 1)]

    got = _ctl(bmv2, "reset")
    assert got["out"]["slots_cleared"] and got["out"]["slots_path"] == "packets"
    assert not got["out"]["loss_cleared"]
    assert "loss thresholds were not zeroed: set loss: UNIMPLEMENTED" in got["err"]
    with _connect(bmv2) as ctl:
        ctl.create_job(7, members(2), 4, slot_base=0, key=key_of(7))
        _, states = ctl.slots(7)
        assert all(s.empty for s in states)
