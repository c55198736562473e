// parser_select_range: select cases with lo .. hi ranges (inclusive at both
// ends) match keys inside the range; cases are tried in order.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<8>  path;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    bit<8> path;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            1 .. 10: s1;
            5 .. 0x7F: s2;
            default: next;
        }
    }
    state next {
        transition select(hdr.h.w) {
            0x0100 .. 0x01FF: s3;
            default: accept;
        }
    }
    state s1 {
        meta.path = 1;
        transition accept;
    }
    state s2 {
        meta.path = 2;
        transition accept;
    }
    state s3 {
        meta.path = 3;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.path = meta.path;
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
