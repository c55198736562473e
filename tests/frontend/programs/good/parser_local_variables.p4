// Parser-level and state-level local variables, assigned in states and used in select.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header mpls_t {
    bit<20> label;
    bit<3>  tc;
    bit<1>  bos;
    bit<8>  ttl;
}

struct headers_t {
    ethernet_t ethernet;
    mpls_t[4] mpls;
}

struct metadata_t {
    bit<8> label_count;
    bit<16> etype;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    bit<8> hops;
    state start {
        hops = 0;
        pkt.extract(hdr.ethernet);
        bit<16> et = hdr.ethernet.etherType;
        meta.etype = et;
        transition select(et) {
            0x8847: parse_mpls;
            default: accept;
        }
    }
    state parse_mpls {
        pkt.extract(hdr.mpls.next);
        hops = hops + 1;
        transition select(hdr.mpls.last.bos, hops) {
            (1, _): done;
            (0, 3): done;
            default: parse_mpls;
        }
    }
    state done {
        meta.label_count = hops;
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
        pkt.emit(hdr.mpls);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
