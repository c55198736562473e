"""Named arguments bind by name everywhere a call is lowered (issue 32).

One program written twice: with every call's arguments named, in an order other than the
parameters', and with the same arguments positional. The P4Info, the interpreter's generated
program and the native engine's C must be the same for both: then every pass that reads a
call's arguments (extern lowering, digests, field lists, P4Info) saw the same arguments.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import compile_file
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.native.cprogram import generate

# (named, positional) for each call; the program below has a slot {0}, {1}, ... for each
CALLS = [
    ("pkt.extract(hdr = hdr.h)", "pkt.extract(hdr.h)"),
    (
        "verify_checksum(checksum = hdr.h.csum, data = { hdr.h.a, hdr.h.b }, "
        "algo = HashAlgorithm.csum16, condition = hdr.h.isValid())",
        "verify_checksum(hdr.h.isValid(), { hdr.h.a, hdr.h.b }, hdr.h.csum, HashAlgorithm.csum16)",
    ),
    (
        "hash(max = 32w1000, data = { hdr.h.a, hdr.h.b }, base = 32w5, "
        "algo = HashAlgorithm.crc32, result = hdr.h.hsh)",
        "hash(hdr.h.hsh, HashAlgorithm.crc32, 32w5, { hdr.h.a, hdr.h.b }, 32w1000)",
    ),
    ("r.write(value = hdr.h.c, index = 2)", "r.write(2, hdr.h.c)"),
    ("r.read(index = 2, result = hdr.h.reg)", "r.read(hdr.h.reg, 2)"),
    ("random(hi = 8w9, result = hdr.h.rnd, lo = 8w3)", "random(hdr.h.rnd, 8w3, 8w9)"),
    ("digest(data = { hdr.h.a, hdr.h.b }, receiver = 1)", "digest(1, { hdr.h.a, hdr.h.b })"),
    ("cnt.count(index = 1)", "cnt.count(1)"),
    ("m.execute_meter(result = hdr.h.colour, index = 0)", "m.execute_meter(0, hdr.h.colour)"),
    (
        "clone_preserving_field_list(index = 8w1, session = 32w5, type = CloneType.I2E)",
        "clone_preserving_field_list(CloneType.I2E, 32w5, 8w1)",
    ),
    ("sub(y = 8w3, x = hdr.h.a)", "sub(hdr.h.a, 8w3)"),
    ("hdr.h.twice = twice(v = hdr.h.b)", "hdr.h.twice = twice(hdr.h.b)"),
    ("truncate(length = 32w64)", "truncate(32w64)"),
    ("mark_to_drop(standard_metadata = sm)", "mark_to_drop(sm)"),
    (
        "update_checksum(algo = HashAlgorithm.csum16, checksum = hdr.h.csum2, "
        "condition = true, data = { hdr.h.a, hdr.h.b, hdr.h.c })",
        "update_checksum(true, { hdr.h.a, hdr.h.b, hdr.h.c }, hdr.h.csum2, HashAlgorithm.csum16)",
    ),
    ("pkt.emit(hdr = hdr.h)", "pkt.emit(hdr.h)"),
]

PROGRAM = """
#include <core.p4>
#include <v1model.p4>

header h_t {{
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<16> csum;
    bit<16> csum2;
    bit<32> hsh;
    bit<16> reg;
    bit<8>  rnd;
    bit<8>  diff;
    bit<8>  twice;
    bit<2>  colour;
    bit<6>  pad;
}}
struct headers_t {{ h_t h; }}
struct meta_t {{ @field_list(1) bit<8> kept; }}

bit<8> twice(in bit<8> v) {{ return v + v; }}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ {0}; transition accept; }}
}}
control VC(inout headers_t hdr, inout meta_t meta) {{ apply {{ {1}; }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    register<bit<16>>({ctor_r}) r;
    counter({ctor_c}) cnt;
    meter(32w4, MeterType.packets) m;
    action sub(bit<8> x, bit<8> y) {{ hdr.h.diff = x - y; }}
    apply {{
        {2}; {3}; {4}; {5}; {6}; {7}; {8}; {9}; {10}; {11}; {12};
        if (hdr.h.a == 0xFF) {{ {13}; }}
        sm.egress_spec = 1;
    }}
}}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout headers_t hdr, inout meta_t meta) {{ apply {{ {14}; }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ {15}; }} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def _write(tmp: Path, named: bool) -> Path:
    calls = [n if named else p for n, p in CALLS]
    ctor = (
        {"ctor_r": "size = 4", "ctor_c": "type = CounterType.packets, size = 2"}
        if named
        else {"ctor_r": "4", "ctor_c": "2, CounterType.packets"}
    )
    path = tmp / ("named.p4" if named else "positional.p4")
    path.write_text(PROGRAM.format(*calls, **ctor))
    return path


@pytest.fixture(scope="module")
def programs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("named")
    return _write(tmp, True), _write(tmp, False)


def test_same_p4info(programs: tuple[Path, Path]) -> None:
    named, positional = (compile_file(p).p4info for p in programs)
    assert named == positional
    assert [d.preamble.name for d in named.digests] == ["digest_0"]


def test_same_interpreter_program_and_native_c(programs: tuple[Path, Path]) -> None:
    named, positional = (load_pipeline(p) for p in programs)
    assert named.source == positional.source
    assert generate(named).source == generate(positional).source
