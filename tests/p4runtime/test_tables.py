"""TableEntry writes and reads over raw gRPC: match kinds, priorities, defaults, errors."""

from __future__ import annotations

import grpc
import pytest
from p4rt_client import (
    DELETE,
    INSERT,
    MODIFY,
    Harness,
    exact,
    lpm,
    optional,
    range_,
    ternary,
)

from p4reduce.proto import p4runtime_pb2 as p4rt

L2, ACL, ROUTES = "MyIngress.l2", "MyIngress.acl", "MyIngress.routes"


def action(h: Harness, te: p4rt.TableEntry, name: str, *params: bytes) -> p4rt.TableEntry:
    te.action.action.action_id = h.ids.action(name)
    for i, v in enumerate(params, 1):
        te.action.action.params.add(param_id=i, value=v)
    return te


def l2(h: Harness, dst: bytes, port: bytes = b"\x03", name: str = "MyIngress.forward"):  # type: ignore[no-untyped-def]
    te = p4rt.TableEntry(table_id=h.ids.table(L2))
    te.match.append(exact(1, dst))
    return action(h, te, name, port) if name == "MyIngress.forward" else action(h, te, name)


def acl(h: Harness, priority: int, *fields: p4rt.FieldMatch) -> p4rt.TableEntry:
    te = p4rt.TableEntry(table_id=h.ids.table(ACL), priority=priority)
    te.match.extend(fields)
    return action(h, te, "MyIngress.drop")


def mac(n: int) -> bytes:
    return n.to_bytes(6, "big")


def frame(dst: int) -> bytes:
    return mac(dst) + mac(9) + b"\x12\x34" + b"payload"


# ---------------------------------------------------------------------- exact tables
def test_insert_read_modify_delete(harness: Harness) -> None:
    h = harness
    h.write((INSERT, l2(h, b"\x00" * 5 + b"\x02", b"\x00\x03")))  # padded values accepted
    (got,) = h.read(p4rt.TableEntry(table_id=h.ids.table(L2)))
    assert got.match[0].exact.value == b"\x02"  # canonical in replies
    assert got.action.action.params[0].value == b"\x03"
    assert got.priority == 0 and not got.is_const
    assert h.device.inject(1, frame(2)) == [(3, frame(2))]
    h.write((MODIFY, l2(h, mac(2), b"\x05")))
    (got,) = h.read(p4rt.TableEntry(table_id=h.ids.table(L2)))
    assert got.action.action.params[0].value == b"\x05"
    assert h.device.inject(1, frame(2)) == [(5, frame(2))]
    h.write((DELETE, l2(h, mac(2))))
    assert h.read(p4rt.TableEntry(table_id=h.ids.table(L2))) == []
    assert h.device.inject(1, frame(2)) == [(0, frame(2))]  # NoAction: port 0


def test_conflicts(harness: Harness) -> None:
    h = harness
    h.write((INSERT, l2(h, mac(2))))
    assert h.write_errors((INSERT, l2(h, mac(2))))[0][0] == "ALREADY_EXISTS"
    assert h.write_errors((MODIFY, l2(h, mac(7))))[0][0] == "NOT_FOUND"
    assert h.write_errors((DELETE, l2(h, mac(7))))[0][0] == "NOT_FOUND"


def test_batch_reports_one_error_per_update(harness: Harness) -> None:
    h = harness
    errors = h.write_errors(
        (INSERT, l2(h, mac(1))),
        (INSERT, l2(h, mac(1))),
        (INSERT, l2(h, mac(2), b"\x02\x00")),  # 512 does not fit bit<9>
        (INSERT, l2(h, mac(3))),
    )
    assert [c for c, _ in errors] == ["OK", "ALREADY_EXISTS", "OUT_OF_RANGE", "OK"]
    got = h.read(p4rt.TableEntry(table_id=h.ids.table(L2)))
    assert sorted(e.match[0].exact.value for e in got) == [b"\x01", b"\x03"]


def test_value_errors(harness: Harness) -> None:
    h = harness
    te = l2(h, b"\x01" + mac(2))  # 7 bytes, value above 2^48
    assert h.write_errors((INSERT, te))[0][0] == "OUT_OF_RANGE"
    te = l2(h, b"")
    assert h.write_errors((INSERT, te))[0][0] == "OUT_OF_RANGE"
    te = l2(h, mac(2), b"")
    assert h.write_errors((INSERT, te))[0][0] == "OUT_OF_RANGE"


