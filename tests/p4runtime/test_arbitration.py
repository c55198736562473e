"""Arbitration on the StreamChannel, the primary-only RPCs and stream errors (raw gRPC)."""

from __future__ import annotations

import threading

import grpc
from google.rpc import code_pb2
from p4reduce.switch.p4runtime import Device, P4RuntimeServer
from p4rt_client import INSERT, Client, Harness, exact

from p4reduce.proto import p4runtime_pb2 as p4rt


def l2_entry(h: Harness, dst: int = 2, port: int = 3) -> p4rt.TableEntry:
    te = p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))
    te.match.append(exact(1, dst.to_bytes(6, "big")))
    te.action.action.action_id = h.ids.action("MyIngress.forward")
    te.action.action.params.add(param_id=1, value=bytes([port]))
    return te


def test_first_controller_is_primary_and_reply_echoes(harness: Harness) -> None:
    c = harness.new_client()
    s = c.stream()
    r = s.arbitrate((0, 5), role="")
    a = r.arbitration
    assert a.device_id == 1
    assert (a.election_id.high, a.election_id.low) == (0, 5)
    assert a.status.code == code_pb2.OK
    # the old primary (election 1) is told it is now a backup
    old = harness.stream.recv_kind("arbitration")
    assert old.arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert old.arbitration.election_id.low == 5


def test_backup_gets_already_exists(harness: Harness) -> None:
    s = harness.new_client().stream()
    r = s.arbitrate((0, 0))
    # election id (0, 0) set explicitly is lower than the primary's (0, 1)
    assert r.arbitration.status.code == code_pb2.ALREADY_EXISTS
    assert r.arbitration.election_id.low == 1
    assert harness.stream.empty()  # the primary did not change: nobody else is told


def test_no_primary_gives_not_found(harness: Harness) -> None:
    s = harness.new_client().stream()
    r = s.arbitrate(None, role="reader")  # no election id: a backup that is never primary
    assert r.arbitration.status.code == code_pb2.NOT_FOUND
    assert r.arbitration.role.name == "reader"


def test_unknown_device_ends_stream_with_not_found(harness: Harness) -> None:
    s = harness.new_client().stream()
    r = s.arbitrate((0, 9), device_id=42)
    assert isinstance(r, grpc.RpcError)
    assert r.code() == grpc.StatusCode.NOT_FOUND


def test_duplicate_election_id_is_invalid_argument(harness: Harness) -> None:
    s = harness.new_client().stream()
    r = s.arbitrate((0, 1))
    assert isinstance(r, grpc.RpcError)
    assert r.code() == grpc.StatusCode.INVALID_ARGUMENT


def test_role_change_is_failed_precondition(harness: Harness) -> None:
    s = harness.new_client().stream()
    assert s.arbitrate((0, 7), role="a").arbitration.status.code == code_pb2.OK
    r = s.arbitrate((0, 7), role="b")
    assert isinstance(r, grpc.RpcError)
    assert r.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_roles_arbitrate_independently(harness: Harness) -> None:
    s = harness.new_client().stream()
    assert s.arbitrate((0, 1), role="other").arbitration.status.code == code_pb2.OK
    assert harness.stream.empty()


def test_primary_leaving_promotes_next(harness: Harness) -> None:
    c2 = harness.new_client(election=(0, 3))
    s2 = c2.stream()
    assert s2.arbitrate((0, 3)).arbitration.status.code == code_pb2.OK
    assert harness.stream.recv_kind("arbitration").arbitration.status.code == (
        code_pb2.ALREADY_EXISTS
    )
    s2.close()
    r = harness.stream.recv_kind("arbitration")
    assert r.arbitration.status.code == code_pb2.OK
    assert r.arbitration.election_id.low == 1
    harness.write((INSERT, l2_entry(harness)))  # election 1 may write again


def test_write_needs_primary(harness: Harness) -> None:
    backup = harness.new_client(election=(0, 0))
    backup.stream().arbitrate((0, 0))
    try:
        backup.write((INSERT, l2_entry(harness)))
        raise AssertionError("write from a backup accepted")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    # an election id no stream holds
    try:
        harness.client.write((INSERT, l2_entry(harness)), election=(0, 77))
        raise AssertionError("write with a stranger's election id accepted")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    # reads need no arbitration
    assert backup.read(p4rt.TableEntry(table_id=harness.ids.table("MyIngress.l2"))) == []


