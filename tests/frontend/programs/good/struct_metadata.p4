// User metadata struct with bit and bool fields written by table actions.
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
    bit<9> out_port;
    bit<16> vlan_id;
    bool drop;
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
    action set_meta(bit<9> port, bit<16> vid) {
        meta.out_port = port;
        meta.vlan_id = vid;
    }
    action set_drop() {
        meta.drop = true;
    }
    table classify {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            set_meta;
            set_drop;
        }
        default_action = set_drop();
    }
    apply {
        meta.drop = false;
        classify.apply();
        if (meta.drop) {
            mark_to_drop(standard_metadata);
        } else {
            standard_metadata.egress_spec = meta.out_port;
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
