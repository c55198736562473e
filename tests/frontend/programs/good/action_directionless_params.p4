// Action parameters without direction (supplied by the control plane) after a directional one bound in the actions list.
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
    bit<8> tag;
    bit<16> etype_copy;
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
    action rewrite(bit<48> smac, bit<48> dmac, bit<9> port) {
        hdr.ethernet.srcAddr = smac;
        hdr.ethernet.dstAddr = dmac;
        standard_metadata.egress_spec = port;
    }
    action mark(in bit<16> etype, bit<8> tag) {
        meta.tag = tag;
        meta.etype_copy = etype;
    }
    table t {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            rewrite;
            mark(hdr.ethernet.etherType);
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        t.apply();
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
