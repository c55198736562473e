// arith_wide: fields wider than 64 bits (bit<128>) add, subtract, multiply,
// shift and compare exactly, with carries across the 64-bit boundary and
// wrap-around at 2^128.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<128> a;
    bit<128> b;
    bit<128> sum;
    bit<128> diff;
    bit<128> rdiff;
    bit<128> shl;
    bit<128> shr;
    bit<64>  hi;
    bit<8>   gt;
    bit<128> prod;
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
        hdr.h.sum = hdr.h.a + hdr.h.b;
        hdr.h.diff = hdr.h.a - hdr.h.b;
        hdr.h.rdiff = hdr.h.b - hdr.h.a;
        hdr.h.shl = hdr.h.a << 64;
        hdr.h.shr = hdr.h.a >> 64;
        hdr.h.hi = hdr.h.sum[127:64];
        hdr.h.gt = (hdr.h.a > hdr.h.b) ? 8w1 : 8w0;
        hdr.h.prod = hdr.h.a * hdr.h.b;
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
