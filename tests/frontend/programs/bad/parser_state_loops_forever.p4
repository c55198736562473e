// BAD: a state the parser reaches but from which no path ever ends (no extract, no accept/reject, a default back to itself).
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }

struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition spin; }
    state spin { // expect-error: never
        meta.b8 = meta.b8 + 1;
        transition select(meta.b8) {
            0: spin;
            default: spin;
        }
    }
}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {

    apply {

    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
