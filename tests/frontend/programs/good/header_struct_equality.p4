// == and != on whole headers and whole structs.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header data_t {
    bit<16> a;
    bit<16> b;
}
struct pair_t {
    bit<8> x;
    bit<8> y;
}

struct headers_t {
    ethernet_t ethernet;
    data_t d1;
    data_t d2;
}

struct metadata_t {
    pair_t p;
    pair_t q;
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
        meta.p = { x = 1, y = 2 };
        meta.q = { x = 1, y = 2 };
        if (hdr.d1 == hdr.d2) {
            standard_metadata.egress_spec = 1;
        } else if (meta.p != meta.q) {
            standard_metadata.egress_spec = 2;
        } else {
            standard_metadata.egress_spec = 3;
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
        pkt.emit(hdr.d1);
        pkt.emit(hdr.d2);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
