// Nested structs in the metadata, accessed through chained field references.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct l2_meta_t {
    bit<48> smac;
    bit<48> dmac;
}
struct l3_meta_t {
    bit<32> nexthop;
    bit<8>  ttl;
}
struct fwd_meta_t {
    l2_meta_t l2;
    l3_meta_t l3;
    bit<9>    port;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    fwd_meta_t fwd;
    bit<8> flags;
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
        meta.fwd.l2.smac = hdr.ethernet.srcAddr;
        meta.fwd.l2.dmac = hdr.ethernet.dstAddr;
        meta.fwd.l3.nexthop = 32w0x0a000001;
        meta.fwd.l3.ttl = 64;
        meta.fwd.port = 1;
        meta.flags = 0;
        hdr.ethernet.srcAddr = meta.fwd.l2.dmac;
        hdr.ethernet.dstAddr = meta.fwd.l2.smac;
        standard_metadata.egress_spec = meta.fwd.port;
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
