// arith_saturating: |+| and |-| clamp to the type's range instead of
// wrapping: [0, 2^W-1] for bit<W>, [-2^(W-1), 2^(W-1)-1] for int<W>.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  x;
    bit<8>  y;
    int<8>  p;
    int<8>  n;
    bit<16> w16;
    bit<8>  r1;
    bit<8>  r2;
    bit<8>  r3;
    bit<8>  r4;
    int<8>  r5;
    int<8>  r6;
    int<8>  r7;
    int<8>  r8;
    int<8>  r9;
    int<8>  r10;
    bit<16> r11;
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
        hdr.h.r1 = hdr.h.x |+| hdr.h.y;
        hdr.h.r2 = hdr.h.x |-| hdr.h.y;
        hdr.h.r3 = hdr.h.y |-| hdr.h.x;
        hdr.h.r4 = hdr.h.y |+| hdr.h.y;
        hdr.h.r5 = hdr.h.p |+| hdr.h.p;
        hdr.h.r6 = hdr.h.n |+| hdr.h.n;
        hdr.h.r7 = hdr.h.n |-| hdr.h.p;
        hdr.h.r8 = hdr.h.p |-| hdr.h.n;
        hdr.h.r9 = hdr.h.p |-| hdr.h.p;
        hdr.h.r10 = hdr.h.p |+| hdr.h.n;
        hdr.h.r11 = hdr.h.w16 |+| 16w0x20;
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
