// arith_slice_concat: x[hi:lo] reads bits hi..lo (bit 0 = LSB); ++ puts the
// left operand in the high bits; assigning to a slice changes only those
// bits of the target.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> x;
    bit<8>  a;
    bit<8>  b;
    bit<8>  c;
    bit<16> y2;
    bit<8>  s_hi;
    bit<8>  s_mid;
    bit<8>  s_bit0;
    bit<16> swap;
    bit<8>  nib;
    bit<24> abc;
    bit<16> y;
    bit<16> y2_lo;
    bit<16> y2_hi;
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
        hdr.h.s_hi = hdr.h.x[15:8];
        hdr.h.s_mid = hdr.h.x[11:4];
        hdr.h.s_bit0 = (bit<8>)hdr.h.x[0:0];
        hdr.h.swap = hdr.h.x[7:0] ++ hdr.h.x[15:8];
        hdr.h.nib = hdr.h.x[3:0] ++ hdr.h.x[15:12];
        hdr.h.abc = hdr.h.a ++ hdr.h.b ++ hdr.h.c;
        bit<16> y = 0;
        y[11:4] = 8w0xFF;
        hdr.h.y = y;
        hdr.h.y2_lo = hdr.h.y2;
        hdr.h.y2_lo[3:0] = 4w0xF;
        hdr.h.y2_hi = hdr.h.y2;
        hdr.h.y2_hi[15:12] = hdr.h.a[3:0];
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
