// table_default_action: on a miss the default action runs with its declared
// arguments; a `const default_action` stays; a non-const default_action can be
// replaced with STF setdefault (table_default_action_set.stf, through a
// wrapper that includes this file).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> v1;
    bit<8> v2;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set1(bit<8> v) {
        hdr.h.v1 = v;
    }
    action set2(bit<8> v) {
        hdr.h.v2 = v;
    }
    action set2_plus(bit<8> v) {
        hdr.h.v2 = v + 0x10;
    }
    table t1 {
        key = {
            hdr.h.a : exact;
        }
        actions = { set1; }
        const default_action = set1(0x77);
    }
    table t2 {
        key = {
            hdr.h.a : exact;
        }
        actions = { set2; set2_plus; }
        default_action = set2(0x01);
    }
    apply {
        t1.apply();
        t2.apply();
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
