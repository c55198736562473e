"""bench/sidebyside.py and bench/bmv2_cli.py: the controller's entries for one job as
simple_switch_CLI commands (exact lines), those commands accepted by a real BMv2, each
switch's sums with those entries, and the side-by-side bench end to end. The last two make
veth pairs (root), each in a network namespace of its own. The figures themselves are
printed by the bench, never asserted here."""

from __future__ import annotations

import json
import select
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.controller import static_config
from p4reduce.controller.p4info import Schema
from p4reduce.controller.p4rt import DELETE
from p4reduce.controller.pipeline import read_p4info
from p4reduce.host import wire
from p4reduce.switch.ports.ipudp import Endpoints, build_frame, udp_payload
from p4reduce.switch.ports.raw import have_raw_socket_privilege

from p4reduce import p4lang
from p4reduce.proto import p4runtime_pb2

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))
import bmv2_cli  # noqa: E402 - bench/, not a package
import sidebyside  # noqa: E402

ADMIT = "SwitchIngress.admission"
REPLICA = "SwitchEgress.replica"


@pytest.fixture(scope="module")
def schema() -> Schema:
    _, info = sidebyside.compile_program("p4reduce-p4c", sidebyside.DENSE, [])
    return Schema(read_p4info(info))


def test_job_entries_as_cli_commands(schema: Schema) -> None:
    lines = bmv2_cli.commands(schema, sidebyside.aggregation_updates(schema, 2, 8))
    switch_ip, switch_mac = 0x0A0000FE, 0x0200000000FE
    assert lines == [
        "table_add SwitchIngress.local_address.switch_ipv4 SwitchIngress.local_address.is_switch "
        f"{switch_ip} => {switch_mac}",
        f"table_add SwitchIngress.arp.arp_replies SwitchIngress.arp.reply {switch_ip} => "
        f"{switch_mac}",
        # replicas (job index 1, rid = rank): the worker's MAC, IP and UDP port
        f"table_add {REPLICA}.replicas {REPLICA}.to_worker 1 0 => {0x020000000101} "
        f"{0x0A000001} 5000",
        f"table_add {REPLICA}.replicas {REPLICA}.to_worker 1 1 => {0x020000000102} "
        f"{0x0A000002} 5001",
        # group 256 + job index, one node per rank on its own port
        "mc_mgrp_create 257",
        "mc_node_create 0 1",
        "mc_node_associate 257 0",
        "mc_node_create 1 2",
        "mc_node_associate 257 1",
        # workers: (job id, IP, UDP port) -> admit(index, rank, n, bit, base, count, mgid, key)
        f"table_add {ADMIT}.workers {ADMIT}.admit 1 {0x0A000001} 5000 => 1 0 2 1 0 8 257 "
        f"{sidebyside.JOB_KEY}",
        f"table_add {ADMIT}.workers {ADMIT}.admit 1 {0x0A000002} 5001 => 1 1 2 2 0 8 257 "
        f"{sidebyside.JOB_KEY}",
    ]


def test_routes_hosts_and_refusals(schema: Schema) -> None:
    rec = bmv2_cli.Recorder()
    cfg = static_config.StaticConfig(
        hosts=(static_config.Host(3, "02:00:00:00:00:03"),),
        routes=(static_config.Route("10.1.0.0/16", 4, "02:00:00:00:00:fe", "02:00:00:00:00:04"),),
    )
    static_config.install(rec, schema, cfg)  # type: ignore[arg-type]
    lines = bmv2_cli.commands(schema, rec.updates)
    fwd = "SwitchIngress.forwarding"
    assert lines == [
        f"table_add {fwd}.l2_forward {fwd}.to_port {0x020000000003} => 3",
        f"table_add {fwd}.ipv4_routes {fwd}.route {0x0A010000}/16 => 4 {0x0200000000FE} "
        f"{0x020000000004}",
        "mc_mgrp_create 1",  # the flood group: every host port, rid 0
        "mc_node_create 0 3",
        "mc_node_associate 1 0",
    ]
    with pytest.raises(ValueError, match="only inserts"):
        bmv2_cli.commands(schema, [(DELETE, rec.updates[0][1])])
    with pytest.raises(ValueError, match="no CLI form"):
        bmv2_cli.commands(schema, [(DELETE, p4runtime_pb2.CounterEntry())])
    assert bmv2_cli.errors("RuntimeCmd: Error: Invalid table name\nEntry has been added") == [
        "RuntimeCmd: Error: Invalid table name"
    ]


