// Bit slices [hi:lo] as rvalues and as lvalues (header fields and metadata).
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
    bit<8> hi;
    bit<4> lo4;
    bit<8> nib;
    bit<1> bit0;
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
        meta.hi = hdr.ethernet.dstAddr[47:40];
        meta.lo4 = hdr.ethernet.etherType[3:0];
        hdr.ethernet.srcAddr[7:0] = meta.hi;
        hdr.ethernet.etherType[15:12] = 4w0xA;
        meta.nib[3:0] = 0x5;
        meta.bit0 = hdr.ethernet.dstAddr[0:0];
        standard_metadata.egress_spec = (bit<9>)meta.lo4;
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
