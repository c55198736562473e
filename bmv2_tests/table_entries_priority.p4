// table_entries_priority: `entries` (not const) with explicit priorities
// (`priority = N :`) on overlapping range and ternary keys: the entry of the
// largest priority wins, whatever order the entries are written in (p4c sorts
// them for BMv2 and warns that they are out of order); with
// `largest_priority_wins = false` the smallest priority wins.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> r1;   // t1's action data (FF: miss)
    bit<8> r2;   // t2's action data (FF: miss)
    bit<8> r3;   // t3's action data (FF: miss)
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action s1(bit<8> v) { hdr.h.r1 = v; }
    action s2(bit<8> v) { hdr.h.r2 = v; }
    action s3(bit<8> v) { hdr.h.r3 = v; }
    table t1 {
        key = { hdr.h.a : range; }
        actions = { s1; }
        entries = {
            priority = 10 : 8w0x10 .. 8w0x20 : s1(1);
            priority = 20 : 8w0x15 .. 8w0x15 : s1(2);
            priority = 5 : 8w0x00 .. 8w0x40 : s1(3);
            priority = 30 : 8w0x30 .. 8w0x50 : s1(4);
        }
        default_action = s1(0xFF);
    }
    table t2 {
        key = { hdr.h.a : ternary; hdr.h.b : ternary; }
        actions = { s2; }
        entries = {
            priority = 1 : (_, _) : s2(1);
            priority = 3 : (8w0x10 &&& 8w0xF0, _) : s2(3);
            priority = 2 : (_, 8w0x01 &&& 8w0x01) : s2(2);
        }
        default_action = s2(0xFF);
    }
    table t3 {
        key = { hdr.h.a : range; }
        actions = { s3; }
        entries = {
            priority = 10 : 8w0x10 .. 8w0x20 : s3(1);
            priority = 20 : 8w0x15 .. 8w0x15 : s3(2);
            priority = 5 : 8w0x00 .. 8w0x40 : s3(3);
            priority = 30 : 8w0x30 .. 8w0x50 : s3(4);
        }
        default_action = s3(0xFF);
        largest_priority_wins = false;
    }
    apply {
        t1.apply();
        t2.apply();
        t3.apply();
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