def test_malformed_entries(harness: Harness) -> None:
    h = harness
    tid = h.ids.table(L2)
    cases = []
    te = l2(h, mac(2))
    te.table_id = 0x02FFFFFF
    cases.append(("NOT_FOUND", te))
    te = l2(h, mac(2))
    te.action.action.action_id = 0x01FFFFFF
    cases.append(("NOT_FOUND", te))
    te = l2(h, mac(2))
    te.action.action.action_id = h.ids.action("MyIngress.learn")  # not an action of l2
    del te.action.action.params[:]
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    del te.action.action.params[:]  # missing parameter
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    te.action.action.params.add(param_id=1, value=b"\x01")  # given twice
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    te.action.action.params[0].param_id = 9
    cases.append(("INVALID_ARGUMENT", te))
    te = p4rt.TableEntry(table_id=tid)  # missing exact field
    cases.append(("INVALID_ARGUMENT", action(h, te, "MyIngress.drop")))
    te = l2(h, mac(2))
    te.match[0].field_id = 7
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    te.match.append(exact(1, mac(2)))  # field given twice
    cases.append(("INVALID_ARGUMENT", te))
    te = p4rt.TableEntry(table_id=tid)
    te.match.append(lpm(1, mac(2), 48))  # wrong kind
    cases.append(("INVALID_ARGUMENT", action(h, te, "MyIngress.drop")))
    te = l2(h, mac(2))
    te.priority = 10  # exact table: no priority
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    te.ClearField("action")
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2), name="MyIngress.only_default")
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    te.idle_timeout_ns = 1000
    cases.append(("INVALID_ARGUMENT", te))
    te = l2(h, mac(2))
    te.action.action_profile_member_id = 1  # l2 has no action profile
    cases.append(("INVALID_ARGUMENT", te))
    errors = h.write_errors(*[(INSERT, te) for _, te in cases])
    assert [c for c, _ in errors] == [c for c, _ in cases], errors
    assert h.read(p4rt.TableEntry(table_id=tid)) == []


def test_update_type_unspecified_and_empty_entity(harness: Harness) -> None:
    h = harness
    errors = h.write_errors((p4rt.Update.UNSPECIFIED, l2(h, mac(2))), (INSERT, p4rt.Entity()))
    assert [c for c, _ in errors] == ["INVALID_ARGUMENT", "INVALID_ARGUMENT"]


def test_extern_entries_unimplemented(harness: Harness) -> None:
    h = harness
    assert h.write_errors((INSERT, p4rt.ExternEntry(extern_type_id=0x81)))[0][0] == (
        "UNIMPLEMENTED"
    )


def test_atomicity_other_than_continue_is_unimplemented(harness: Harness) -> None:
    h = harness
    req = p4rt.WriteRequest(device_id=1, atomicity=p4rt.WriteRequest.ROLLBACK_ON_ERROR)
    req.election_id.low = 1
    u = req.updates.add(type=INSERT)
    u.entity.table_entry.CopyFrom(l2(h, mac(2)))
    with pytest.raises(grpc.RpcError) as info:
        h.client.stub.Write(req)
    assert info.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_table_full(harness: Harness) -> None:
    h = harness
    h.write(*[(INSERT, l2(h, mac(i))) for i in range(64)])
    assert h.write_errors((INSERT, l2(h, mac(100))))[0][0] == "RESOURCE_EXHAUSTED"


def test_metadata_round_trip(harness: Harness) -> None:
    h = harness
    te = l2(h, mac(2))
    te.metadata = b"cookie!"
    te.controller_metadata = 12
    h.write((INSERT, te))
    (got,) = h.read(p4rt.TableEntry(table_id=h.ids.table(L2)))
    assert got.metadata == b"cookie!" and got.controller_metadata == 12


# ---------------------------------------------------------------------- priorities, match kinds
def acl_fields(h: Harness) -> dict[str, int]:
    return {n: h.ids.field(ACL, n) for n in ("type", "dst", "src", "proto", "tos")}


