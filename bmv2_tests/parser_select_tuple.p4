// parser_select_tuple: select on a tuple of two fields; cases are tried in
// order, `_` is a per-component wildcard, and the first matching case wins.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> path;   // written by ingress from meta.path
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
        transition select(hdr.h.a, hdr.h.b) {
            (1, 1): s11;
            (1, _): s1x;
            (_, 2): sx2;
            (3, 3): s33;
            default: accept;
        }
    }
    state s11 {
        meta.path = 1;
        transition accept;
    }
    state s1x {
        meta.path = 2;
        transition accept;
    }
    state sx2 {
        meta.path = 3;
        transition accept;
    }
    state s33 {
        meta.path = 4;
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