def test_set_pipeline_needs_primary(harness: Harness) -> None:
    backup = harness.new_client(election=(0, 0))
    backup.stream().arbitrate((0, 0))
    try:
        backup.set_pipeline(harness.compiled)
        raise AssertionError("SetForwardingPipelineConfig from a backup accepted")
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.PERMISSION_DENIED


def test_no_stream_at_all_is_permission_denied(compiled) -> None:  # type: ignore[no-untyped-def]
    device = Device(1)
    server = P4RuntimeServer(device, "127.0.0.1:0")
    port = server.start()
    c = Client(port)
    try:
        try:
            c.set_pipeline(compiled)
            raise AssertionError("accepted")
        except grpc.RpcError as e:
            assert e.code() == grpc.StatusCode.PERMISSION_DENIED
    finally:
        c.close()
        server.stop()


def test_wrong_device_id_on_unary_rpcs(harness: Harness) -> None:
    c = Client(harness.port, device_id=9)
    try:
        for call in (
            lambda: c.get_pipeline(),
            lambda: c.read(p4rt.TableEntry()),
            lambda: c.write((INSERT, l2_entry(harness))),
        ):
            try:
                call()
                raise AssertionError("wrong device accepted")
            except grpc.RpcError as e:
                assert e.code() == grpc.StatusCode.NOT_FOUND
    finally:
        c.close()


def test_packet_out_from_backup_is_stream_error(harness: Harness) -> None:
    s = harness.new_client(election=(0, 0)).stream()
    s.arbitrate((0, 0))
    m = p4rt.StreamMessageRequest()
    m.packet.payload = b"\x00" * 14
    s.send(m)
    r = s.recv_kind("error")
    assert r.error.canonical_code == code_pb2.PERMISSION_DENIED
    assert r.error.packet_out.packet_out.payload == m.packet.payload


def test_stream_errors_for_bad_messages(harness: Harness) -> None:
    s = harness.stream
    m = p4rt.StreamMessageRequest()
    md = m.packet.metadata.add(metadata_id=1, value=b"\x02\x00")  # 512 does not fit in 9 bits
    m.packet.payload = b"\x00" * 14
    s.send(m)
    assert s.recv_kind("error").error.canonical_code == code_pb2.OUT_OF_RANGE
    md.metadata_id = 99
    s.send(m)
    assert s.recv_kind("error").error.canonical_code == code_pb2.INVALID_ARGUMENT
    ack = p4rt.StreamMessageRequest()
    ack.digest_ack.digest_id = 12345
    s.send(ack)
    r = s.recv_kind("error")
    assert r.error.canonical_code == code_pb2.NOT_FOUND
    assert r.error.digest_list_ack.digest_list_ack.digest_id == 12345
    s.send(p4rt.StreamMessageRequest())
    assert s.recv_kind("error").error.canonical_code == code_pb2.INVALID_ARGUMENT
    other = p4rt.StreamMessageRequest()
    other.other.type_url = "type.googleapis.com/x"
    s.send(other)
    assert s.recv_kind("error").error.canonical_code == code_pb2.UNIMPLEMENTED


def test_packet_out_without_pipeline_is_failed_precondition(bare: Harness) -> None:
    m = p4rt.StreamMessageRequest()
    m.packet.payload = b"\x00" * 14
    bare.stream.send(m)
    assert bare.stream.recv_kind("error").error.canonical_code == code_pb2.FAILED_PRECONDITION


def test_capabilities(harness: Harness) -> None:
    r = harness.client.stub.Capabilities(p4rt.CapabilitiesRequest())
    assert r.p4runtime_api_version == "1.4.1"


def test_stop_ends_open_streams_and_leaves_no_threads(compiled) -> None:  # type: ignore[no-untyped-def]
    before = set(threading.enumerate())
    h = Harness(compiled)
    extra = h.new_client(election=(0, 2)).stream()
    extra.arbitrate((0, 2))
    h.server.stop()
    r = extra.recv_kind("arbitration", timeout=5)  # nothing else comes: the stream's end
    assert isinstance(r, grpc.RpcError)
    h.close()
    leftover = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    for t in leftover:
        t.join(2)
    assert [t.name for t in leftover if t.is_alive()] == []
