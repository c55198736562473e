// arith_wrap: unsigned +, -, * and unary minus wrap modulo 2^W at widths
// 4, 8, 16, 32 and 64.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a8;
    bit<8>  b8;
    bit<16> a16;
    bit<16> b16;
    bit<32> a32;
    bit<32> b32;
    bit<64> a64;
    bit<64> b64;
    bit<4>  na;
    bit<4>  nb;
    bit<8>  add8;
    bit<8>  sub8;
    bit<8>  mul8;
    bit<8>  neg8;
    bit<16> add16;
    bit<16> sub16;
    bit<16> mul16;
    bit<32> add32;
    bit<32> sub32;
    bit<32> mul32;
    bit<64> add64;
    bit<64> sub64;
    bit<64> mul64;
    bit<4>  add4;
    bit<4>  sub4;
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
        hdr.h.add8 = hdr.h.a8 + hdr.h.b8;
        hdr.h.sub8 = hdr.h.a8 - hdr.h.b8;
        hdr.h.mul8 = hdr.h.a8 * hdr.h.b8;
        hdr.h.neg8 = -hdr.h.a8;
        hdr.h.add16 = hdr.h.a16 + hdr.h.b16;
        hdr.h.sub16 = hdr.h.a16 - hdr.h.b16;
        hdr.h.mul16 = hdr.h.a16 * hdr.h.b16;
        hdr.h.add32 = hdr.h.a32 + hdr.h.b32;
        hdr.h.sub32 = hdr.h.a32 - hdr.h.b32;
        hdr.h.mul32 = hdr.h.a32 * hdr.h.b32;
        hdr.h.add64 = hdr.h.a64 + hdr.h.b64;
        hdr.h.sub64 = hdr.h.a64 - hdr.h.b64;
        hdr.h.mul64 = hdr.h.a64 * hdr.h.b64;
        hdr.h.add4 = hdr.h.na + hdr.h.nb;
        hdr.h.sub4 = hdr.h.na - hdr.h.nb;
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
