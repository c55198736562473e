// Rule 2: a sub-control that updates the register it is given, instantiated twice in ingress
// with the same register: the one call site touches it twice per pass.
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
    bit<32> cell;
    bit<32> other;
    bit<32> value;
}

control CountHit(in bit<32> cell)(register<bit<32>> hits) {
    apply {
        bit<32> n;
        hits.read(n, cell);  // expect-error: by both MyIngress.first and MyIngress.second
        hits.write(cell, n + 1);
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(16) r1;
    register<bit<32>>(16) r2;
    CountHit(r1) first;
    CountHit(r1) second;
    apply {
        first.apply(meta.cell);
        second.apply(meta.other);
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
