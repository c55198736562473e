// arith_shift: << and >> on bit<W> are logical; >> on int<W> is arithmetic
// (copies the sign bit); << on int<W> wraps; a shift by >= W gives 0, or -1
// for a negative int<W> shifted right; shift amounts may be run-time values.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  u;
    int<8>  i;
    int<8>  i2;
    bit<16> w;
    bit<8>  s;     // run-time shift amount
    bit<8>  u_r2;
    bit<8>  u_l2;
    bit<8>  u_rs;
    bit<8>  u_ls;
    int<8>  i_r2;
    int<8>  i_l1;
    int<8>  i_rs;
    int<8>  i2_l1;
    int<8>  i2_rs;
    bit<16> w_l1;
    bit<16> w_r15;
    bit<16> w_rs;
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
        hdr.h.u_r2 = hdr.h.u >> 2;
        hdr.h.u_l2 = hdr.h.u << 2;
        hdr.h.u_rs = hdr.h.u >> hdr.h.s;
        hdr.h.u_ls = hdr.h.u << hdr.h.s;
        hdr.h.i_r2 = hdr.h.i >> 2;
        hdr.h.i_l1 = hdr.h.i << 1;
        hdr.h.i_rs = hdr.h.i >> hdr.h.s;
        hdr.h.i2_l1 = hdr.h.i2 << 1;
        hdr.h.i2_rs = hdr.h.i2 >> hdr.h.s;
        hdr.h.w_l1 = hdr.h.w << 1;
        hdr.h.w_r15 = hdr.h.w >> 15;
        hdr.h.w_rs = hdr.h.w >> hdr.h.s;
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
