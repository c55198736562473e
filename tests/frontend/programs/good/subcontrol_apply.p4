// A control declared at top level, instantiated inside ingress and applied with arguments.
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
}

control Acl(inout headers_t hdr, inout standard_metadata_t sm) {
    action deny() {
        mark_to_drop(sm);
    }
    table acl {
        key = {
            hdr.ethernet.srcAddr: ternary;
        }
        actions = {
            deny;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        acl.apply();
    }
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
    Acl() acl_inst;
    apply {
        standard_metadata.egress_spec = 1;
        acl_inst.apply(hdr, standard_metadata);
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
