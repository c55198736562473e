"""digest, log_msg and assert/assume on the native engine: the same digests, log text and
faults (P4RuntimeFault, same place and message) as the interpreter, packet for packet."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.runtime import P4RuntimeFault
from p4reduce.switch.native.build import compiler
from p4reduce.switch.native.select import make_switch

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")

PROGRAM = r"""
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; bit<16> c; }
struct headers_t { h_t h; }
struct meta_t { bool flag; bit<8> x; }
struct learn_t { bit<8> a; bool flag; bit<16> c; }
parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        meta.flag = hdr.h.a == 7;
        log_msg("ingress: plain message");
        log_msg("ingress: a={} b={} flag={} extra {}", {hdr.h.a, hdr.h.b, meta.flag});
        if (hdr.h.b & 1 == 1) {
            digest<learn_t>(1, {hdr.h.a, meta.flag, hdr.h.c});
        }
        assert(hdr.h.a != 0xFF);
        assume(hdr.h.b != 0xFF);
        if (hdr.h.b & 2 == 2) {
            sm.mcast_grp = 1;
        } else {
            sm.egress_spec = 2;
        }
    }
}
control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        log_msg("egress: port={}", {sm.egress_port});
        digest<learn_t>(1, {hdr.h.b, meta.flag, hdr.h.c});  // egress digests are dropped
        assert(sm.egress_port != 3 || hdr.h.a != 0xEE);
        hdr.h.c = hdr.h.c + 1;
    }
}
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
"""


def _outcome(sw: object, port: int, frame: bytes) -> object:
    try:
        return sw.process(port, frame)  # type: ignore[attr-defined]
    except P4RuntimeFault as e:
        return ("fault", str(e), e.where, e.message)


def test_digests_logs_and_faults_agree(tmp_path: Path) -> None:
    src = tmp_path / "events.p4"
    src.write_text(PROGRAM)
    py = make_switch(load_pipeline(src), "python", clock=lambda: 0)
    nat = make_switch(load_pipeline(src), "native", clock=lambda: 0, notice=None)
    assert nat.engine == "native"
    for sw in (py, nat):
        sw.pre.mgrp_create(1)
        sw.pre.node_associate(1, sw.pre.node_create(0, [1, 3, 4]))
    rng = random.Random(3)
    faults = seen = 0
    for step in range(300):
        a = rng.choice([0, 7, 0xFF, 0xEE, rng.getrandbits(8)])
        b = rng.choice([0, 1, 2, 3, 0xFF, rng.getrandbits(8)])
        frame = bytes([a, b]) + rng.getrandbits(16).to_bytes(2, "big") + bytes(rng.randint(0, 4))
        if rng.random() < 0.05:
            frame = frame[:3]  # too short: a parser error, the ingress still runs
        x, y = _outcome(py, 1, frame), _outcome(nat, 1, frame)
        assert x == y, f"step {step}: {frame.hex()}"
        faults += isinstance(x, tuple)
        assert py.log_messages == nat.log_messages, f"step {step}"
        # repr: a bool member must come back a bool (True == 1 would hide it)
        assert repr(py.digests) == repr(nat.digests), f"step {step}"
        seen += len(nat.digests)
        if rng.random() < 0.3:
            py.digests.clear()
            nat.digests.clear()
    assert faults > 10 and seen > 10
    assert any("flag=True" in m for m in nat.log_messages)


def test_batch_stops_at_the_fault(tmp_path: Path) -> None:
    src = tmp_path / "events.p4"
    src.write_text(PROGRAM)
    nat = make_switch(load_pipeline(src), "native", clock=lambda: 0, notice=None)
    with pytest.raises(P4RuntimeFault, match="assert failed"):
        nat.process_batch([(1, bytes([1, 1, 0, 0])), (1, bytes([0xFF, 1, 0, 0]))])  # type: ignore[attr-defined]
    # the first packet's digest was delivered, the faulting one's was not
    assert nat.digests == [("learn_t", (1, False, 0))]


def test_digests_of_every_value_kind_agree() -> None:
    """Digests of bit<W>, int<W> (negative), bool, headers, lists, typedefs and serializable
    enums come back from the native engine as the interpreter delivers them: an int<W> value
    negative, not its two's complement (the engine holds it in 64 bits)."""
    from p4reduce.switch.frontend.compiler import CompileOptions

    program = Path(__file__).parents[1] / "p4runtime" / "programs" / "digest_kinds.p4"
    engines = [
        make_switch(load_pipeline(program, CompileOptions()), engine, notice=None)
        for engine in ("python", "native")
    ]
    assert [sw.engine for sw in engines] == ["python", "native"]
    rng = random.Random(3)
    frames = [bytes(rng.getrandbits(8) for _ in range(14 + rng.randrange(40))) for _ in range(40)]
    frames.append(bytes.fromhex("0000000000AA0000C0A801020064") + bytes(40))
    for frame in frames:
        outs = [sw.process(3, frame) for sw in engines]
        assert outs[0] == outs[1]
    py, nat = engines
    assert nat.digests == py.digests
    assert any(v < 0 for _, values in py.digests for v in values if not isinstance(v, bool))
