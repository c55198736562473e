// parser_select_overlap: when a key falls in several cases of a select, the
// FIRST matching case wins (as on BMv2), whatever mix of ranges, single values,
// masks and `_` the cases are: one key, a tuple of keys with ranges, a signed
// key, a 72-bit key.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<16> w;
    bit<4>  n1;
    bit<4>  n2;
    int<8>  s;
    bit<72> big;
    bit<8>  path;   // the case start took (0: `_`)
    bit<8>  path2;  // the case t took (0: default)
    bit<8>  path3;  // the case u took (0: default)
    bit<8>  path4;  // the case v took (0: default)
}

struct headers_t {
    h_t h;
}

struct meta_t {
    bit<8> path;
    bit<8> path2;
    bit<8> path3;
    bit<8> path4;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.a) {
            8w0x10 .. 8w0x20: s1;
            8w0x15: s2;
            8w0x30 &&& 8w0xF0: s3;
            8w0x35: s2;
            8w0x00 .. 8w0x40: s4;
            8w0x41: s1;
            _: t;
        }
    }
    state s1 { meta.path = 1; transition t; }
    state s2 { meta.path = 2; transition t; }
    state s3 { meta.path = 3; transition t; }
    state s4 { meta.path = 4; transition t; }
    state t {
        transition select(hdr.h.w, hdr.h.n1) {
            (16w0x0100 .. 16w0x01FF, 4w0x1 .. 4w0x8): t1;
            (16w0x0150, _): t2;
            (_, 4w0x5): t3;
            (16w0x0100 &&& 16w0xFF00, 4w0 .. 4w0xF): t4;
            (16w0x0200 .. 16w0x0300, 4w3): t1;
            default: u;
        }
    }
    state t1 { meta.path2 = 1; transition u; }
    state t2 { meta.path2 = 2; transition u; }
    state t3 { meta.path2 = 3; transition u; }
    state t4 { meta.path2 = 4; transition u; }
    state u {
        transition select(hdr.h.s) {
            -8s5 .. 8s5: u1;
            -8s20 .. -8s10: u2;
            8s10 .. 8s20: u3;
            -8s128 .. -8s1: u2;
            default: v;
        }
    }
    state u1 { meta.path3 = 1; transition v; }
    state u2 { meta.path3 = 2; transition v; }
    state u3 { meta.path3 = 3; transition v; }
    state v {
        transition select(hdr.h.big) {
            72w0x010000000000000000 .. 72w0x01FFFFFFFFFFFFFFFF: v1;
            72w0x010000000000000005: v2;
            72w0x020000000000000000 &&& 72w0xFF0000000000000000: v3;
            72w0x020000000000000001: v2;
            default: accept;
        }
    }
    state v1 { meta.path4 = 1; transition accept; }
    state v2 { meta.path4 = 2; transition accept; }
    state v3 { meta.path4 = 3; transition accept; }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.path = meta.path;
        hdr.h.path2 = meta.path2;
        hdr.h.path3 = meta.path3;
        hdr.h.path4 = meta.path4;
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