def test_bmv2_accepts_the_commands() -> None:
    """simple_switch_perf, with no ports, takes the job's commands over thrift and then holds
    the entries and the group (start_bmv2 raises on any CLI error line)."""
    reason = p4lang.missing_reason("p4c", "simple_switch_perf", "simple_switch_CLI")
    if reason:
        pytest.skip(reason)
    prog, info = sidebyside.compile_program("p4c", sidebyside.DENSE, [])
    updates = sidebyside.aggregation_updates(Schema(read_p4info(info)), 3, 16)
    proc, ipc = sidebyside.start_bmv2(sidebyside.PERF, prog, info, [], updates, "test")
    try:
        args = list(proc.args)  # type: ignore[arg-type]
        port = args[args.index("--thrift-port") + 1]
        done = subprocess.run(
            [str(p4lang.find("simple_switch_CLI")), "--thrift-port", port],
            input=f"table_num_entries {ADMIT}.workers\nmc_dump\n",
            capture_output=True, text=True, timeout=60, env=p4lang.env(),
        )  # fmt: skip
        assert "RuntimeCmd: 3\n" in done.stdout, done.stdout
        assert "mgrp(257)" in done.stdout, done.stdout
    finally:
        proc.kill()
        proc.wait()
        ipc.unlink(missing_ok=True)


def isolated(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    """``args`` in a network namespace of their own with loopback up (unshare --net): the
    veths the bench makes never appear in the machine's namespace, and go with it."""
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a network namespace of the test's own")
    return subprocess.run(
        ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *args],
        capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def sums_check(kind: str) -> None:
    """With the bench's entries and ports, one slot's two contributions (element i of rank
    r: 1000 r + i) come back to both workers as one result each, FLAG_RESULT set, addressed
    to the worker, holding the sums. Run by the test below in a namespace of its own."""
    workers, k = 2, 64
    compiler = "p4reduce-p4c" if kind == sidebyside.NATIVE else "p4c"
    prog = sidebyside.compile_program(compiler, sidebyside.DENSE, [])
    updates = sidebyside.aggregation_updates(Schema(read_p4info(prog[1])), workers, 4)
    with sidebyside.veth_sets(1, workers) as sets:
        sw = sidebyside.start(kind, "mcast", prog, sets[0], updates, "test")
        try:
            for r in range(workers):
                m = sidebyside.member(r)
                head = wire.header_bytes(wire.MSG_DENSE, 0, r, sidebyside.JOB_ID, 0, 2, 0, 1, 0,
                                         0, sidebyside.JOB_KEY)  # fmt: skip
                body = struct.pack(f"!{k}i", *(1000 * r + i for i in range(k)))
                ends = Endpoints(bytes.fromhex("0200000000fe"), bytes.fromhex(m.mac.replace(":", "")),
                                 m.ip, sidebyside.SWITCH_IP, m.udp_port, sidebyside.AGG_PORT)  # fmt: skip
                sw.socks[r].send(build_frame(head + body, ends, 0))
            for r in range(workers):
                assert select.select([sw.socks[r]], [], [], 20)[0], f"{kind}: no result for {r}"
                frame = sw.socks[r].recv(65536)
                assert frame[:6].hex() == sidebyside.member(r).mac.replace(":", "")
                payload = udp_payload(frame)
                assert payload[0] & wire.FLAG_RESULT
                assert struct.unpack_from(f"!{k}i", payload, 24) == tuple(
                    1000 + 2 * i for i in range(k)
                )
        finally:
            sw.stop()


@pytest.mark.skipif(not have_raw_socket_privilege(), reason="needs root (veths, raw sockets)")
@pytest.mark.parametrize("kind", [sidebyside.NATIVE, sidebyside.PERF])
def test_each_switch_returns_the_sums(kind: str) -> None:
    """What the bench times is real aggregation (sums_check)."""
    if kind == sidebyside.PERF:
        reason = p4lang.missing_reason("p4c", "simple_switch_perf", "simple_switch_CLI")
        if reason:
            pytest.skip(reason)
    done = isolated([sys.executable, __file__, kind], timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.skipif(not have_raw_socket_privilege(), reason="needs root (veths, raw sockets)")
def test_side_by_side_bench_smoke() -> None:
    done = isolated(
        [sys.executable, str(ROOT / "bench" / "switch.py"), "--only", "bmv2", "--bmv2-ks", "64",
         "--bmv2-default-ks", "", "--bmv2-repeat", "1", "--bmv2-seconds", "0.05",
         "--agg-workers", "2", "--agg-slots", "16", "--json"],
        timeout=240,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)["bmv2_side_by_side"]
    if out["note"].startswith("BMv2 side by side skipped"):
        pytest.skip(out["note"])
    rows = {(r["workload"], r["switch"]): r for r in out["rows"]}
    for workload in ("aggregation", "forwarding"):
        for switch in (sidebyside.FLOOR, sidebyside.NATIVE):
            assert rows[(workload, switch)]["pps"] > 0, rows
        if not p4lang.missing("p4c", "simple_switch_perf", "simple_switch_CLI"):
            perf = rows[(workload, sidebyside.PERF)]
            assert perf["pps"] > 0 and perf["ratio_to_floor"] > 0, perf
    assert (("aggregation", sidebyside.DEFAULT)) not in rows  # --bmv2-default-ks ''


if __name__ == "__main__":  # sums_check KIND, in the namespace the test made
    sums_check(sys.argv[1])
