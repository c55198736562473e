"""SetForwardingPipelineConfig (every action) and GetForwardingPipelineConfig (raw gRPC)."""

from __future__ import annotations

import json

import grpc
import pytest
from p4rt_client import INSERT, MODIFY, Harness, exact

from p4reduce.proto import p4runtime_pb2 as p4rt

SET = p4rt.SetForwardingPipelineConfigRequest
GET = p4rt.GetForwardingPipelineConfigRequest


def code_of(fn) -> grpc.StatusCode:  # type: ignore[no-untyped-def]
    with pytest.raises(grpc.RpcError) as info:
        fn()
    return info.value.code()


def l2_entry(h: Harness, dst: int, port: int) -> p4rt.TableEntry:
    te = p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))
    te.match.append(exact(1, dst.to_bytes(6, "big")))
    te.action.action.action_id = h.ids.action("MyIngress.forward")
    te.action.action.params.add(param_id=1, value=bytes([port]))
    return te


def frame(dst: int, ethertype: int = 0x1234) -> bytes:
    return dst.to_bytes(6, "big") + bytes(5) + b"\x09" + ethertype.to_bytes(2, "big") + b"data"


def test_no_pipeline(bare: Harness) -> None:
    c = bare.client
    assert code_of(lambda: c.get_pipeline()) == grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(lambda: c.read(p4rt.TableEntry())) == grpc.StatusCode.FAILED_PRECONDITION
    te = l2_entry(bare, 1, 1)
    assert code_of(lambda: c.write((INSERT, te))) == grpc.StatusCode.FAILED_PRECONDITION
    assert bare.device.inject(1, frame(1)) == []  # no pipeline: dropped


def test_get_response_types(bare: Harness) -> None:
    c = bare.client
    c.set_pipeline(bare.compiled, cookie=77)
    r = c.get_pipeline(GET.ALL)
    assert r.config.p4info == bare.compiled.p4info
    assert r.config.p4_device_config == bare.compiled.device_config
    assert r.config.cookie.cookie == 77
    r = c.get_pipeline(GET.COOKIE_ONLY)
    assert not r.config.HasField("p4info") and not r.config.p4_device_config
    assert r.config.cookie.cookie == 77
    r = c.get_pipeline(GET.P4INFO_AND_COOKIE)
    assert r.config.p4info == bare.compiled.p4info and not r.config.p4_device_config
    r = c.get_pipeline(GET.DEVICE_CONFIG_AND_COOKIE)
    assert not r.config.HasField("p4info")
    assert r.config.p4_device_config == bare.compiled.device_config


def test_no_cookie_means_no_cookie_field(bare: Harness) -> None:
    bare.client.set_pipeline(bare.compiled)
    assert not bare.client.get_pipeline().config.HasField("cookie")


def test_verify_does_not_install(bare: Harness) -> None:
    bare.client.set_pipeline(bare.compiled, SET.VERIFY)
    assert bare.device.state is None


def test_bad_configs_are_invalid_argument(bare: Harness) -> None:
    c = bare.client
    comp = bare.compiled
    bad = [
        lambda: c.set_pipeline(comp, device_config=b"not json"),
        lambda: c.set_pipeline(comp, device_config=b""),
        lambda: c.set_pipeline(comp, device_config=json.dumps({"format": "x"}).encode()),
        lambda: c.set_pipeline(None),  # no config at all
        lambda: c.set_pipeline(comp, action=SET.UNSPECIFIED),
    ]
    for call in bad:
        assert code_of(call) == grpc.StatusCode.INVALID_ARGUMENT
    # a P4Info that does not describe the program
    info = p4rt.SetForwardingPipelineConfigRequest().config.p4info
    info.CopyFrom(comp.p4info)
    info.tables[0].preamble.name = "MyIngress.nonesuch"
    assert code_of(lambda: c.set_pipeline(comp, p4info=info)) == grpc.StatusCode.INVALID_ARGUMENT
    info.CopyFrom(comp.p4info)
    info.tables[0].match_fields[0].bitwidth = 47
    assert code_of(lambda: c.set_pipeline(comp, p4info=info)) == grpc.StatusCode.INVALID_ARGUMENT
    assert bare.device.state is None


def test_empty_p4info_uses_the_embedded_one(bare: Harness) -> None:
    req = p4rt.SetForwardingPipelineConfigRequest(device_id=1, action=SET.VERIFY_AND_COMMIT)
    req.election_id.low = 1
    req.config.p4_device_config = bare.compiled.device_config
    bare.client.stub.SetForwardingPipelineConfig(req)
    assert bare.client.get_pipeline().config.p4info == bare.compiled.p4info


def test_save_then_commit(harness: Harness) -> None:
    h = harness
    c = h.client
    assert code_of(lambda: c.set_pipeline(None, SET.COMMIT)) == grpc.StatusCode.FAILED_PRECONDITION
    h.write((INSERT, l2_entry(h, 2, 3)))
    c.set_pipeline(h.compiled, SET.VERIFY_AND_SAVE, cookie=5)
    # still the old pipeline, entry included
    assert len(h.read(p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2")))) == 1
    c.set_pipeline(None, SET.COMMIT)
    assert c.get_pipeline().config.cookie.cookie == 5
    assert h.read(p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))) == []


def test_verify_and_commit_resets_state(harness: Harness) -> None:
    h = harness
    h.write((INSERT, l2_entry(h, 2, 3)))
    h.client.set_pipeline(h.compiled)
    assert h.read(p4rt.TableEntry(table_id=h.ids.table("MyIngress.l2"))) == []


def test_reconcile_keeps_state(harness: Harness) -> None:
    h = harness
    ids = h.ids
    h.write((INSERT, l2_entry(h, 2, 3)))
    default = p4rt.TableEntry(table_id=ids.table("MyIngress.l2"), is_default_action=True)
    default.action.action.action_id = ids.action("MyIngress.drop")
    h.write((MODIFY, default))
    reg = p4rt.RegisterEntry(register_id=ids.id("MyIngress.reg32"))
    reg.index.index = 3
    reg.data.bitstring = b"\x2a"
    h.write((MODIFY, reg))
    mc = p4rt.PacketReplicationEngineEntry()
    mc.multicast_group_entry.multicast_group_id = 4
    mc.multicast_group_entry.replicas.add(egress_port=1, instance=0)
    h.write((INSERT, mc))
    assert h.device.inject(1, frame(2)) == [(3, frame(2))]
    h.client.set_pipeline(h.compiled, SET.RECONCILE_AND_COMMIT)
    (entry,) = h.read(p4rt.TableEntry(table_id=ids.table("MyIngress.l2")))
    assert entry.action.action.params[0].value == b"\x03"
    d = p4rt.TableEntry(table_id=ids.table("MyIngress.l2"), is_default_action=True)
    (got,) = h.read(d)
    assert got.action.action.action_id == ids.action("MyIngress.drop")
    (r,) = h.read(p4rt.RegisterEntry(register_id=ids.id("MyIngress.reg32"), index=reg.index))
    assert r.data.bitstring == b"\x2a"
    assert len(h.read(mc)) == 1
    assert h.device.inject(1, frame(2)) == [(3, frame(2))]


def test_reconcile_without_pipeline_is_a_commit(bare: Harness) -> None:
    bare.client.set_pipeline(bare.compiled, SET.RECONCILE_AND_COMMIT)
    assert bare.device.state is not None
