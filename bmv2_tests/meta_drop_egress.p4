// meta_drop_egress: mark_to_drop in egress drops the packet at the end of
// egress; writing egress_spec again in egress undoes the drop but does not
// change the output port (egress_port is fixed once the packet is queued).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> spec_after;   // egress_spec right after mark_to_drop, low 8 bits
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
    apply {
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.k == 1) {
            mark_to_drop(sm);
        } else if (hdr.h.k == 2) {
            mark_to_drop(sm);
            hdr.h.spec_after = sm.egress_spec[7:0];
            sm.egress_spec = 7;
        }
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
