// typedef declarations (including a typedef of a typedef) used in headers, metadata and action parameters.
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_addr_t;
typedef bit<9>  port_t;
typedef mac_addr_t router_mac_t;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    port_t out_port;
    router_mac_t my_mac;
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
    action set_out(port_t p, router_mac_t m) {
        meta.out_port = p;
        meta.my_mac = m;
    }
    table t {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            set_out;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        t.apply();
        hdr.ethernet.srcAddr = meta.my_mac;
        standard_metadata.egress_spec = meta.out_port;
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
