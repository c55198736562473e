// switch on action_run with a fall-through label (no body) and a default label.
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
    bit<8> x;
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
    action a1() {
        standard_metadata.egress_spec = 1;
    }
    action a2() {
        standard_metadata.egress_spec = 2;
    }
    action a3() {
        standard_metadata.egress_spec = 3;
    }
    table cls {
        key = {
            hdr.ethernet.etherType: exact;
        }
        actions = {
            a1;
            a2;
            a3;
        }
        default_action = a3();
    }
    apply {
        switch (cls.apply().action_run) {
            a1:
            a2: {
                meta.x = 1;
            }
            default: {
                meta.x = 2;
            }
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
