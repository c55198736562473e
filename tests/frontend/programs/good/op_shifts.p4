// Shifts << and >> by constants and by runtime amounts, including arithmetic right shift of int<W>.
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
    bit<8> n;
    bit<8> x;
    bit<8> y;
    bit<16> z;
    int<8> s;
    int<8> t;
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
        meta.n = hdr.ethernet.srcAddr[2:0] ++ 5w0;
        meta.x = meta.a << 2;
        meta.y = meta.a >> meta.n;
        meta.z = 16w1 << meta.n;
        meta.s = (int<8>)meta.a;
        meta.t = meta.s >> 3;
        meta.s = meta.s << 1;
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
