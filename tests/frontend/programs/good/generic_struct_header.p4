// Generic structs and headers with type parameters (struct pair_t<T>, header tagged_t<W>), specialized in declarations, typedefs and the headers struct, parsed, updated and emitted.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct pair_t<T> { T first; T second; }
header tagged_t<W> { bit<8> tag; W value; }
typedef pair_t<bit<8>> bytepair_t;
struct headers_t { ethernet_t ethernet; tagged_t<bit<16>> tg; }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition more; }
    state more { pkt.extract(hdr.tg); transition accept; }
}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    pair_t<bit<16>> p16;
    bytepair_t bp;
    apply {
        p16 = { first = 1, second = 2 };
        bp.first = 3;
        bp.second = (bit<8>)p16.second;
        hdr.tg.value = hdr.tg.value + p16.first;
        if (bp.first + bp.second == 5 && hdr.tg.tag == 0x45) {
            standard_metadata.egress_spec = 10;
        }
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
