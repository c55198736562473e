// Integer literal forms: width prefixes (8w, 8s), hex, binary, octal, underscores, signed.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  c;
    bit<8>  d;
    bit<16> e;
    int<8>  s;
    int<8>  t;
    bit<32> f;
    int<16> g;
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
        meta.a = 8w5;
        meta.b = 0x1F;
        meta.c = 0b1010_1010;
        meta.d = 0o17;
        meta.e = 16w0xFF_FF;
        meta.s = 8s5;
        meta.t = -8s127;
        meta.f = 1_000_000;
        meta.g = 16s0x7fff;
        if (meta.a == 5 && meta.c == 8w0b10101010) {
            standard_metadata.egress_spec = 1;
        }
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
