// table_const_overlap: const entries whose keys overlap (ranges, single-value
// ranges, ternary masks, `_`) match in the order written: p4c gives them
// priorities in that order and BMv2 takes the entry of highest priority; a
// switch on action_run follows the action the winning entry ran.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> r1;   // t1's action data (+0x10 when t3 ran s3)
    bit<8> r2;   // t2's action data (+0x20 when t3 ran other)
    bit<8> r3;   // t3's action data (EE: other)
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
    action other() { hdr.h.r3 = 0xEE; }
    table t1 {
        key = { hdr.h.a : range; }
        actions = { s1; }
        const entries = {
            8w0x10 .. 8w0x20 : s1(1);
            8w0x15 .. 8w0x15 : s1(2);
            8w0x00 .. 8w0x40 : s1(3);
            8w0x30 .. 8w0x50 : s1(4);
        }
        default_action = s1(0xFF);
    }
    table t2 {
        key = { hdr.h.a : ternary; hdr.h.b : range; }
        actions = { s2; }
        const entries = {
            (8w0x10 &&& 8w0xF0, 8w0 .. 8w0x7F) : s2(1);
            (8w0x15, _) : s2(2);
            (_, 8w0x10 .. 8w0x20) : s2(3);
            (8w0x30 &&& 8w0x30, 8w0x05 .. 8w0x05) : s2(4);
            (_, _) : s2(5);
        }
        default_action = s2(0xFF);
    }
    table t3 {
        key = { hdr.h.b : ternary; }
        actions = { s3; other; }
        const entries = {
            8w0x01 &&& 8w0x01 : s3(1);
            8w0x02 &&& 8w0x02 : other();
            8w0x04 &&& 8w0x04 : s3(3);
        }
        default_action = s3(0xFF);
    }
    apply {
        t1.apply();
        t2.apply();
        switch (t3.apply().action_run) {
            s3: { hdr.h.r1 = hdr.h.r1 + 8w0x10; }
            other: { hdr.h.r2 = hdr.h.r2 + 8w0x20; }
        }
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
