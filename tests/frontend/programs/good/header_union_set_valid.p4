// Header union members made valid and invalid in ingress (setValid on one member).
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header opt_a_t {
    bit<8> kind;
    bit<8> value;
}
header opt_b_t {
    bit<8>  kind;
    bit<16> value;
    bit<8>  pad;
}
header_union opt_t {
    opt_a_t a;
    opt_b_t b;
}

struct headers_t {
    ethernet_t ethernet;
    opt_t opt;
}

struct metadata_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88b5: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        transition select(pkt.lookahead<bit<8>>()) {
            1: parse_a;
            2: parse_b;
            default: accept;
        }
    }
    state parse_a {
        pkt.extract(hdr.opt.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.opt.b);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.opt.a.isValid()) {
            bit<8> v = hdr.opt.a.value;
            hdr.opt.b.setValid();
            hdr.opt.b.kind = 2;
            hdr.opt.b.value = (bit<16>)v;
            hdr.opt.b.pad = 0;
        } else if (hdr.opt.b.isValid()) {
            hdr.opt.b.setInvalid();
        }
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
        pkt.emit(hdr.opt);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
