// Bitwise operators & | ^ ~.
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
    bit<8> r_and;
    bit<8> r_or;
    bit<8> r_xor;
    bit<8> r_not;
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
        meta.r_and = meta.a & meta.b;
        meta.r_or = meta.a | 8w0x0f;
        meta.r_xor = meta.a ^ meta.b;
        meta.r_not = ~meta.a;
        hdr.ethernet.etherType = hdr.ethernet.etherType & 0xff00 | (bit<16>)meta.r_xor;
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
