"""Stateful externs of the interpreter: registers, counters, meters and parser value sets.

Proves, through a P4 program and the extern objects' control-plane API: register
read/write/reset from both planes, with ``ExternError`` for an index or value out of range
and signed (``int<16>``) cells going through ``cp_write``/``cp_read`` as two's complement;
counters counting packets and bytes, read, written and reset by the control plane; indexed
meters (packets and bytes) configured with ``set_rates`` colouring packets GREEN, YELLOW
then RED under a fake clock, refilling as time passes, unconfigured cells staying GREEN;
value sets refusing a wrong field count or a full set, matching value/mask members, and a
parser ``select`` on a value set whose members are added at run time.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.externs import Counter, ExternError, Meter, Register, ValueSet
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.meters import GREEN, RED, YELLOW
from p4reduce.switch.interp.switch import V1Switch

SECOND = 1_000_000  # microseconds

# header h_t: op(8) idx(8) kind(8) sub(16) val(32) sval(16) color(8) path(8) -> 13 bytes
HEADER = "!BBBHIHBB"
HEADER_SIZE = struct.calcsize(HEADER)
OP_READ, OP_WRITE, OP_SREAD, OP_SWRITE, OP_SDEC, OP_COUNT, OP_METER, OP_METER_BYTES = range(1, 9)

PROGRAM = """
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;
    bit<8>  idx;
    bit<8>  kind;
    bit<16> sub;
    bit<32> val;
    bit<16> sval;
    bit<8>  color;
    bit<8>  path;
}
struct headers_t { h_t h; }
struct meta_t { bit<8> path; }
struct pair_t { bit<8> kind; bit<16> sub; }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    value_set<bit<8>>(2) kinds;
    value_set<pair_t>(4) pairs;

    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            kinds: s_kind;
            5: s_five;
            default: s_pairs;
        }
    }
    state s_kind { meta.path = 1; transition accept; }
    state s_five { meta.path = 2; transition accept; }
    state s_pairs {
        transition select(hdr.h.kind, hdr.h.sub) {
            pairs: s_pair;
            default: s_other;
        }
    }
    state s_pair { meta.path = 4; transition accept; }
    state s_other { meta.path = 3; transition accept; }
}
control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(4) r;
    register<int<16>>(2) rs;
    counter(4, CounterType.packets_and_bytes) c;
    meter(2, MeterType.packets) m;
    meter(2, MeterType.bytes) mb;
    apply {
        int<16> x;
        if (hdr.h.op == 1) {
            r.read(hdr.h.val, (bit<32>)hdr.h.idx);
        } else if (hdr.h.op == 2) {
            r.write((bit<32>)hdr.h.idx, hdr.h.val);
        } else if (hdr.h.op == 3) {
            rs.read(x, (bit<32>)hdr.h.idx);
            hdr.h.sval = (bit<16>)x;
            if (x < 0) { hdr.h.color = 0xFF; }
        } else if (hdr.h.op == 4) {
            rs.write((bit<32>)hdr.h.idx, (int<16>)hdr.h.sval);
        } else if (hdr.h.op == 5) {
            rs.read(x, (bit<32>)hdr.h.idx);
            rs.write((bit<32>)hdr.h.idx, x - 1);
        } else if (hdr.h.op == 6) {
            c.count((bit<32>)hdr.h.idx);
        } else if (hdr.h.op == 7) {
            m.execute_meter((bit<32>)hdr.h.idx, hdr.h.color);
        } else if (hdr.h.op == 8) {
            mb.execute_meter((bit<32>)hdr.h.idx, hdr.h.color);
        }
        hdr.h.path = meta.path;
        sm.egress_spec = 1;
    }
}
control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }
control DeparserImpl(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
"""


class FakeClock:
    """Microseconds, moved by hand."""

    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    path: Path = tmp_path_factory.mktemp("externs") / "externs.p4"
    path.write_text(PROGRAM)
    return load_pipeline(path)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def sw(pipeline: Pipeline, clock: FakeClock) -> V1Switch:
    """A switch on the shared pipeline with every extern back to its initial state."""
    for r in pipeline.registers.values():
        r.reset()
    for c in pipeline.counters.values():
        c.reset()
    for m in pipeline.meters.values():
        m.array.reset()
    for v in pipeline.value_sets.values():
        v.clear()
    return V1Switch(pipeline, clock=clock)


def send(
    sw: V1Switch,
    op: int,
    idx: int = 0,
    val: int = 0,
    sval: int = 0,
    kind: int = 0,
    sub: int = 0,
    payload: bytes = b"",
) -> tuple[int, ...]:
    """Send one packet; return its header fields as the program left them."""
    data = struct.pack(HEADER, op, idx, kind, sub, val, sval, 0, 0) + payload
    [(port, out)] = sw.process(0, data)
    assert port == 1
    assert out[HEADER_SIZE:] == payload
    return struct.unpack(HEADER, out[:HEADER_SIZE])


def register(sw: V1Switch, name: str) -> Register:
    return sw.pipeline.registers[f"ingress.{name}"]


# ---------------------------------------------------------------------- registers
def test_extern_objects_by_control_plane_name(pipeline: Pipeline) -> None:
    assert set(pipeline.registers) == {"ingress.r", "ingress.rs"}
    assert set(pipeline.counters) == {"ingress.c"}
    assert set(pipeline.meters) == {"ingress.m", "ingress.mb"}
    assert set(pipeline.value_sets) == {"ParserImpl.kinds", "ParserImpl.pairs"}
    r, rs = pipeline.registers["ingress.r"], pipeline.registers["ingress.rs"]
    assert (r.size, r.width, r.signed) == (4, 32, False)
    assert (rs.size, rs.width, rs.signed) == (2, 16, True)
    assert pipeline.value_sets["ParserImpl.pairs"].widths == [8, 16]


def test_register_both_planes(sw: V1Switch) -> None:
    r = register(sw, "r")
    r.cp_write(2, 0xDEADBEEF)
    assert send(sw, OP_READ, idx=2)[4] == 0xDEADBEEF
    assert send(sw, OP_READ, idx=1)[4] == 0
    send(sw, OP_WRITE, idx=3, val=12345)
    assert r.cp_read(3) == 12345
    assert [r.cp_read(i) for i in range(4)] == [0, 0, 0xDEADBEEF, 12345]
    r.reset()
    assert [r.cp_read(i) for i in range(4)] == [0, 0, 0, 0]
    assert send(sw, OP_READ, idx=2)[4] == 0


def test_register_data_plane_out_of_range(sw: V1Switch) -> None:
    r = register(sw, "r")
    send(sw, OP_WRITE, idx=4, val=7)  # ignored
    assert r.values == [0, 0, 0, 0]
    r.cp_write(0, 9)
    assert send(sw, OP_READ, idx=200)[4] == 0  # reads 0


@pytest.mark.parametrize("index", [-1, 4, 1000])
def test_register_index_errors(sw: V1Switch, index: int) -> None:
    r = register(sw, "r")
    with pytest.raises(ExternError, match=f"ingress.r: index {index} is out of range .size 4."):
        r.cp_read(index)
    with pytest.raises(ExternError, match=f"index {index} is out of range"):
        r.cp_write(index, 1)


@pytest.mark.parametrize("value", [1 << 32, -1, -(1 << 31)])
def test_register_width_errors(sw: V1Switch, value: int) -> None:
    r = register(sw, "r")
    with pytest.raises(ExternError, match=f"ingress.r: value {value} does not fit in 32 bits"):
        r.cp_write(0, value)
    assert r.cp_read(0) == 0
    r.cp_write(0, (1 << 32) - 1)
    assert r.cp_read(0) == 0xFFFFFFFF


def test_signed_register_two_complement(sw: V1Switch) -> None:
    rs = register(sw, "rs")
    rs.cp_write(0, -1)
    assert rs.cp_read(0) == 0xFFFF
    assert rs.read(0) == -1  # the data plane sees the signed value
    rs.cp_write(1, 0x8000)  # the unsigned bit string of -32768
    assert rs.cp_read(1) == 0x8000
    assert rs.read(1) == -32768
    rs.cp_write(1, -32768)
    assert rs.cp_read(1) == 0x8000
    rs.cp_write(1, 0x7FFF)
    assert rs.read(1) == 32767


@pytest.mark.parametrize("value", [0x10000, -32769, -0x10000])
def test_signed_register_width_errors(sw: V1Switch, value: int) -> None:
    with pytest.raises(ExternError, match="does not fit in 16 bits"):
        register(sw, "rs").cp_write(0, value)


def test_signed_register_in_the_program(sw: V1Switch) -> None:
    rs = register(sw, "rs")
    rs.cp_write(0, -2)
    fields = send(sw, OP_SREAD, idx=0)
    assert fields[5] == 0xFFFE  # int<16> -2 as bits
    assert fields[6] == 0xFF  # the program saw x < 0
    send(sw, OP_SWRITE, idx=1, sval=0x8001)
    assert rs.cp_read(1) == 0x8001
    assert rs.read(1) == -32767
    # decrementing -32768 wraps round to 32767
    rs.cp_write(0, -32768)
    send(sw, OP_SDEC, idx=0)
    assert rs.cp_read(0) == 0x7FFF
    send(sw, OP_SDEC, idx=1)
    assert rs.cp_read(1) == 0x8000
    fields = send(sw, OP_SREAD, idx=1)
    assert (fields[5], fields[6]) == (0x8000, 0xFF)


# ---------------------------------------------------------------------- counters
def test_counter_counts_packets_and_bytes(sw: V1Switch) -> None:
    c: Counter = sw.pipeline.counters["ingress.c"]
    assert (c.size, c.unit) == (4, "packets_and_bytes")
    send(sw, OP_COUNT, idx=1)
    send(sw, OP_COUNT, idx=1, payload=b"x" * 100)
    send(sw, OP_COUNT, idx=3)
    send(sw, OP_COUNT, idx=4)  # out of range: nothing counted
    assert c.cp_read(1) == (2, 2 * HEADER_SIZE + 100)
    assert c.cp_read(3) == (1, HEADER_SIZE)
    assert c.cp_read(0) == (0, 0)
    assert c.cp_read(2) == (0, 0)


def test_counter_control_plane(sw: V1Switch) -> None:
    c: Counter = sw.pipeline.counters["ingress.c"]
    c.cp_write(2, 1000, 64000)
    send(sw, OP_COUNT, idx=2)
    assert c.cp_read(2) == (1001, 64000 + HEADER_SIZE)
    with pytest.raises(ExternError, match=r"ingress.c: index 4 is out of range \(size 4\)"):
        c.cp_read(4)
    with pytest.raises(ExternError, match="index -1 is out of range"):
        c.cp_write(-1, 1, 1)
    with pytest.raises(ExternError, match="ingress.c: counter values cannot be negative"):
        c.cp_write(0, -1, 0)
    with pytest.raises(ExternError, match="counter values cannot be negative"):
        c.cp_write(0, 0, -5)
    assert c.cp_read(0) == (0, 0)
    c.reset()
    assert [c.cp_read(i) for i in range(4)] == [(0, 0)] * 4


# ---------------------------------------------------------------------- meters
def colours(sw: V1Switch, n: int, op: int = OP_METER, idx: int = 0, payload: bytes = b"") -> list:
    return [send(sw, op, idx=idx, payload=payload)[6] for _ in range(n)]


def test_unconfigured_meter_is_green(sw: V1Switch) -> None:
    assert colours(sw, 10) == [GREEN] * 10
    assert colours(sw, 10, op=OP_METER_BYTES, idx=1) == [GREEN] * 10


def test_packet_meter_colours(sw: V1Switch, clock: FakeClock) -> None:
    m: Meter = sw.pipeline.meters["ingress.m"]
    # committed 1 packet/s burst 2, peak 2 packets/s burst 4
    m.set_rates(0, [(1 / SECOND, 2), (2 / SECOND, 4)])
    assert m.get_rates(0) == [(1 / SECOND, 2), (2 / SECOND, 4)]
    assert colours(sw, 6) == [GREEN, GREEN, YELLOW, YELLOW, RED, RED]
    assert colours(sw, 3, idx=1) == [GREEN] * 3  # the other cell is unconfigured
    clock.now = SECOND  # +1 committed token, +2 peak tokens
    assert colours(sw, 4) == [GREEN, YELLOW, RED, RED]
    clock.now = 100 * SECOND  # refilled to the bursts, no more
    assert colours(sw, 6) == [GREEN, GREEN, YELLOW, YELLOW, RED, RED]


def test_meter_rates_are_per_cell_or_all(sw: V1Switch) -> None:
    m: Meter = sw.pipeline.meters["ingress.m"]
    m.set_all_rates([(0.0, 1), (0.0, 1)])
    assert colours(sw, 2, idx=0) == [GREEN, RED]
    assert colours(sw, 2, idx=1) == [GREEN, RED]
    m.set_rates(1, [(0.0, 0), (0.0, 2)])
    assert colours(sw, 3, idx=1) == [YELLOW, YELLOW, RED]


def test_byte_meter_counts_the_packet_length(sw: V1Switch) -> None:
    mb: Meter = sw.pipeline.meters["ingress.mb"]
    payload = bytes(100 - HEADER_SIZE)  # 100-byte packets
    mb.set_rates(0, [(0.0, 250), (0.0, 400)])
    out = colours(sw, 5, op=OP_METER_BYTES, payload=payload)
    assert out == [GREEN, GREEN, YELLOW, YELLOW, RED]
    # exactly the burst left: a 100-byte packet takes the last 100 tokens
    mb.set_rates(1, [(0.0, 100), (0.0, 199)])
    assert colours(sw, 2, op=OP_METER_BYTES, idx=1, payload=payload) == [GREEN, RED]


def test_meter_control_plane_errors(sw: V1Switch) -> None:
    m: Meter = sw.pipeline.meters["ingress.m"]
    with pytest.raises(ExternError, match=r"ingress.m: index 2 is out of range \(size 2\)"):
        m.set_rates(2, [(1.0, 1), (2.0, 2)])
    with pytest.raises(ExternError, match="ingress.m: expected 2 rates, got 1"):
        m.set_rates(0, [(1.0, 1)])
    with pytest.raises(ExternError, match="committed <= peak"):
        m.set_rates(0, [(2.0, 1), (1.0, 1)])
    with pytest.raises(ExternError, match="negative"):
        m.set_rates(0, [(-1.0, 1), (1.0, 1)])
    with pytest.raises(ExternError, match="expected 2 rates"):
        m.set_all_rates([])
    with pytest.raises(ExternError, match="index 5 is out of range"):
        m.get_rates(5)
    assert m.get_rates(0) == []  # refused requests leave the meter unconfigured
    assert colours(sw, 3) == [GREEN] * 3


# ---------------------------------------------------------------------- value sets
def test_value_set_api() -> None:
    vs = ValueSet("p.vs", 2, [8, 16])
    assert not vs.match((1, 2))
    vs.add([(1, 0xFF), (0x1234, 0xFFFF)])
    vs.add([(0x20, 0xF0), (0, 0)])
    assert vs.match((1, 0x1234))
    assert not vs.match((1, 0x1235))
    assert vs.match((0x2F, 0xBEEF))  # masked and wildcard fields
    assert not vs.match((0x30, 0xBEEF))
    with pytest.raises(ExternError, match=r"p.vs: value set is full \(2 members\)"):
        vs.add([(3, 0xFF), (3, 0xFFFF)])
    vs.clear()
    assert not vs.match((1, 0x1234))
    with pytest.raises(ExternError, match="p.vs: expected 2 fields, got 1"):
        vs.add([(1, 0xFF)])
    with pytest.raises(ExternError, match="expected 2 fields, got 3"):
        vs.add([(1, 0xFF), (1, 0xFF), (1, 0xFF)])
    assert vs.members == []


def test_value_set_member_value_is_masked() -> None:
    vs = ValueSet("p.vs", 4, [8])
    vs.add([(0xAB, 0xF0)])
    assert vs.members == [((0xA0, 0xF0),)]
    assert vs.match((0xA7,))


def test_value_set_refuses_values_wider_than_the_field() -> None:
    vs = ValueSet("p.vs", 4, [8])
    with pytest.raises(ExternError):
        vs.add([(0x1FF, 0xFFF)])


def test_parser_select_on_value_set_added_at_run_time(sw: V1Switch) -> None:
    kinds: ValueSet = sw.pipeline.value_sets["ParserImpl.kinds"]
    assert kinds.widths == [8]
    assert send(sw, 0, kind=9)[7] == 3  # empty set: never matches
    assert send(sw, 0, kind=5)[7] == 2
    kinds.add([(9, 0xFF)])
    assert send(sw, 0, kind=9)[7] == 1
    assert send(sw, 0, kind=8)[7] == 3
    kinds.add([(5, 0xFF)])  # the value set case comes first in the select
    assert send(sw, 0, kind=5)[7] == 1
    with pytest.raises(ExternError, match="full"):
        kinds.add([(6, 0xFF)])
    kinds.clear()
    assert send(sw, 0, kind=9)[7] == 3
    assert send(sw, 0, kind=5)[7] == 2


def test_parser_select_on_struct_value_set(sw: V1Switch) -> None:
    pairs: ValueSet = sw.pipeline.value_sets["ParserImpl.pairs"]
    assert send(sw, 0, kind=1, sub=0x1234)[7] == 3
    pairs.add([(1, 0xFF), (0x1234, 0xFFFF)])
    pairs.add([(2, 0xFF), (0x5600, 0xFF00)])
    assert send(sw, 0, kind=1, sub=0x1234)[7] == 4
    assert send(sw, 0, kind=1, sub=0x1235)[7] == 3
    assert send(sw, 0, kind=2, sub=0x56AB)[7] == 4
    assert send(sw, 0, kind=2, sub=0x57AB)[7] == 3
    assert send(sw, 0, kind=3, sub=0x1234)[7] == 3
