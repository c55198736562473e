"""Helpers of the P4Runtime server tests: compiling the test program, P4Info ids, FieldMatch
builders, and a raw gRPC client (p4runtime_pb2_grpc.P4RuntimeStub) with its stream."""

from __future__ import annotations

import queue
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import text_format
from google.rpc import status_pb2
from p4reduce.switch.p4runtime import Device, P4RuntimeServer

from p4reduce.proto import p4info_pb2, p4runtime_pb2_grpc
from p4reduce.proto import p4runtime_pb2 as p4rt

HERE = Path(__file__).parent
PROGRAM = HERE / "programs" / "p4rt_test.p4"
P4C = Path(sys.executable).parent / "p4reduce-p4c"
CPU_PORT = 255


@dataclass
class Compiled:
    json_path: Path
    p4info_path: Path
    p4info: Any
    device_config: bytes


def compile_program(program: Path, out: Path) -> Compiled:
    out.mkdir(parents=True, exist_ok=True)
    p4info_path = out / f"{program.stem}.p4info.txtpb"
    subprocess.run(
        [str(P4C), "-o", str(out), "--p4runtime-files", str(p4info_path), str(program)],
        check=True,
        capture_output=True,
    )
    json_path = out / f"{program.stem}.json"
    info = text_format.Parse(p4info_path.read_text(), p4info_pb2.P4Info())
    return Compiled(json_path, p4info_path, info, json_path.read_bytes())


# ---------------------------------------------------------------------- P4Info ids
class Ids:
    def __init__(self, info: Any) -> None:
        self.info = info
        self.tables = {t.preamble.name: t for t in info.tables}
        self.actions = {a.preamble.name: a for a in info.actions}
        by_kind = [
            info.action_profiles,
            info.counters,
            info.direct_counters,
            info.meters,
            info.direct_meters,
            info.registers,
            info.value_sets,
            info.digests,
            info.controller_packet_metadata,
        ]
        self.objs = {o.preamble.name: o for kind in by_kind for o in kind}

    def table(self, name: str) -> int:
        return self.tables[name].preamble.id

    def action(self, name: str) -> int:
        return self.actions[name].preamble.id

    def id(self, name: str) -> int:
        return self.objs[name].preamble.id

    def field(self, table: str, name: str) -> int:
        for mf in self.tables[table].match_fields:
            if mf.name == name:
                return mf.id
        raise KeyError(name)


def exact(fid: int, value: bytes | int) -> Any:
    fm = p4rt.FieldMatch(field_id=fid)
    fm.exact.value = _b(value)
    return fm


def lpm(fid: int, value: bytes | int, plen: int) -> Any:
    fm = p4rt.FieldMatch(field_id=fid)
    fm.lpm.value, fm.lpm.prefix_len = _b(value), plen
    return fm


def ternary(fid: int, value: bytes | int, mask: bytes | int) -> Any:
    fm = p4rt.FieldMatch(field_id=fid)
    fm.ternary.value, fm.ternary.mask = _b(value), _b(mask)
    return fm


def range_(fid: int, low: bytes | int, high: bytes | int) -> Any:
    fm = p4rt.FieldMatch(field_id=fid)
    fm.range.low, fm.range.high = _b(low), _b(high)
    return fm


def optional(fid: int, value: bytes | int) -> Any:
    fm = p4rt.FieldMatch(field_id=fid)
    fm.optional.value = _b(value)
    return fm


