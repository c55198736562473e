"""Match-action tables of the interpreter, driven through small P4 programs.

Proves, by sending packets whose ingress writes a marker byte chosen by the action that ran:
exact, lpm (longest prefix wins, a /0 default route, exact and lpm keys together), ternary
(highest priority wins, the earlier entry on equal priorities, const entries in source
order, ``@priority`` on const entries: lowest wins), range and optional lookups; default
actions (set_default, const default_action refused); entry modify and delete; the
control-plane errors (``TableError`` naming the problem: duplicate entry, wrong match kind,
value too wide, prefix too long, argument too wide, wrong argument count, unknown action,
missing priority, @tableonly/@defaultonly, full table, const entries); ``hit``/``miss``/
``action_run`` as the program sees them; direct counters counting hits; and a keyless table
running its default action.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.interp.matches import Exact, Lpm, Match, Optional, Range, Ternary
from p4reduce.switch.interp.switch import V1Switch
from p4reduce.switch.interp.tables import Table, TableError

# header h_t: sel(8) a(8) b(16) addr(32) mark(8) aux(8) flag(8) -> 11 bytes
HEADER = "!BBHIBBB"

MISS = 0xEE  # the marker of the default action miss_mark()

TABLES = """
    action set_mark(bit<8> m) { hdr.h.mark = m; }
    action set_two(bit<8> m, bit<8> n) { hdr.h.mark = m; hdr.h.aux = n; }
    action miss_mark() { hdr.h.mark = 0xEE; }
    action only_table() { hdr.h.mark = 0x70; }
    action only_default() { hdr.h.mark = 0xD0; }

    direct_counter(CounterType.packets_and_bytes) dc;

    table t_exact {
        key = { hdr.h.a : exact; hdr.h.b : exact; }
        actions = { set_mark; set_two; miss_mark; @tableonly only_table;
                    @defaultonly only_default; }
        default_action = miss_mark();
        size = 4;
    }
    table t_lpm {
        key = { hdr.h.addr : lpm; }
        actions = { set_mark; miss_mark; }
        default_action = miss_mark();
    }
    table t_lpm_multi {
        key = { hdr.h.a : exact; hdr.h.addr : lpm; hdr.h.b : exact; }
        actions = { set_mark; miss_mark; }
        default_action = miss_mark();
    }
    table t_ternary {
        key = { hdr.h.a : ternary; hdr.h.b : exact; }
        actions = { set_mark; miss_mark; }
        default_action = miss_mark();
    }
    table t_range {
        key = { hdr.h.b : range; }
        actions = { set_mark; miss_mark; }
        default_action = miss_mark();
    }
    table t_optional {
        key = { hdr.h.a : optional; hdr.h.b : optional; }
        actions = { set_mark; miss_mark; }
        default_action = miss_mark();
    }
    table t_const_default {
        key = { hdr.h.a : exact; }
        actions = { set_mark; miss_mark; }
        const default_action = set_mark(0xCD);
    }
    table t_const_entries {
        key = { hdr.h.a : exact; }
        actions = { set_mark; miss_mark; }
        const entries = {
            1 : set_mark(0x11);
            2 : set_mark(0x22);
        }
        default_action = miss_mark();
    }
    table t_const_ternary {
        key = { hdr.h.a : ternary; }
        actions = { set_mark; miss_mark; }
        const entries = {
            0x10 &&& 0xF0 : set_mark(0x01);
            0x11 : set_mark(0x02);
            0x20 &&& 0xF0 : set_mark(0x03);
        }
        default_action = miss_mark();
    }
    table t_priority_annotation {
        key = { hdr.h.a : ternary; }
        actions = { set_mark; miss_mark; }
        const entries = {
            @priority(3) 0x10 &&& 0xF0 : set_mark(0x01);
            @priority(1) 0x11 : set_mark(0x02);
        }
        default_action = miss_mark();
    }
    table t_counted {
        key = { hdr.h.a : exact; }
        actions = { set_mark; miss_mark; }
        default_action = miss_mark();
        counters = dc;
    }
    table t_keyless {
        actions = { set_mark; }
        default_action = set_mark(0x42);
    }
