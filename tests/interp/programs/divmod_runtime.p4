// divmod_runtime: unsigned / and % of run-time values by constants (powers of two
// and others) truncate toward zero and give the matching remainder. p4c refuses
// the divisors that are not powers of two for BMv2, so this runs only with
// --runtime-divmod (tests/interp/test_bmv2_parity.py).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a8;
    bit<16> a16;
    bit<8>  d3;
    bit<8>  m3;
    bit<8>  d4;
    bit<8>  m8;
    bit<16> d7;
    bit<16> m7;
    bit<16> d1;
    bit<16> m1;
    bit<16> d1000;
    bit<16> m1000;
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
        hdr.h.d3 = hdr.h.a8 / 3;
        hdr.h.m3 = hdr.h.a8 % 3;
        hdr.h.d4 = hdr.h.a8 / 4;
        hdr.h.m8 = hdr.h.a8 % 8;
        hdr.h.d7 = hdr.h.a16 / 7;
        hdr.h.m7 = hdr.h.a16 % 7;
        hdr.h.d1 = hdr.h.a16 / 1;
        hdr.h.m1 = hdr.h.a16 % 1;
        hdr.h.d1000 = hdr.h.a16 / 1000;
        hdr.h.m1000 = hdr.h.a16 % 1000;
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
