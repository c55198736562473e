// A program may declare extern functions and extern object types of its own (P4_16 7.2.10);
// p4c's front end accepts them, and its BMv2 back end objects only when one is called or
// instantiated. Declared but unused, they leave the pipeline runnable.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct headers_t { ethernet_t ethernet; }
struct metadata_t { bit<16> seen; }
extern bit<16> checksum_offload(in bit<16> partial, in bit<48> address);
extern flow_cache<K> {
    flow_cache(bit<32> entries);
    bool lookup(in K key);
}
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.seen = hdr.ethernet.etherType;
        if (meta.seen == 0x0800) { standard_metadata.egress_spec = 9; }
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
