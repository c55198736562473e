// Preprocessor: object-like and function-like #define, #ifdef/#else, #ifndef, #if with arithmetic, #undef.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

#define PORT_A 1
#define PORT_B 2
#define FWD_TO(p) standard_metadata.egress_spec = p
#define USE_VLAN

#ifdef USE_VLAN
const bit<16> VLAN_TYPE = 0x8100;
#else
const bit<16> VLAN_TYPE = 0x88a8;
#endif

#ifndef MAX_PORTS
#define MAX_PORTS 64
#endif

#if MAX_PORTS > 32
const bit<8> BIG_SWITCH = 1;
#else
const bit<8> BIG_SWITCH = 0;
#endif

#undef PORT_B
#define PORT_B 3

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
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
        if (hdr.ethernet.etherType == VLAN_TYPE && BIG_SWITCH == 1) {
            FWD_TO(PORT_B);
        } else {
            FWD_TO(PORT_A);
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
