// meta_truncate: truncate(n) cuts the transmitted packet (after deparsing) to
// at most n bytes; the smallest of several calls wins; it works in ingress
// and in egress; a length above the packet size changes nothing.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> mode;
    bit<8> x;
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
        hdr.h.x = 0xEE;
        if (hdr.h.mode == 1) {
            truncate(6);
        } else if (hdr.h.mode == 2) {
            truncate(100);
        } else if (hdr.h.mode == 3) {
            truncate(12);
            truncate(4);
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.h.mode == 4) {
            truncate(3);
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
