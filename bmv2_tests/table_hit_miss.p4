// table_hit_miss: t.apply().hit is true only when an entry matched and
// .miss only when none did, even if the default action is a real action.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> r1;    // 1 = t1 hit, 2 = t1 miss
    bit<8> r2;    // 3 = t2 miss, 4 = t2 hit
    bit<8> d;     // written by t1's default action
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
    action mark() {
        hdr.h.d = 0x99;
    }
    table t1 {
        key = {
            hdr.h.a : exact;
        }
        actions = { NoAction; mark; }
        default_action = mark();
    }
    table t2 {
        key = {
            hdr.h.a : exact;
        }
        actions = { NoAction; }
        default_action = NoAction();
    }
    apply {
        if (t1.apply().hit) {
            hdr.h.r1 = 1;
        } else {
            hdr.h.r1 = 2;
        }
        if (t2.apply().miss) {
            hdr.h.r2 = 3;
        } else {
            hdr.h.r2 = 4;
        }
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
