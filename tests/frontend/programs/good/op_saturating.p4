// Saturating addition |+| and subtraction |-| on unsigned and signed values.
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
    bit<8> a;
    bit<8> b;
    bit<8> u;
    bit<8> v;
    int<8> sa;
    int<8> s1;
    int<8> s2;
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
        meta.a = hdr.ethernet.dstAddr[7:0];
        meta.b = hdr.ethernet.srcAddr[7:0];
        meta.u = meta.a |+| meta.b;
        meta.v = meta.a |-| meta.b;
        meta.sa = (int<8>)meta.a;
        meta.s1 = meta.sa |+| 8s100;
        meta.s2 = meta.sa |-| 8s100;
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
