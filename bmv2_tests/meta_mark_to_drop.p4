// meta_mark_to_drop: mark_to_drop(standard_metadata) in ingress drops the
// packet; a later egress_spec assignment undoes it; egress_spec = 511 drops
// on its own.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
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
    action drop() {
        mark_to_drop(sm);
    }
    apply {
        sm.egress_spec = 1;
        if (hdr.h.k == 1) {
            drop();
        } else if (hdr.h.k == 2) {
            mark_to_drop(sm);
            sm.egress_spec = 2;
        } else if (hdr.h.k == 3) {
            sm.egress_spec = 511;
        } else if (hdr.h.k == 4) {
            sm.egress_spec = 511;
            sm.egress_spec = 3;
        }
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
