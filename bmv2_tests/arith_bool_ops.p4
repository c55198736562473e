// arith_bool_ops: &&, ||, !, the ?: operator, bitwise & | ^ ~, bool
// locals, and a function returning the larger of two values.
#include <core.p4>
#include <v1model.p4>

bit<8> max8(in bit<8> x, in bit<8> y) {
    return x > y ? x : y;
}

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> r_and;
    bit<8> r_or;
    bit<8> r_not;
    bit<8> r_max;
    bit<8> band;
    bit<8> bor;
    bit<8> bxor;
    bit<8> bnot;
    bit<8> r_local;
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
    apply {
        hdr.h.r_and = (hdr.h.a > 5 && hdr.h.b < 3) ? 8w1 : 8w0;
        hdr.h.r_or = (hdr.h.a == 0 || hdr.h.b == 0) ? 8w1 : 8w0;
        hdr.h.r_not = (!(hdr.h.a == hdr.h.b)) ? 8w1 : 8w0;
        hdr.h.r_max = max8(hdr.h.a, hdr.h.b);
        hdr.h.band = hdr.h.a & hdr.h.b;
        hdr.h.bor = hdr.h.a | hdr.h.b;
        hdr.h.bxor = hdr.h.a ^ hdr.h.b;
        hdr.h.bnot = ~hdr.h.a;
        bool bigger = hdr.h.a > hdr.h.b;
        bool b_zero = hdr.h.b == 0;
        if (bigger && !b_zero) {
            hdr.h.r_local = 1;
        } else {
            hdr.h.r_local = 0;
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
