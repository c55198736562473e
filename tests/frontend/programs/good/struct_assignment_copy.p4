// Whole struct and whole header assignment (copy) with =.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header data_t {
    bit<32> f1;
    bit<32> f2;
}
struct stats_t {
    bit<32> x;
    bit<32> y;
}

struct headers_t {
    ethernet_t ethernet;
    data_t d1;
    data_t d2;
}

struct metadata_t {
    stats_t cur;
    stats_t saved;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.d1);
        pkt.extract(hdr.d2);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.cur.x = hdr.d1.f1;
        meta.cur.y = hdr.d1.f2;
        meta.saved = meta.cur;
        hdr.d2 = hdr.d1;
        hdr.d2.f2 = meta.saved.x;
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
        pkt.emit(hdr.d1);
        pkt.emit(hdr.d2);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
