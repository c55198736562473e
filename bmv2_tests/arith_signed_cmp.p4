// arith_signed_cmp: <, <=, >, >=, ==, != on int<W> compare signed values
// (-5 < 3), while the same bits cast to bit<W> compare unsigned (FB > 03).
#include <core.p4>
#include <v1model.p4>

header h_t {
    int<8>  a;
    int<8>  b;
    int<8>  c;
    int<8>  d;
    int<16> e;
    int<16> f;
    bit<8>  r1;
    bit<8>  r2;
    bit<8>  r3;
    bit<8>  r4;
    bit<8>  r5;
    bit<8>  r6;
    bit<8>  r7;
    bit<8>  r8;
    bit<8>  r9;
    bit<8>  r10;
    bit<8>  r11;
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
        hdr.h.r1 = (hdr.h.a < hdr.h.b) ? 8w1 : 8w0;
        hdr.h.r2 = ((bit<8>)hdr.h.a < (bit<8>)hdr.h.b) ? 8w1 : 8w0;
        hdr.h.r3 = (hdr.h.a >= hdr.h.b) ? 8w1 : 8w0;
        hdr.h.r4 = (hdr.h.c < hdr.h.d) ? 8w1 : 8w0;
        hdr.h.r5 = (hdr.h.c <= hdr.h.a) ? 8w1 : 8w0;
        hdr.h.r6 = (hdr.h.a > -10) ? 8w1 : 8w0;
        hdr.h.r7 = (hdr.h.a == -5) ? 8w1 : 8w0;
        hdr.h.r8 = (hdr.h.d > hdr.h.c) ? 8w1 : 8w0;
        hdr.h.r9 = (hdr.h.e < hdr.h.f) ? 8w1 : 8w0;
        hdr.h.r10 = ((bit<16>)hdr.h.e > (bit<16>)hdr.h.f) ? 8w1 : 8w0;
        hdr.h.r11 = (hdr.h.a != hdr.h.b) ? 8w1 : 8w0;
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
