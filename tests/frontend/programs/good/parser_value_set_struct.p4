// Parser value_set over a struct whose fields carry @match annotations, selected on a tuple.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct pvs_key_t {
    @match(ternary)
    bit<16> etype;
    @match(exact)
    bit<8>  first_byte;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<1> hit;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    value_set<pvs_key_t>(8) pvs;
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType, hdr.ethernet.dstAddr[47:40]) {
            pvs: mark;
            default: accept;
        }
    }
    state mark {
        meta.hit = 1;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 1;
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