"""

APPLY = """
        if (hdr.h.sel == 1) { t_exact.apply(); }
        else if (hdr.h.sel == 2) { t_lpm.apply(); }
        else if (hdr.h.sel == 3) { t_lpm_multi.apply(); }
        else if (hdr.h.sel == 4) { t_ternary.apply(); }
        else if (hdr.h.sel == 5) { t_range.apply(); }
        else if (hdr.h.sel == 6) { t_optional.apply(); }
        else if (hdr.h.sel == 7) { t_const_default.apply(); }
        else if (hdr.h.sel == 8) { t_const_entries.apply(); }
        else if (hdr.h.sel == 9) { t_const_ternary.apply(); }
        else if (hdr.h.sel == 10) { t_counted.apply(); }
        else if (hdr.h.sel == 11) { t_keyless.apply(); }
        else if (hdr.h.sel == 12) { t_priority_annotation.apply(); }
        else if (hdr.h.sel == 20) {
            if (t_exact.apply().hit) { hdr.h.flag = 1; } else { hdr.h.flag = 2; }
        } else if (hdr.h.sel == 21) {
            if (t_exact.apply().miss) { hdr.h.flag = 3; } else { hdr.h.flag = 4; }
        } else if (hdr.h.sel == 22) {
            switch (t_exact.apply().action_run) {
                set_mark: { hdr.h.flag = 5; }
                miss_mark: { hdr.h.flag = 6; }
                default: { hdr.h.flag = 7; }
            }
        }
        sm.egress_spec = 1;
"""


def v1model_program(header_fields: str, ingress_decls: str, ingress_apply: str) -> str:
    """A v1model program with one header h parsed and emitted, and the given ingress."""
    return f"""
#include <core.p4>
#include <v1model.p4>

