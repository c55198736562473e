// Rule 5: a parser path that extracts 112 + 4096 = 4208 bits, over the 4096-bit budget.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header blob_t {
    bit<2048> first;
    bit<2048> second;
}

struct headers_t {
    ethernet_t ethernet;
    blob_t blob;
}

struct metadata_t {
    bit<32> cell;
    bit<32> other;
    bit<32> value;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,  // expect-error: 4208 bits
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88B5: parse_blob;
            default: accept;
        }
    }
    state parse_blob {
        pkt.extract(hdr.blob);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    apply {
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
