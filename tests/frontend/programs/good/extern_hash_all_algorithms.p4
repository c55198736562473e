// hash() with every HashAlgorithm member: crc32, crc32_custom, crc16, crc16_custom, random, identity, csum16, xor16.
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
    bit<32> h_crc32;
    bit<32> h_crc32c;
    bit<16> h_crc16;
    bit<16> h_crc16c;
    bit<32> h_rand;
    bit<48> h_ident;
    bit<16> h_csum;
    bit<16> h_xor;
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
        hash(meta.h_crc32, HashAlgorithm.crc32, 32w0, { hdr.ethernet.srcAddr, hdr.ethernet.dstAddr }, 32w0xffffffff);
        hash(meta.h_crc32c, HashAlgorithm.crc32_custom, 32w0, { hdr.ethernet.srcAddr }, 32w1024);
        hash(meta.h_crc16, HashAlgorithm.crc16, 16w0, { hdr.ethernet.etherType, hdr.ethernet.srcAddr }, 32w65536);
        hash(meta.h_crc16c, HashAlgorithm.crc16_custom, 16w0, { hdr.ethernet.dstAddr }, 32w256);
        hash(meta.h_rand, HashAlgorithm.random, 32w0, { hdr.ethernet.srcAddr }, 32w100);
        hash(meta.h_ident, HashAlgorithm.identity, 48w0, { hdr.ethernet.dstAddr }, 64w0x1000000000000);
        hash(meta.h_csum, HashAlgorithm.csum16, 16w0, { hdr.ethernet.srcAddr, hdr.ethernet.dstAddr, hdr.ethernet.etherType }, 32w65536);
        hash(meta.h_xor, HashAlgorithm.xor16, 16w0, { hdr.ethernet.srcAddr }, 32w65536);
        standard_metadata.egress_spec = (bit<9>)meta.h_crc16[2:0];
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
