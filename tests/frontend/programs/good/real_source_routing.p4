// Realistic: source routing with a header stack of hops; each switch pops the first hop,
// forwards on its port, and restores the IPv4 EtherType at the last hop.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_SRCROUTING = 0x1234;
#define MAX_HOPS 9

header srcRoute_t {
    bit<1>  bos;
    bit<15> port;
}

struct headers_t {
    ethernet_t ethernet;
    srcRoute_t[MAX_HOPS] srcRoutes;
    ipv4_t ipv4;
}

struct metadata_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_SRCROUTING: parse_srcRouting;
            default: accept;
        }
    }
    state parse_srcRouting {
        pkt.extract(hdr.srcRoutes.next);
        transition select(hdr.srcRoutes.last.bos) {
            1: parse_ipv4;
            default: parse_srcRouting;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action srcRoute_nhop() {
        standard_metadata.egress_spec = (bit<9>)hdr.srcRoutes[0].port;
        hdr.srcRoutes.pop_front(1);
    }
    action srcRoute_finish() {
        hdr.ethernet.etherType = TYPE_IPV4;
    }
    action update_ttl() {
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    apply {
        if (hdr.srcRoutes[0].isValid()) {
            if (hdr.srcRoutes[0].bos == 1) {
                srcRoute_finish();
            }
            srcRoute_nhop();
            if (hdr.ipv4.isValid()) {
                update_ttl();
            }
        } else {
            drop();
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
        pkt.emit(hdr.srcRoutes);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
