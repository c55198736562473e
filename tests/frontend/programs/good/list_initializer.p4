// List expressions { e1, e2 }: initializing structs positionally and as extern arguments.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct key_t {
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<16> h;
    key_t k;
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
        hash(meta.h, HashAlgorithm.crc16, 16w0, { hdr.ethernet.srcAddr, hdr.ethernet.etherType }, 32w65536);
        meta.k = { 32w1, 32w2 };
        key_t k2 = { 3, 4 };
        if (meta.k.src != k2.src) {
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
