"""Digests of non-struct values delivered as DigestList P4Data (issue 19).

programs/digest_kinds.p4 sends one digest of each kind per packet; every DigestList's
data must carry the P4Data its P4Info type_spec describes (bitstring, struct, tuple,
new_type through its original type, serializable enum as a bitstring). A digest of a header
type is refused, as p4c-bm2-ss refuses it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4rt_client import INSERT, Compiled, Harness, compile_program

from p4reduce.proto import p4runtime_pb2 as p4rt

PROGRAM = Path(__file__).parent / "programs" / "digest_kinds.p4"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    return compile_program(PROGRAM, tmp_path_factory.mktemp("digest_kinds"))


def frame(dst: int, src: int, ethertype: int) -> bytes:
    return dst.to_bytes(6, "big") + src.to_bytes(6, "big") + ethertype.to_bytes(2, "big")


def test_p4info_names_and_type_specs(compiled: Compiled) -> None:
    specs = {d.preamble.name: d.type_spec for d in compiled.p4info.digests}
    assert list(specs) == [
        "digest_0",
        "addr_t",
        "eth_key_t",
        "digest_1",
        "digest_2",
        "vlan_t",
        "Kind",
    ]
    assert specs["digest_0"].bitstring.bit.bitwidth == 32
    assert specs["addr_t"].bitstring.bit.bitwidth == 32
    assert specs["eth_key_t"].struct.name == "eth_key_t"
    members = specs["digest_1"].tuple.members
    assert [m.bitstring.bit.bitwidth for m in members] == [48, 9]
    members = specs["digest_2"].tuple.members
    assert members[0].bitstring.int.bitwidth == 8 and members[1].HasField("bool")
    assert specs["vlan_t"].new_type.name == "vlan_t"
    assert specs["Kind"].serializable_enum.name == "Kind"


def test_every_kind_is_delivered(harness: Harness) -> None:
    h = harness
    names = [d.preamble.name for d in h.compiled.p4info.digests]
    for name in names:
        entry = p4rt.DigestEntry(digest_id=h.ids.id(name))
        entry.config.max_list_size = 1
        h.write((INSERT, entry))
    h.device.inject(3, frame(0x0000000000AA, 0x0000C0A80102, 0x0064))
    got: dict[str, p4rt.DigestList] = {}
    while len(got) < len(names):
        dl = h.stream.recv_kind("digest").digest
        name = next(n for n in names if h.ids.id(n) == dl.digest_id)
        assert name not in got
        got[name] = dl
    data = {name: dl.data[0] for name, dl in got.items()}
    assert data["digest_0"].bitstring == bytes.fromhex("c0a80102")  # meta.x = src[31:0]
    assert data["addr_t"].bitstring == bytes.fromhex("0a000001")
    eth = data["eth_key_t"].struct
    assert [m.bitstring for m in eth.members] == [b"\xaa", bytes.fromhex("c0a80102"), b"\x64"]
    assert [m.bitstring for m in data["digest_1"].tuple.members] == [
        bytes.fromhex("c0a80102"),
        b"\x03",
    ]
    signed, flag = data["digest_2"].tuple.members
    assert signed.bitstring == b"\xfd" and flag.bool is True  # -3 as int<8>
    assert data["vlan_t"].bitstring == b"\x64"
    assert data["Kind"].bitstring == b"\x02"


def test_the_native_engine_runs_every_digest_kind() -> None:
    """The native engine delivers digests itself (its values compared with the interpreter's
    in tests/native/test_events.py), so this program is not refused."""
    from p4reduce.switch.interp.load import load_pipeline
    from p4reduce.switch.native.build import compiler
    from p4reduce.switch.native.select import native_refusal

    if compiler() is None:
        pytest.skip("no C compiler")
    assert native_refusal(load_pipeline(PROGRAM)) is None