header h_t {{
{header_fields}
}}
struct headers_t {{ h_t h; }}
struct meta_t {{ }}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control verifyChecksum(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{ingress_decls}
    apply {{
{ingress_apply}
    }}
}}
control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    apply {{ }}
}}
control computeChecksum(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control DeparserImpl(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
"""


FIELDS = """
    bit<8> sel;
    bit<8> a;
    bit<16> b;
    bit<32> addr;
    bit<8> mark;
    bit<8> aux;
    bit<8> flag;
"""


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory: pytest.TempPathFactory) -> Pipeline:
    path: Path = tmp_path_factory.mktemp("tables") / "tables.p4"
    path.write_text(v1model_program(FIELDS, TABLES, APPLY))
    return load_pipeline(path)


@pytest.fixture
def sw(pipeline: Pipeline) -> Iterator[V1Switch]:
    """A switch on the shared pipeline, its tables back to the program's initial state."""
    for t in pipeline.tables.values():
        t.clear()
        t.reset_default()
        for e in t.entries:
            e.packets = e.bytes = 0
    yield V1Switch(pipeline)


def send(sw: V1Switch, sel: int, a: int = 0, b: int = 0, addr: int = 0) -> tuple[int, int, int]:
    """Send one packet; return (mark, aux, flag) as the program left them."""
    out = sw.process(0, struct.pack(HEADER, sel, a, b, addr, 0, 0, 0))
    assert len(out) == 1
    port, data = out[0]
    assert port == 1
    fields = struct.unpack(HEADER, data)
    assert fields[:4] == (sel, a, b, addr)
    return fields[4], fields[5], fields[6]


def mark(sw: V1Switch, sel: int, a: int = 0, b: int = 0, addr: int = 0) -> int:
    return send(sw, sel, a, b, addr)[0]


def table(sw: V1Switch, name: str) -> Table:
    return sw.pipeline.tables[f"ingress.{name}"]


def ip(text: str) -> int:
    a, b, c, d = (int(x) for x in text.split("."))
    return a << 24 | b << 16 | c << 8 | d


# ---------------------------------------------------------------------- lookups
def test_control_plane_names(pipeline: Pipeline) -> None:
    assert "ingress.t_exact" in pipeline.tables
    assert "ingress.set_mark" in pipeline.tables["ingress.t_exact"].actions
    assert pipeline.direct_counters["ingress.dc"] is pipeline.tables["ingress.t_counted"]


def test_exact(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    t.add_entry([Exact(1), Exact(0x1234)], "ingress.set_mark", [0x11])
    t.add_entry([Exact(2), Exact(0x1234)], "ingress.set_two", [0x22, 0x33])
    assert send(sw, 1, a=1, b=0x1234) == (0x11, 0, 0)
    assert send(sw, 1, a=2, b=0x1234) == (0x22, 0x33, 0)
    assert mark(sw, 1, a=1, b=0x1235) == MISS
    assert mark(sw, 1, a=3, b=0x1234) == MISS


def test_lpm_longest_prefix_wins(sw: V1Switch) -> None:
    t = table(sw, "t_lpm")
    t.add_entry([Lpm(ip("10.0.0.0"), 8)], "ingress.set_mark", [8])
    t.add_entry([Lpm(ip("10.1.0.0"), 16)], "ingress.set_mark", [16])
    t.add_entry([Lpm(ip("10.1.2.0"), 24)], "ingress.set_mark", [24])
    t.add_entry([Lpm(ip("10.1.2.3"), 32)], "ingress.set_mark", [32])
    assert mark(sw, 2, addr=ip("10.1.2.3")) == 32
    assert mark(sw, 2, addr=ip("10.1.2.4")) == 24
    assert mark(sw, 2, addr=ip("10.1.3.4")) == 16
    assert mark(sw, 2, addr=ip("10.2.3.4")) == 8
    assert mark(sw, 2, addr=ip("11.0.0.0")) == MISS


def test_lpm_value_bits_beyond_the_prefix_are_ignored(sw: V1Switch) -> None:
    t = table(sw, "t_lpm")
    t.add_entry([Lpm(ip("192.168.77.99"), 16)], "ingress.set_mark", [1])
    assert t.entries[0].matches == (Lpm(ip("192.168.0.0"), 16),)
    assert mark(sw, 2, addr=ip("192.168.1.1")) == 1
    # the same prefix written differently is the same entry
    with pytest.raises(TableError, match="already exists"):
        t.add_entry([Lpm(ip("192.168.0.0"), 16)], "ingress.set_mark", [2])


def test_lpm_default_route(sw: V1Switch) -> None:
    t = table(sw, "t_lpm")
    t.add_entry([Lpm(0, 0)], "ingress.set_mark", [0])
    t.add_entry([Lpm(ip("172.16.0.0"), 12)], "ingress.set_mark", [12])
    assert mark(sw, 2, addr=ip("172.20.1.1")) == 12
    assert mark(sw, 2, addr=ip("172.32.0.0")) == 0
    assert mark(sw, 2, addr=ip("255.255.255.255")) == 0
    assert mark(sw, 2, addr=0) == 0


def test_lpm_with_exact_keys(sw: V1Switch) -> None:
    t = table(sw, "t_lpm_multi")
    assert t.mode == "lpm"
    t.add_entry([Exact(1), Lpm(ip("10.0.0.0"), 8), Exact(7)], "ingress.set_mark", [1])
    t.add_entry([Exact(1), Lpm(ip("10.9.0.0"), 16), Exact(7)], "ingress.set_mark", [2])
    t.add_entry([Exact(2), Lpm(ip("10.9.9.0"), 24), Exact(7)], "ingress.set_mark", [3])
    t.add_entry([Exact(1), Lpm(0, 0), Exact(8)], "ingress.set_mark", [4])
    assert mark(sw, 3, a=1, b=7, addr=ip("10.9.9.9")) == 2  # /24 is for a=2
    assert mark(sw, 3, a=1, b=7, addr=ip("10.8.9.9")) == 1
    assert mark(sw, 3, a=2, b=7, addr=ip("10.9.9.9")) == 3
    assert mark(sw, 3, a=2, b=7, addr=ip("10.9.8.9")) == MISS
    assert mark(sw, 3, a=1, b=8, addr=ip("99.1.2.3")) == 4
    assert mark(sw, 3, a=1, b=9, addr=ip("10.9.9.9")) == MISS


def test_ternary_highest_priority_wins(sw: V1Switch) -> None:
    t = table(sw, "t_ternary")
    t.add_entry([Ternary(0x00, 0x00), Exact(5)], "ingress.set_mark", [1], priority=1)
    t.add_entry([Ternary(0x10, 0xF0), Exact(5)], "ingress.set_mark", [2], priority=10)
    t.add_entry([Ternary(0x12, 0xFF), Exact(5)], "ingress.set_mark", [3], priority=5)
    assert mark(sw, 4, a=0x12, b=5) == 2  # 10 beats 5 although /8 is more specific
    assert mark(sw, 4, a=0x13, b=5) == 2
    assert mark(sw, 4, a=0x22, b=5) == 1
    assert mark(sw, 4, a=0x12, b=6) == MISS
    t.add_entry([Ternary(0x12, 0xFF), Exact(5)], "ingress.set_mark", [4], priority=20)
    assert mark(sw, 4, a=0x12, b=5) == 4


def test_ternary_equal_priority_earlier_entry_wins(sw: V1Switch) -> None:
    t = table(sw, "t_ternary")
    t.add_entry([Ternary(0x01, 0x0F), Exact(5)], "ingress.set_mark", [1], priority=3)
    t.add_entry([Ternary(0x10, 0xF0), Exact(5)], "ingress.set_mark", [2], priority=3)
    assert mark(sw, 4, a=0x11, b=5) == 1
    # after deleting and re-adding the first entry, it is the later one
    t.delete_entry([Ternary(0x01, 0x0F), Exact(5)], 3)
    t.add_entry([Ternary(0x01, 0x0F), Exact(5)], "ingress.set_mark", [1], priority=3)
    assert mark(sw, 4, a=0x11, b=5) == 2


def test_ternary_value_is_masked_and_priority_is_part_of_the_key(sw: V1Switch) -> None:
    t = table(sw, "t_ternary")
    e = t.add_entry([Ternary(0xAB, 0xF0), Exact(1)], "ingress.set_mark", [1], priority=1)
    assert e.matches[0] == Ternary(0xA0, 0xF0)
    # same match, another priority: a different entry
    t.add_entry([Ternary(0xA0, 0xF0), Exact(1)], "ingress.set_mark", [2], priority=2)
    with pytest.raises(TableError, match="already exists"):
        t.add_entry([Ternary(0xA0, 0xF0), Exact(1)], "ingress.set_mark", [3], priority=2)
    with pytest.raises(TableError, match="need a priority"):
        t.add_entry([Ternary(0xA0, 0xF0), Exact(1)], "ingress.set_mark", [3])
    assert mark(sw, 4, a=0xA5, b=1) == 2


def test_const_ternary_entries_earlier_wins(sw: V1Switch) -> None:
    assert mark(sw, 9, a=0x11) == 0x01  # matches entries 1 and 2: the first one
    assert mark(sw, 9, a=0x1F) == 0x01
    assert mark(sw, 9, a=0x25) == 0x03
    assert mark(sw, 9, a=0x30) == MISS


def test_const_entries_priority_annotation_lowest_wins(sw: V1Switch) -> None:
    assert mark(sw, 12, a=0x11) == 0x02  # @priority(1) beats @priority(3)
    assert mark(sw, 12, a=0x12) == 0x01
    assert mark(sw, 12, a=0x21) == MISS


def test_range(sw: V1Switch) -> None:
    t = table(sw, "t_range")
    t.add_entry([Range(100, 199)], "ingress.set_mark", [1], priority=1)
    t.add_entry([Range(150, 160)], "ingress.set_mark", [2], priority=2)
    t.add_entry([Range(0xFFFF, 0xFFFF)], "ingress.set_mark", [3], priority=1)
    assert mark(sw, 5, b=99) == MISS
    assert mark(sw, 5, b=100) == 1
    assert mark(sw, 5, b=149) == 1
    assert mark(sw, 5, b=150) == 2
    assert mark(sw, 5, b=160) == 2
    assert mark(sw, 5, b=161) == 1
    assert mark(sw, 5, b=199) == 1
    assert mark(sw, 5, b=200) == MISS
    assert mark(sw, 5, b=0xFFFF) == 3


def test_optional(sw: V1Switch) -> None:
    t = table(sw, "t_optional")
    t.add_entry([Optional(1), Optional(None)], "ingress.set_mark", [1], priority=1)
    t.add_entry([Optional(None), Optional(500)], "ingress.set_mark", [2], priority=2)
    t.add_entry([Optional(None), Optional(None)], "ingress.set_mark", [3], priority=0)
    assert mark(sw, 6, a=1, b=7) == 1
    assert mark(sw, 6, a=1, b=500) == 2
    assert mark(sw, 6, a=9, b=500) == 2
    assert mark(sw, 6, a=9, b=7) == 3


def test_keyless_table_runs_its_default_action(sw: V1Switch) -> None:
    t = table(sw, "t_keyless")
    assert t.keys == []
    assert mark(sw, 11) == 0x42
    t.set_default("ingress.set_mark", [0x43])
    assert mark(sw, 11) == 0x43


# ---------------------------------------------------------------------- default actions
def test_set_default(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    assert mark(sw, 1, a=9) == MISS
    t.set_default("ingress.set_mark", [0x5A])
    assert mark(sw, 1, a=9) == 0x5A
    t.set_default("ingress.set_two", [1, 2])
    assert send(sw, 1, a=9) == (1, 2, 0)
    t.reset_default()
    assert mark(sw, 1, a=9) == MISS


def test_const_default_action_cannot_change(sw: V1Switch) -> None:
    t = table(sw, "t_const_default")
    assert mark(sw, 7, a=1) == 0xCD
    with pytest.raises(TableError, match="const"):
        t.set_default("ingress.miss_mark", [])
    with pytest.raises(TableError, match="const"):
        t.set_default("ingress.set_mark", [0xCD])
    assert mark(sw, 7, a=1) == 0xCD
    # entries still work
    t.add_entry([Exact(1)], "ingress.set_mark", [1])
    assert mark(sw, 7, a=1) == 1
    assert mark(sw, 7, a=2) == 0xCD


def test_set_default_errors(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    with pytest.raises(TableError, match="not one of the table's actions"):
        t.set_default("ingress.nope", [])
    with pytest.raises(TableError, match="takes 1 arguments, got 0"):
        t.set_default("ingress.set_mark", [])
    with pytest.raises(TableError, match="does not fit in 8 bits"):
        t.set_default("ingress.set_mark", [256])
    assert mark(sw, 1, a=9) == MISS  # unchanged by the refused requests


# ---------------------------------------------------------------------- modify and delete
def test_modify_entry(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    t.add_entry([Exact(1), Exact(2)], "ingress.set_mark", [1])
    assert mark(sw, 1, a=1, b=2) == 1
    t.modify_entry([Exact(1), Exact(2)], None, "ingress.set_two", [7, 8])
    assert send(sw, 1, a=1, b=2) == (7, 8, 0)
    with pytest.raises(TableError, match="no such entry"):
        t.modify_entry([Exact(1), Exact(3)], None, "ingress.set_mark", [1])
    with pytest.raises(TableError, match="does not fit"):
        t.modify_entry([Exact(1), Exact(2)], None, "ingress.set_mark", [300])
    assert send(sw, 1, a=1, b=2) == (7, 8, 0)


def test_modify_ternary_entry_needs_its_priority(sw: V1Switch) -> None:
    t = table(sw, "t_ternary")
    t.add_entry([Ternary(1, 0xFF), Exact(1)], "ingress.set_mark", [1], priority=4)
    with pytest.raises(TableError, match="no such entry"):
        t.modify_entry([Ternary(1, 0xFF), Exact(1)], 5, "ingress.set_mark", [2])
    t.modify_entry([Ternary(1, 0xFF), Exact(1)], 4, "ingress.set_mark", [2])
    assert mark(sw, 4, a=1, b=1) == 2


def test_delete_entry(sw: V1Switch) -> None:
    t = table(sw, "t_lpm")
    t.add_entry([Lpm(ip("10.0.0.0"), 8)], "ingress.set_mark", [8])
    t.add_entry([Lpm(ip("10.1.0.0"), 16)], "ingress.set_mark", [16])
    assert mark(sw, 2, addr=ip("10.1.1.1")) == 16
    t.delete_entry([Lpm(ip("10.1.0.0"), 16)], None)
    assert mark(sw, 2, addr=ip("10.1.1.1")) == 8
    with pytest.raises(TableError, match="no such entry"):
        t.delete_entry([Lpm(ip("10.1.0.0"), 16)], None)
    t.delete_entry([Lpm(ip("10.0.0.0"), 8)], None)
    assert mark(sw, 2, addr=ip("10.1.1.1")) == MISS
    assert t.entries == []
    # the deleted match can be added again
    t.add_entry([Lpm(ip("10.1.0.0"), 16)], "ingress.set_mark", [17])
    assert mark(sw, 2, addr=ip("10.1.1.1")) == 17


def test_delete_from_scan_and_exact_tables(sw: V1Switch) -> None:
    t = table(sw, "t_range")
    t.add_entry([Range(0, 10)], "ingress.set_mark", [1], priority=1)
    t.add_entry([Range(5, 20)], "ingress.set_mark", [2], priority=2)
    t.delete_entry([Range(5, 20)], 2)
    assert mark(sw, 5, b=7) == 1
    assert mark(sw, 5, b=15) == MISS
    e = table(sw, "t_exact")
    e.add_entry([Exact(1), Exact(1)], "ingress.set_mark", [1])
    e.delete_entry([Exact(1), Exact(1)], None)
    assert mark(sw, 1, a=1, b=1) == MISS


def test_clear_keeps_const_entries(sw: V1Switch) -> None:
    t = table(sw, "t_const_entries")
    t.add_entry([Exact(3)], "ingress.set_mark", [0x33])
    assert mark(sw, 8, a=3) == 0x33
    t.clear()
    assert mark(sw, 8, a=3) == MISS
    assert mark(sw, 8, a=1) == 0x11
    assert mark(sw, 8, a=2) == 0x22


def test_const_entries_cannot_be_modified_or_deleted(sw: V1Switch) -> None:
    t = table(sw, "t_const_entries")
    assert t.has_const_entries
    assert all(e.is_const for e in t.entries)
    with pytest.raises(TableError, match="const entries cannot be modified"):
        t.modify_entry([Exact(1)], None, "ingress.set_mark", [0x99])
    with pytest.raises(TableError, match="const entries cannot be deleted"):
        t.delete_entry([Exact(2)], None)
    with pytest.raises(TableError, match="already exists"):
        t.add_entry([Exact(1)], "ingress.set_mark", [0x99])
    assert mark(sw, 8, a=1) == 0x11
    assert mark(sw, 8, a=2) == 0x22


# ---------------------------------------------------------------------- control-plane errors
def test_duplicate_entry_refused(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    t.add_entry([Exact(1), Exact(1)], "ingress.set_mark", [1])
    with pytest.raises(TableError, match="same match already exists"):
        t.add_entry([Exact(1), Exact(1)], "ingress.set_mark", [2])
    assert len(t.entries) == 1
    assert mark(sw, 1, a=1, b=1) == 1


@pytest.mark.parametrize(
    ("name", "matches", "message"),
    [
        ("t_exact", [Lpm(1, 8), Exact(1)], "key hdr.h.a is exact, got a Lpm match"),
        ("t_exact", [Exact(1), Ternary(1, 1)], "key hdr.h.b is exact, got a Ternary match"),
        ("t_lpm", [Exact(1)], "key hdr.h.addr is lpm, got a Exact match"),
        ("t_range", [Optional(3)], "key hdr.h.b is range, got a Optional match"),
        ("t_exact", [Exact(256), Exact(1)], "match value for key hdr.h.a is out of range"),
        ("t_exact", [Exact(-1), Exact(1)], "match value for key hdr.h.a is out of range"),
        ("t_exact", [Exact(1), Exact(1 << 16)], "match value for key hdr.h.b is out of range"),
        ("t_lpm", [Lpm(0, 33)], "match value for key hdr.h.addr is out of range"),
        ("t_lpm", [Lpm(1 << 32, 8)], "match value for key hdr.h.addr is out of range"),
        ("t_ternary", [Ternary(1, 0x100), Exact(1)], "key hdr.h.a is out of range"),
        ("t_range", [Range(10, 5)], "match value for key hdr.h.b is out of range"),
        ("t_range", [Range(0, 1 << 16)], "match value for key hdr.h.b is out of range"),
        ("t_optional", [Optional(256), Optional(None)], "key hdr.h.a is out of range"),
        ("t_exact", [Exact(1)], "expected 2 match fields, got 1"),
    ],
)
def test_bad_matches_refused(sw: V1Switch, name: str, matches: list[Match], message: str) -> None:
    t = table(sw, name)
    prio = 1 if t.needs_priority else None
    with pytest.raises(TableError, match=message) as info:
        t.add_entry(matches, "ingress.set_mark", [1], priority=prio)
    assert str(info.value).startswith(f"ingress.{name}: ")
    assert t.entries == []


@pytest.mark.parametrize(
    ("action", "args", "message"),
    [
        ("ingress.set_mark", [256], "set_mark argument m=256 does not fit in 8 bits"),
        ("ingress.set_mark", [-1], "argument m=-1 does not fit in 8 bits"),
        ("ingress.set_two", [1, 0x100], "set_two argument n=256 does not fit in 8 bits"),
        ("ingress.set_mark", [], "action ingress.set_mark takes 1 arguments, got 0"),
        ("ingress.set_mark", [1, 2], "action ingress.set_mark takes 1 arguments, got 2"),
        ("ingress.miss_mark", [1], "action ingress.miss_mark takes 0 arguments, got 1"),
        ("ingress.unknown", [], "action ingress.unknown is not one of the table's actions"),
        ("set_mark", [1], "action set_mark is not one of the table's actions"),
        ("ingress.only_default", [], r"can only be the default action \(@defaultonly\)"),
    ],
)
def test_bad_actions_refused(sw: V1Switch, action: str, args: list[int], message: str) -> None:
    t = table(sw, "t_exact")
    with pytest.raises(TableError, match=message):
        t.add_entry([Exact(1), Exact(1)], action, args)
    assert t.entries == []
    assert mark(sw, 1, a=1, b=1) == MISS


def test_tableonly_and_defaultonly(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    assert t.actions["ingress.only_table"].scope == "TABLE_ONLY"
    assert t.actions["ingress.only_default"].scope == "DEFAULT_ONLY"
    with pytest.raises(TableError, match=r"cannot be the default action \(@tableonly\)"):
        t.set_default("ingress.only_table", [])
    with pytest.raises(TableError, match=r"only be the default action \(@defaultonly\)"):
        t.add_entry([Exact(1), Exact(1)], "ingress.only_default", [])
    t.add_entry([Exact(1), Exact(1)], "ingress.only_table", [])
    t.set_default("ingress.only_default", [])
    assert mark(sw, 1, a=1, b=1) == 0x70
    assert mark(sw, 1, a=2, b=1) == 0xD0
    with pytest.raises(TableError, match="@defaultonly"):
        t.modify_entry([Exact(1), Exact(1)], None, "ingress.only_default", [])


def test_table_size_limit(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    assert t.size == 4
    for i in range(4):
        t.add_entry([Exact(i), Exact(0)], "ingress.set_mark", [i])
    with pytest.raises(TableError, match=r"table is full \(4 entries\)"):
        t.add_entry([Exact(4), Exact(0)], "ingress.set_mark", [4])
    assert mark(sw, 1, a=4) == MISS
    t.delete_entry([Exact(0), Exact(0)], None)
    t.add_entry([Exact(4), Exact(0)], "ingress.set_mark", [4])
    assert mark(sw, 1, a=4) == 4


def test_default_size_is_1024(sw: V1Switch) -> None:
    assert table(sw, "t_lpm").size == 1024


# ---------------------------------------------------------------------- what the program sees
def test_hit_and_miss(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    t.add_entry([Exact(1), Exact(1)], "ingress.set_mark", [1])
    assert send(sw, 20, a=1, b=1) == (1, 0, 1)
    assert send(sw, 20, a=2, b=1) == (MISS, 0, 2)
    assert send(sw, 21, a=1, b=1) == (1, 0, 4)
    assert send(sw, 21, a=2, b=1) == (MISS, 0, 3)
    # a hit on an entry whose action is the default action is still a hit
    t.add_entry([Exact(3), Exact(1)], "ingress.miss_mark", [])
    assert send(sw, 20, a=3, b=1) == (MISS, 0, 1)


def test_action_run(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    t.add_entry([Exact(1), Exact(1)], "ingress.set_mark", [1])
    t.add_entry([Exact(2), Exact(1)], "ingress.set_two", [2, 3])
    t.add_entry([Exact(3), Exact(1)], "ingress.miss_mark", [])
    assert send(sw, 22, a=1, b=1) == (1, 0, 5)
    assert send(sw, 22, a=2, b=1) == (2, 3, 7)  # no label: the default branch
    assert send(sw, 22, a=3, b=1) == (MISS, 0, 6)
    assert send(sw, 22, a=4, b=1) == (MISS, 0, 6)  # a miss runs the default action
    t.set_default("ingress.set_mark", [9])
    assert send(sw, 22, a=4, b=1) == (9, 0, 5)


# ---------------------------------------------------------------------- direct counters
def test_direct_counter_counts_hits(sw: V1Switch) -> None:
    t = table(sw, "t_counted")
    e1 = t.add_entry([Exact(1)], "ingress.set_mark", [1])
    e2 = t.add_entry([Exact(2)], "ingress.set_mark", [2])
    for _ in range(3):
        assert mark(sw, 10, a=1) == 1
    assert mark(sw, 10, a=2) == 2
    assert mark(sw, 10, a=3) == MISS  # misses are not counted anywhere
    size = struct.calcsize(HEADER)
    assert (e1.packets, e1.bytes) == (3, 3 * size)
    assert (e2.packets, e2.bytes) == (1, size)
    # the packet length is the received length, payload included
    sw.process(0, struct.pack(HEADER, 10, 2, 0, 0, 0, 0, 0) + b"\x00" * 89)
    assert (e2.packets, e2.bytes) == (2, 2 * size + 89)


def test_tables_without_direct_counter_do_not_count(sw: V1Switch) -> None:
    t = table(sw, "t_exact")
    e = t.add_entry([Exact(1), Exact(1)], "ingress.set_mark", [1])
    mark(sw, 1, a=1, b=1)
    assert t.direct_counter is None
    assert (e.packets, e.bytes) == (0, 0)
