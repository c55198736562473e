// arith_divmod: unsigned / and % that p4c can compile for BMv2 truncate toward
// zero and give the matching remainder: run-time values by powers of two (1
// included), 0 divided by a run-time value, and constant expressions (folded).
// (Run-time values by other constants, such as a8 / 3, are refused by p4c:
// "could not evaluate expression at compilation time"; the embedded switch
// computes them only with --runtime-divmod, see tests/interp/test_bmv2_parity.py.)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a8;
    bit<16> a16;
    bit<8>  d4;
    bit<8>  m8;
    bit<16> d1;
    bit<16> m1;
    bit<16> d256;
    bit<16> m1024;
    bit<8>  zd;
    bit<8>  zm;
    bit<16> c7;
    bit<16> cm7;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

const bit<16> THOUSAND = 1000;

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
        hdr.h.d4 = hdr.h.a8 / 4;
        hdr.h.m8 = hdr.h.a8 % 8;
        hdr.h.d1 = hdr.h.a16 / 1;
        hdr.h.m1 = hdr.h.a16 % 1;
        hdr.h.d256 = hdr.h.a16 / 256;
        hdr.h.m1024 = hdr.h.a16 % 1024;
        hdr.h.zd = 8w0 / hdr.h.a8;
        hdr.h.zm = 8w0 % hdr.h.a8;
        hdr.h.c7 = THOUSAND / 7;
        hdr.h.cm7 = THOUSAND % 7;
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
