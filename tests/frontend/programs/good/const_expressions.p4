// Compile-time constant expressions: *, / and % on int, shifts, concatenation, comparison and ?: in const initializers.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

const bit<32> KB = 1024;
const bit<32> MB = KB * KB;
const int     MB_INT = 1024 * 1024;
const bit<32> HALF = MB_INT / 2;
const bit<32> REM = 1000 % 7;
const bit<8>  MASK = (1 << 4) - 1;
const bit<16> COMBINED = 8w0xAB ++ 8w0xCD;
const bool    BIG = MB > KB;
const bit<8>  SEL = BIG ? 8w1 : 8w2;
const int<16> NEG = -16s100 + 16s50;

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<32> a;
    bit<8> b;
    bit<16> c;
    int<16> d;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.a = HALF + REM;
        meta.b = MASK & SEL;
        meta.c = COMBINED;
        meta.d = NEG;
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
