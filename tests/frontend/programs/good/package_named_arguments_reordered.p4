// The V1Switch package instantiated with named arguments in another order than its
// parameters (as p4runtime-shell tutorials write it); the blocks bind by name.
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
    bit<9> port;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    counter(4, CounterType.packets) seen;
    apply {
        seen.count(0);
        standard_metadata.egress_spec = 5;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        hdr.ethernet.etherType = 0x1234;
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(
    ck = MyComputeChecksum(),
    dep = MyDeparser(),
    eg = MyEgress(),
    p = MyParser(),
    ig = MyIngress(),
    vr = MyVerifyChecksum()
) main;
