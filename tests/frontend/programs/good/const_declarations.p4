// Constant declarations of bit, int<W>, bool and int types, at top level and inside apply.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<9>  DEFAULT_PORT = 9w3;
const bool    ENABLE_FWD = true;
const int<8>  OFFSET = -8s3;
const int     TABLE_SIZE = 256;

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    int<8> s;
    bit<8> lim;
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
    action set_port(bit<9> p) {
        standard_metadata.egress_spec = p;
    }
    table t {
        key = {
            hdr.ethernet.etherType: exact;
        }
        actions = {
            set_port;
            NoAction;
        }
        size = TABLE_SIZE;
        default_action = set_port(DEFAULT_PORT);
    }
    apply {
        const bit<8> LOCAL_LIMIT = 8w100;
        meta.s = OFFSET;
        meta.lim = LOCAL_LIMIT;
        if (ENABLE_FWD && hdr.ethernet.etherType == ETHERTYPE_IPV4) {
            t.apply();
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