def _b(v: bytes | int) -> bytes:
    if isinstance(v, bytes):
        return v
    return v.to_bytes(max(1, (v.bit_length() + 7) // 8), "big")


# ---------------------------------------------------------------------- the raw client
class Stream:
    """One StreamChannel: ``send`` requests, ``recv`` responses (or the final RpcError)."""

    def __init__(self, stub: Any) -> None:
        self.out: queue.Queue[Any] = queue.Queue()
        self.inq: queue.Queue[Any] = queue.Queue()
        self.call = stub.StreamChannel(iter(self.out.get, None))
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        self.closed = False

    def _run(self) -> None:
        try:
            for r in self.call:
                self.inq.put(r)
        except grpc.RpcError as e:
            self.inq.put(e)

    def send(self, msg: Any) -> None:
        self.out.put(msg)

    # Generous: the machine running the tests may be loaded; a message that comes is fast.
    def recv(self, timeout: float = 30.0) -> Any:
        return self.inq.get(timeout=timeout)

    def recv_kind(self, kind: str, timeout: float = 30.0) -> Any:
        """The next response of a kind (arbitration, packet, digest, error), skipping others."""
        while True:
            r = self.recv(timeout)
            if isinstance(r, grpc.RpcError) or r.WhichOneof("update") == kind:
                return r

    def empty(self, wait: float = 0.1) -> bool:
        try:
            r = self.inq.get(timeout=wait)
        except queue.Empty:
            return True
        self.inq.put(r)
        return False

    def arbitrate(
        self, election: tuple[int, int] | None = (0, 1), device_id: int = 1, role: str = ""
    ) -> Any:
        m = p4rt.StreamMessageRequest()
        m.arbitration.device_id = device_id
        if election is not None:
            m.arbitration.election_id.high, m.arbitration.election_id.low = election
        if role:
            m.arbitration.role.name = role
        self.send(m)
        return self.recv()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.out.put(None)
            self.call.cancel()
            self.thread.join(5)


class Client:
    def __init__(self, port: int, device_id: int = 1, election: tuple[int, int] = (0, 1)) -> None:
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}")
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.election = election
        self.streams: list[Stream] = []

    def stream(self) -> Stream:
        s = Stream(self.stub)
        self.streams.append(s)
        return s

    def set_pipeline(
        self,
        compiled: Compiled | None,
        action: int = p4rt.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        cookie: int | None = None,
        p4info: Any = None,
        device_config: bytes | None = None,
    ) -> Any:
        req = p4rt.SetForwardingPipelineConfigRequest(device_id=self.device_id, action=action)
        req.election_id.high, req.election_id.low = self.election
        if compiled is not None:
            req.config.p4info.CopyFrom(p4info if p4info is not None else compiled.p4info)
            req.config.p4_device_config = (
                device_config if device_config is not None else compiled.device_config
            )
        if cookie is not None:
            req.config.cookie.cookie = cookie
        return self.stub.SetForwardingPipelineConfig(req)

    def get_pipeline(self, response_type: int = 0) -> Any:
        req = p4rt.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=response_type
        )
        return self.stub.GetForwardingPipelineConfig(req)

    def write(self, *updates: tuple[int, Any], election: tuple[int, int] | None = None) -> Any:
        """Write (type, entity) pairs; an entity is any message Entity has a field for."""
        req = p4rt.WriteRequest(device_id=self.device_id)
        req.election_id.high, req.election_id.low = election or self.election
        for utype, ent in updates:
            u = req.updates.add()
            u.type = utype
            u.entity.CopyFrom(entity(ent))
        return self.stub.Write(req)

    def write_errors(self, *updates: tuple[int, Any]) -> list[tuple[str, str]]:
        """The per-update (code name, message) of a failing Write (OK for the others)."""
        with pytest.raises(grpc.RpcError) as info:
            self.write(*updates)
        err = info.value
        assert err.code() == grpc.StatusCode.UNKNOWN, err
        md = dict(err.trailing_metadata())
        st = status_pb2.Status.FromString(md["grpc-status-details-bin"])
        out = []
        for d in st.details:
            e = p4rt.Error()
            assert d.Unpack(e)
            out.append((grpc.StatusCode(_code(e.canonical_code)).name, e.message))
        return out

    def read(self, *ents: Any) -> list[Any]:
        req = p4rt.ReadRequest(device_id=self.device_id)
        for ent in ents:
            req.entities.append(entity(ent))
        out = []
        for resp in self.stub.Read(req):
            for e in resp.entities:
                out.append(getattr(e, e.WhichOneof("entity")))
        return out

    def read_code(self, *ents: Any) -> grpc.StatusCode:
        with pytest.raises(grpc.RpcError) as info:
            self.read(*ents)
        return info.value.code()

    def close(self) -> None:
        for s in self.streams:
            s.close()
        self.channel.close()


def _code(n: int) -> tuple[int, str]:
    for c in grpc.StatusCode:
        if c.value[0] == n:
            return c.value
    raise ValueError(n)


_ENTITY_FIELD = {
    "TableEntry": "table_entry",
    "ActionProfileMember": "action_profile_member",
    "ActionProfileGroup": "action_profile_group",
    "MeterEntry": "meter_entry",
    "DirectMeterEntry": "direct_meter_entry",
    "CounterEntry": "counter_entry",
    "DirectCounterEntry": "direct_counter_entry",
    "PacketReplicationEngineEntry": "packet_replication_engine_entry",
    "ValueSetEntry": "value_set_entry",
    "RegisterEntry": "register_entry",
    "DigestEntry": "digest_entry",
    "ExternEntry": "extern_entry",
}


def entity(msg: Any) -> Any:
    if isinstance(msg, p4rt.Entity):
        return msg
    e = p4rt.Entity()
    getattr(e, _ENTITY_FIELD[type(msg).__name__]).CopyFrom(msg)
    return e


INSERT, MODIFY, DELETE = p4rt.Update.INSERT, p4rt.Update.MODIFY, p4rt.Update.DELETE


# ---------------------------------------------------------------------- the harness
class Harness:
    """A running server with the test program pushed by a primary client (election 1)."""

    def __init__(self, compiled: Compiled, push: bool = True) -> None:
        self.compiled = compiled
        self.ids = Ids(compiled.p4info)
        self.sent: list[tuple[int, bytes]] = []
        self.device = Device(1, cpu_port=CPU_PORT, transmit=lambda p, f: self.sent.append((p, f)))
        self.server = P4RuntimeServer(self.device, "127.0.0.1:0")
        self.port = self.server.start()
        self.clients: list[Client] = []
        self.client = self.new_client()
        self.stream = self.client.stream()
        reply = self.stream.arbitrate((0, 1))
        assert reply.arbitration.status.code == 0
        if push:
            self.client.set_pipeline(compiled)

    def new_client(self, election: tuple[int, int] = (0, 1)) -> Client:
        c = Client(self.port, election=election)
        self.clients.append(c)
        return c

    # shorthands over the primary client
    def write(self, *updates: tuple[int, Any]) -> Any:
        return self.client.write(*updates)

    def write_errors(self, *updates: tuple[int, Any]) -> list[tuple[str, str]]:
        return self.client.write_errors(*updates)

    def read(self, *ents: Any) -> list[Any]:
        return self.client.read(*ents)

    def close(self) -> None:
        for c in self.clients:
            c.close()
        self.server.stop()
