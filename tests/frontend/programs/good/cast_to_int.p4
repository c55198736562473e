// Casts of compile-time known bit<W>/int<W> values to int (P4_16 1.2.4), folded in constants and expressions.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
const int BIG = (int)8w5 + 3;
const bit<8> NEG = (bit<8>)((int)(-8s3) + 10);
struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }

}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {

    apply {
        meta.b8 = (bit<8>)BIG + NEG; meta.b16 = (bit<16>)((int)4w9 * 2); if (meta.b8 == 15 && meta.b16 == 18) { standard_metadata.egress_spec = 7; }
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
