"""p4runtime-shell scenarios against the embedded switch's P4Runtime server.

Run by test_shell.py with the Python of p4runtime-shell's own virtual environment (its pins:
protobuf < 3.21, p4runtime 1.4.1), where p4reduce is not installed, in one subprocess (the
shell keeps one module-global client per process and starts non-daemon threads):
``python shell_scenarios.py AGENT_PYTHON P4INFO JSON RESULTS [NAME...]``. Each scenario gets a
fresh switch: switch_agent.py run by AGENT_PYTHON (p4reduce's), a separate process serving
P4Runtime on an ephemeral port, as a user's switch would. The scenario calls ``sh.setup``
(catching the ``SystemExit`` it raises on failure) and always ``sh.teardown()``. One JSON
line per scenario is appended to RESULTS: ``{"name", "ok", "error"}``.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import p4runtime_sh.shell as sh
from p4.v1 import p4runtime_pb2 as p4rt
from p4runtime_sh.p4runtime import P4RuntimeWriteException

CPU_PORT = 255
SNIFF = 0.5  # seconds: sniff() always waits this long, the messages come within milliseconds
P4INFO = JSON = AGENT_PYTHON = ""
AGENT = Path(__file__).with_name("switch_agent.py")


def mac(n: int) -> bytes:
    return n.to_bytes(6, "big")


def frame(dst: int, src: int = 9, ethertype: int = 0x1234) -> bytes:
    return mac(dst) + mac(src) + ethertype.to_bytes(2, "big") + b"payload"


class Agent:
    """The switch process: a line of JSON out, a line of JSON back."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [AGENT_PYTHON, str(AGENT), str(CPU_PORT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline().split()
        if ready[:1] != ["ready"]:
            self.proc.kill()
            raise RuntimeError(f"switch_agent.py did not start: {ready}")
        self.port = int(ready[1])

    def ask(self, **req: Any) -> Any:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(req) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def stop(self) -> None:
        try:
            self.ask_no_reply()
            self.proc.wait(timeout=10)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()

    def ask_no_reply(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": "stop"}) + "\n")
        self.proc.stdin.close()


class DeviceView:
    """What the scenarios read of the device, answered by the agent."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    def inject(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [
            (p, bytes.fromhex(f))
            for p, f in self.agent.ask(op="inject", port=port, frame=data.hex())
        ]

    @property
    def has_pipeline(self) -> bool:
        return bool(self.agent.ask(op="has_pipeline"))


class Switch:
    def __init__(self) -> None:
        self.agent = Agent()
        self.device = DeviceView(self.agent)
        self.addr = f"127.0.0.1:{self.agent.port}"

    @property
    def sent(self) -> list[tuple[int, bytes]]:
        return [(p, bytes.fromhex(f)) for p, f in self.agent.ask(op="sent")]

    def setup(self, push: bool = True, **kwargs: Any) -> None:
        config = sh.FwdPipeConfig(P4INFO, JSON) if push else None
        try:
            sh.setup(device_id=1, grpc_addr=self.addr, election_id=(0, 1), config=config, **kwargs)
        except SystemExit as exc:
            raise AssertionError(f"sh.setup exited ({exc.code})") from None


def expect_write_error(fn: Callable[[], Any], code: str) -> None:
    try:
        fn()
    except P4RuntimeWriteException as exc:
        assert code in str(exc), str(exc)
        return
    raise AssertionError(f"no {code} error")


# ---------------------------------------------------------------------- scenarios
def scenario_setup_and_push(sw: Switch) -> None:
    sw.setup()
    assert sh.APIVersion() == "1.4.1"
    names = {t.preamble.name for t in sh.context.p4info.tables}
    assert "MyIngress.l2" in names
    assert sw.device.has_pipeline


def scenario_no_pipeline_exits(sw: Switch) -> None:
    """GetForwardingPipelineConfig fails (FAILED_PRECONDITION), so setup() exits."""
    try:
        sh.setup(device_id=1, grpc_addr=sw.addr, election_id=(0, 1))
    except SystemExit:
        return
    raise AssertionError("setup() did not exit with no pipeline on the switch")


def _tables(sw: Switch) -> None:
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.forward")
    te.match["dst"] = "00:00:00:00:00:02"
    te.action["port"] = "3"
    te.insert()
    expect_write_error(te.insert, "ALREADY_EXISTS")
    (got,) = list(sh.TableEntry("MyIngress.l2").read())
    assert got.match["dst"].exact.value == b"\x02", got
    assert got.action["port"].value == b"\x03"
    assert sw.device.inject(1, frame(2)) == [(3, frame(2))]
    te.action["port"] = "4"
    te.modify()
    assert sw.device.inject(1, frame(2)) == [(4, frame(2))]
    # every match kind, with priorities
    acl = sh.TableEntry("MyIngress.acl")(action="MyIngress.drop")
    acl.match["type"] = "0x0800"
    acl.match["dst"] = "10.0.0.0/8"
    acl.match["src"] = "10.0.0.1&&&255.255.255.255"
    acl.match["proto"] = "6..17"
    acl.match["tos"] = "0"
    acl.priority = 10
    acl.insert()
    acl2 = sh.TableEntry("MyIngress.acl")(action="NoAction")
    acl2.match["type"] = "0x0800"
    acl2.priority = 20
    acl2.insert()
    sel = sh.TableEntry("MyIngress.acl")
    sel.match["type"] = "0x0800"
    assert sorted(e.priority for e in sel.read()) == [10, 20]
    expect_write_error(
        lambda: sh.TableEntry("MyIngress.acl")(action="NoAction").insert(), "INVALID_ARGUMENT"
    )
    # default action
    d = sh.TableEntry("MyIngress.l2")(is_default=True, action="MyIngress.forward")
    d.action["port"] = "6"
    d.modify()
    assert sw.device.inject(1, frame(9)) == [(6, frame(9))]
    (got,) = list(sh.TableEntry("MyIngress.l2")(is_default=True).read())
    assert got.is_default and got.action["port"].value == b"\x06"
    # delete everything in a table, the way the shell's documentation shows
    sh.TableEntry("MyIngress.acl").read(lambda e: e.delete())
    assert list(sh.TableEntry("MyIngress.acl").read()) == []
    te.delete()
    expect_write_error(te.delete, "NOT_FOUND")
    # const tables
    const = sh.TableEntry("MyIngress.consts")(action="MyIngress.drop")
    const.match["type"] = "0x0800"
    expect_write_error(const.insert, "PERMISSION_DENIED")


def scenario_tables(sw: Switch) -> None:
    sw.setup()
    _tables(sw)


def scenario_tables_padded_bytestrings(sw: Switch) -> None:
    """verbose=False is canonical_bytestrings=False (REFERENCE 5.7): padded values are sent."""
    sw.setup(verbose=False)
    _tables(sw)


def scenario_multicast(sw: Switch) -> None:
    sw.setup()
    sh.MulticastGroupEntry(1).add(1).add(2, 5).insert()
    expect_write_error(sh.MulticastGroupEntry(1).add(3).insert, "ALREADY_EXISTS")
    groups = list(sh.MulticastGroupEntry().read())
    assert [g.group_id for g in groups] == [1]
    assert [(r.egress_port, r.instance) for r in groups[0].replicas] == [(1, 0), (2, 5)]
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.set_mcast")
    te.match["dst"] = "0x2"
    te.action["grp"] = "1"
    te.insert()
    assert sorted(sw.device.inject(4, frame(2))) == [(1, frame(2)), (2, frame(2))]
    sh.MulticastGroupEntry(1).add(7).modify()
    assert sw.device.inject(4, frame(2)) == [(7, frame(2))]
    sh.MulticastGroupEntry(1).delete()
    assert list(sh.MulticastGroupEntry().read()) == []
    expect_write_error(sh.MulticastGroupEntry(1).delete, "NOT_FOUND")


def scenario_clone_sessions(sw: Switch) -> None:
    sw.setup()
    cs = sh.CloneSessionEntry(5).add(8)
    cs.packet_length_bytes = 6
    cs.insert()
    (got,) = list(sh.CloneSessionEntry().read())
    assert got.session_id == 5 and got.packet_length_bytes == 6
    assert [r.egress_port for r in got.replicas] == [8]
    assert list(sh.MulticastGroupEntry().read()) == []
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.forward_and_clone")
    te.match["dst"] = "0x2"
    te.action["port"] = "3"
    te.action["session"] = "5"
    te.insert()
    assert sorted(sw.device.inject(1, frame(2))) == [(3, frame(2)), (8, frame(2)[:6])]
    sh.CloneSessionEntry(5).add(8).add(9).modify()
    assert len(sw.device.inject(1, frame(2))) == 3
    sh.CloneSessionEntry(5).delete()
    assert list(sh.CloneSessionEntry().read()) == []
    assert sw.device.inject(1, frame(2)) == [(3, frame(2))]


def scenario_counters(sw: Switch) -> None:
    sw.setup()
    for _ in range(3):
        sw.device.inject(2, frame(1))
    c = sh.CounterEntry("MyIngress.port_counter")
    c.index = 2
    (got,) = list(c.read())
    assert (got.packet_count, got.byte_count) == (3, 3 * len(frame(1)))
    assert len(list(sh.CounterEntry("MyIngress.port_counter").read())) == 64
    c.packet_count = 100
    c.byte_count = 1000
    c.modify()
    (got,) = list(c.read())
    assert (got.packet_count, got.byte_count) == (100, 1000)
    # direct counters
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.forward")
    te.match["dst"] = "0x2"
    te.action["port"] = "3"
    te.insert()
    sw.device.inject(1, frame(2))
    dc = sh.DirectCounterEntry("MyIngress.l2_counter")
    dc.table_entry.match["dst"] = "0x2"
    (got,) = list(dc.read())
    assert got.packet_count == 1
    dc.packet_count = 50
    dc.modify()
    (got,) = list(sh.DirectCounterEntry("MyIngress.l2_counter").read())
    assert got.packet_count == 50


def scenario_packet_io(sw: Switch) -> None:
    sw.setup()
    pin = sh.PacketIn()
    out = sh.PacketOut(payload=frame(1), egress_port=str(CPU_PORT))
    out.send()
    msgs = list(pin.sniff(timeout=SNIFF))
    assert len(msgs) == 1, msgs
    msg = msgs[0].packet
    assert msg.payload == frame(1)
    assert {m.metadata_id: m.value for m in msg.metadata} == {1: bytes([CPU_PORT]), 2: b"\x00"}
    sh.PacketOut(payload=frame(2), egress_port="4").send()
    # data-plane packets to the CPU port reach the controller too
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.to_cpu")
    te.match["dst"] = "0x3"
    te.insert()
    sw.device.inject(6, frame(3))
    msgs = list(pin.sniff(timeout=SNIFF))
    assert [m.packet.payload for m in msgs] == [frame(3)]
    assert sw.sent == [(4, frame(2))]


def scenario_profiles_meters_digests(sw: Switch) -> None:
    sw.setup()
    m = sh.ActionProfileMember("MyIngress.ecmp_sel")(member_id=1, action="MyIngress.forward")
    m.action["port"] = "5"
    m.insert()
    g = sh.ActionProfileGroup("MyIngress.ecmp_sel")(group_id=1)
    g.add(1)
    g.insert()
    (got,) = list(sh.ActionProfileGroup("MyIngress.ecmp_sel").read())
    assert [x.member_id for x in got.members] == [1]
    te = sh.TableEntry("MyIngress.ecmp")
    te.match["dst"] = "10.0.0.1"
    te.group_id = 1
    te.insert()
    (got,) = list(sh.TableEntry("MyIngress.ecmp").read())
    assert got.group_id == 1
    me = sh.MeterEntry("MyIngress.port_meter")
    me.index = 3
    me.cir, me.cburst, me.pir, me.pburst = 10, 1, 20, 2
    me.modify()
    (got,) = list(me.read())
    assert (got.cir, got.pburst) == (10, 2)
    d = sh.DigestEntry("learn_t")
    d.max_list_size = 1
    d.insert()
    digests = sh.DigestList()
    sw.device.inject(3, frame(1, src=0xAB))
    msgs = list(digests.sniff(timeout=SNIFF))
    assert len(msgs) == 1
    data = msgs[0].digest.data[0]
    assert [x.bitstring for x in data.struct.members] == [b"\xab", b"\x03"]


def scenario_registers_raw_client(sw: Switch) -> None:
    """The shell has no register class: RegisterEntry goes through its raw client."""
    sw.setup()
    info = next(r for r in sh.context.p4info.registers if r.preamble.name == "MyIngress.reg32")
    u = p4rt.Update(type=p4rt.Update.MODIFY)
    u.entity.register_entry.register_id = info.preamble.id
    u.entity.register_entry.index.index = 4
    u.entity.register_entry.data.bitstring = b"\x12\x34"
    sh.client.write_update(u)
    e = p4rt.Entity()
    e.register_entry.register_id = info.preamble.id
    e.register_entry.index.index = 4
    (resp,) = list(sh.client.read_one(e))
    assert resp.entities[0].register_entry.data.bitstring == b"\x12\x34"
    e.register_entry.index.index = 99
    try:
        list(sh.client.read_one(e))  # lazy: the error comes while iterating, as a grpc error
    except grpc.RpcError as exc:
        assert exc.code() == grpc.StatusCode.OUT_OF_RANGE, exc
    else:
        raise AssertionError("no OUT_OF_RANGE")


def teardown() -> None:
    """sh.teardown(), unless setup() already tore the client down before exiting."""
    if sh.client is not None and hasattr(sh.client, "channel"):
        sh.teardown()
    sh.client = None


SCENARIOS = {
    name[len("scenario_") :]: fn for name, fn in globals().items() if name.startswith("scenario_")
}


def run(name: str) -> dict[str, Any]:
    sw = Switch()
    result: dict[str, Any] = {"name": name, "ok": False, "error": ""}
    try:
        SCENARIOS[name](sw)
        result["ok"] = True
    except BaseException as exc:  # noqa: BLE001 - reported to the test
        result["error"] = "".join(traceback.format_exception(exc))
    finally:
        teardown()
        sw.agent.stop()
    return result


def main(argv: list[str]) -> int:
    global P4INFO, JSON, AGENT_PYTHON
    AGENT_PYTHON, P4INFO, JSON, results = argv[1], argv[2], argv[3], Path(argv[4])
    logging.disable(logging.CRITICAL)  # the shell logs failures it is expected to hit
    names = argv[5:] or list(SCENARIOS)
    with results.open("a") as out:
        for name in names:
            out.write(json.dumps(run(name)) + "\n")
            out.flush()
    leftover = [t.name for t in threading.enumerate() if t is not threading.main_thread()]
    with results.open("a") as out:
        out.write(json.dumps({"name": "_threads", "ok": not leftover, "error": str(leftover)}))
        out.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
