// New type declaration (type bit<32> FlowId_t) with explicit casts, equality and use as an action parameter.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

type bit<32> FlowId_t;

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    FlowId_t flow;
    bit<32> raw;
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
    action set_flow(FlowId_t f) {
        meta.flow = f;
    }
    table flows {
        key = {
            hdr.ethernet.srcAddr: exact;
        }
        actions = {
            set_flow;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        meta.flow = (FlowId_t)32w0;
        flows.apply();
        meta.raw = (bit<32>)meta.flow;
        if (meta.flow == (FlowId_t)32w7) {
            standard_metadata.egress_spec = 2;
        } else {
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
