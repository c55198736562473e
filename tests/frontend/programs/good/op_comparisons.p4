// Comparison operators == != < <= > >= on unsigned and signed values.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header nums_t {
    int<8>  s;
    bit<8>  u;
    int<16> w;
}

struct headers_t {
    ethernet_t ethernet;
    nums_t nums;
}

struct metadata_t {
    bit<8> score;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.nums);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.score = 0;
        if (hdr.nums.u == 8w10) { meta.score = meta.score + 1; }
        if (hdr.nums.u != 0) { meta.score = meta.score + 1; }
        if (hdr.nums.u < 100) { meta.score = meta.score + 1; }
        if (hdr.nums.u <= 8w200) { meta.score = meta.score + 1; }
        if (hdr.nums.s > -8s5) { meta.score = meta.score + 1; }
        if (hdr.nums.w >= 16s0) { meta.score = meta.score + 1; }
        standard_metadata.egress_spec = (bit<9>)meta.score;
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
        pkt.emit(hdr.nums);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
