// arith_cast: casts truncate to a narrower width (keeping the low bits),
// zero-extend bit<W>, sign-extend int<W>, reinterpret bits between bit<W> and
// int<W> of the same width, and turn a bool into bit<1>.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> w16;
    bit<8>  b8;
    int<8>  s8;
    bit<8>  u8;
    bit<8>  c1;
    bit<16> c2;
    bit<16> c3;
    bit<16> c4;
    bit<32> c5;
    bit<8>  c6;
    bit<8>  c7;
    bit<8>  c8;
    bit<16> c9;
    bit<8>  c10;
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
        hdr.h.c1 = (bit<8>)hdr.h.w16;
        hdr.h.c2 = (bit<16>)hdr.h.b8;
        hdr.h.c3 = (bit<16>)(int<16>)hdr.h.s8;
        hdr.h.c4 = (bit<16>)(int<16>)(int<8>)hdr.h.u8;
        hdr.h.c5 = (bit<32>)(int<32>)hdr.h.s8;
        hdr.h.c6 = (bit<8>)(bit<4>)hdr.h.b8;
        hdr.h.c7 = (bit<8>)(bit<1>)(hdr.h.b8 > 0x10);
        hdr.h.c8 = ((int<8>)hdr.h.u8 < 0) ? 8w1 : 8w0;
        hdr.h.c9 = (bit<16>)((int<16>)hdr.h.w16 >> 4);
        hdr.h.c10 = (bit<8>)(int<8>)(int<4>)(bit<4>)(bit<8>)hdr.h.s8;
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
