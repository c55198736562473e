// parser_select_field: select on one header field picks the next state by
// exact value, falls back to default, and the chosen state's extract decides
// which headers are valid.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> kind;
    bit<8> seen;    // ingress writes 0x0A / 0x0B / 0x00
}

header a_t {
    bit<16> x;
}

header b_t {
    bit<32> y;
}

struct headers_t {
    h_t h;
    a_t a;
    b_t b;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            1: parse_a;
            2: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.seen = 0;
        if (hdr.a.isValid()) {
            hdr.a.x = hdr.a.x + 1;
            hdr.h.seen = 0x0A;
        }
        if (hdr.b.isValid()) {
            hdr.b.y = ~hdr.b.y;
            hdr.h.seen = 0x0B;
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
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
