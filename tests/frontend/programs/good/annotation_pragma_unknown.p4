// @pragma lines and unknown annotations with arbitrary token lists (p4c only warns about them).
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
    @my_field_hint bit<8> tag;
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
    @my_custom_hint(alpha, 1 + 2, "text", key = value)
    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    @pragma vendor_specific fast_path 3
    table fwd {
        key = {
            hdr.ethernet.dstAddr: exact;
        }
        actions = {
            set_port;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        meta.tag = 1;
        fwd.apply();
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
