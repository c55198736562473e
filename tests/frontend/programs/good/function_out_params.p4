// Top-level functions with out parameters (void) and a bool-returning function.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

void split_mac(in bit<48> mac, out bit<24> oui, out bit<24> nic) {
    oui = mac[47:24];
    nic = mac[23:0];
}

bool is_broadcast(in bit<48> mac) {
    return mac == 48w0xffffffffffff;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<24> oui;
    bit<24> nic;
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
        split_mac(hdr.ethernet.dstAddr, meta.oui, meta.nic);
        if (is_broadcast(hdr.ethernet.dstAddr)) {
            standard_metadata.mcast_grp = 1;
        } else {
            standard_metadata.egress_spec = (bit<9>)meta.nic[8:0];
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