def test_every_match_kind(harness: Harness) -> None:
    h = harness
    f = acl_fields(h)
    full = acl(
        h,
        10,
        exact(f["type"], b"\x08\x00"),
        lpm(f["dst"], b"\x0a\x00\x00\x00", 8),
        ternary(f["src"], b"\x00\x00\x00\x01", b"\x00\x00\x00\xff"),
        range_(f["proto"], 6, 17),
        optional(f["tos"], 0),
    )
    h.write((INSERT, full))
    (got,) = h.read(p4rt.TableEntry(table_id=h.ids.table(ACL)))
    by_id = {m.field_id: m for m in got.match}
    assert by_id[f["type"]].exact.value == b"\x08\x00"
    assert (by_id[f["dst"]].lpm.value, by_id[f["dst"]].lpm.prefix_len) == (b"\x0a\x00\x00\x00", 8)
    assert (by_id[f["src"]].ternary.value, by_id[f["src"]].ternary.mask) == (b"\x01", b"\xff")
    assert (by_id[f["proto"]].range.low, by_id[f["proto"]].range.high) == (b"\x06", b"\x11")
    assert by_id[f["tos"]].optional.value == b"\x00"
    assert got.priority == 10
    # omitted fields are don't-care, and are omitted in replies
    h.write((INSERT, acl(h, 5, exact(f["type"], b"\x08\x00"))))
    got = h.read(p4rt.TableEntry(table_id=h.ids.table(ACL), priority=5))
    assert len(got) == 1 and len(got[0].match) == 1


def test_priorities(harness: Harness) -> None:
    h = harness
    f = acl_fields(h)
    assert h.write_errors((INSERT, acl(h, 0, exact(f["type"], 1))))[0][0] == "INVALID_ARGUMENT"
    h.write((INSERT, acl(h, 1, exact(f["type"], 1))), (INSERT, acl(h, 2, exact(f["type"], 1))))
    assert len(h.read(p4rt.TableEntry(table_id=h.ids.table(ACL)))) == 2
    h.write((DELETE, acl(h, 1, exact(f["type"], 1))))
    (left,) = h.read(p4rt.TableEntry(table_id=h.ids.table(ACL)))
    assert left.priority == 2


def test_dont_care_encodings_are_refused(harness: Harness) -> None:
    h = harness
    f = acl_fields(h)
    t = exact(f["type"], 1)
    errors = h.write_errors(
        (INSERT, acl(h, 1, t, lpm(f["dst"], 0, 0))),
        (INSERT, acl(h, 1, t, ternary(f["src"], 0, 0))),
        (INSERT, acl(h, 1, t, range_(f["proto"], 0, 255))),
        (INSERT, acl(h, 1, t, lpm(f["dst"], b"\x0a\x00\x00\x01", 8))),  # bits past the prefix
        (INSERT, acl(h, 1, t, lpm(f["dst"], 1, 33))),
        (INSERT, acl(h, 1, t, ternary(f["src"], 3, 1))),  # value outside the mask
        (INSERT, acl(h, 1, t, range_(f["proto"], 9, 8))),
    )
    assert [c for c, _ in errors] == ["INVALID_ARGUMENT"] * 7


def test_wildcard_read_filters(harness: Harness) -> None:
    h = harness
    f = acl_fields(h)
    h.write(
        (INSERT, acl(h, 1, exact(f["type"], 1))),
        (INSERT, acl(h, 2, exact(f["type"], 1), optional(f["tos"], 3))),
        (INSERT, acl(h, 3, exact(f["type"], 2))),
        (INSERT, l2(h, mac(5))),
    )
    sel = p4rt.TableEntry(table_id=h.ids.table(ACL))
    sel.match.append(exact(f["type"], b"\x00\x01"))
    assert sorted(e.priority for e in h.read(sel)) == [1, 2]
    sel.priority = 2
    assert [e.priority for e in h.read(sel)] == [2]
    everything = h.read(p4rt.TableEntry())
    tables = {e.table_id for e in everything}
    assert {h.ids.table(ACL), h.ids.table(L2), h.ids.table("MyIngress.consts")} <= tables
    # several entities in one request
    assert len(h.read(p4rt.TableEntry(table_id=h.ids.table(L2)), sel)) == 2
    # unknown table in a read
    assert h.client.read_code(p4rt.TableEntry(table_id=0x02ABCDEF)) == grpc.StatusCode.NOT_FOUND
    bad = p4rt.TableEntry(table_id=h.ids.table(ACL))
    bad.match.append(exact(f["type"], b"\x01\x00\x00"))
    assert h.client.read_code(bad) == grpc.StatusCode.OUT_OF_RANGE
    bad = p4rt.TableEntry(table_id=h.ids.table(ACL))
    bad.match.append(exact(77, 1))
    assert h.client.read_code(bad) == grpc.StatusCode.INVALID_ARGUMENT


# ---------------------------------------------------------------------- default actions
def test_default_action(harness: Harness) -> None:
    h = harness
    tid = h.ids.table(ROUTES)
    d = p4rt.TableEntry(table_id=tid, is_default_action=True)
    (got,) = h.read(d)
    assert got.is_default_action and got.action.action.action_id == h.ids.action("MyIngress.drop")
    action(h, d, "MyIngress.forward", b"\x04")
    h.write((MODIFY, d))
    (got,) = h.read(p4rt.TableEntry(table_id=tid, is_default_action=True))
    assert got.action.action.action_id == h.ids.action("MyIngress.forward")
    assert got.action.action.params[0].value == b"\x04"
    # the default entry is not part of a wildcard read
    assert h.read(p4rt.TableEntry(table_id=tid)) == []
    # MODIFY without action: back to the program's default
    h.write((MODIFY, p4rt.TableEntry(table_id=tid, is_default_action=True)))
    (got,) = h.read(p4rt.TableEntry(table_id=tid, is_default_action=True))
    assert got.action.action.action_id == h.ids.action("MyIngress.drop")


def test_default_action_on_data_plane(harness: Harness) -> None:
    h = harness
    d = p4rt.TableEntry(table_id=h.ids.table(L2), is_default_action=True)
    h.write((MODIFY, action(h, d, "MyIngress.forward", b"\x06")))
    assert h.device.inject(1, frame(9)) == [(6, frame(9))]


def test_default_action_errors(harness: Harness) -> None:
    h = harness
    tid = h.ids.table(L2)
    d = action(h, p4rt.TableEntry(table_id=tid, is_default_action=True), "MyIngress.drop")
    with_match = p4rt.TableEntry()
    with_match.CopyFrom(d)
    with_match.match.append(exact(1, mac(1)))
    const_default = p4rt.TableEntry(
        table_id=h.ids.table("MyIngress.consts"), is_default_action=True
    )
    action(h, const_default, "MyIngress.drop")
    errors = h.write_errors(
        (INSERT, d),
        (DELETE, d),
        (MODIFY, with_match),
        (MODIFY, const_default),
        (MODIFY, action(h, p4rt.TableEntry(table_id=tid, is_default_action=True), "NoAction")),
    )
    assert [c for c, _ in errors] == [
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "INVALID_ARGUMENT",
        "PERMISSION_DENIED",
        "OK",
    ]
    # @defaultonly actions are fine as the default
    h.write(
        (
            MODIFY,
            action(
                h, p4rt.TableEntry(table_id=tid, is_default_action=True), "MyIngress.only_default"
            ),
        )
    )


# ---------------------------------------------------------------------- const tables
def test_const_tables(harness: Harness) -> None:
    h = harness
    tid = h.ids.table("MyIngress.consts")
    (entry,) = h.read(p4rt.TableEntry(table_id=tid))
    assert entry.is_const and entry.match[0].exact.value == b"\x08\x06"
    te = p4rt.TableEntry(table_id=tid)
    te.match.append(exact(1, b"\x08\x00"))
    action(h, te, "MyIngress.drop")
    errors = h.write_errors((INSERT, te), (MODIFY, entry), (DELETE, entry))
    assert [c for c, _ in errors] == ["PERMISSION_DENIED"] * 3


def test_const_entries_keep_their_order_in_priorities(harness: Harness) -> None:
    h = harness
    got = h.read(p4rt.TableEntry(table_id=h.ids.table("MyIngress.ordered")))
    assert len(got) == 2
    first, second = got
    assert first.priority > second.priority > 0  # the earlier entry wins
    assert len(second.match) == 0  # 0 &&& 0 is the don't-care value
