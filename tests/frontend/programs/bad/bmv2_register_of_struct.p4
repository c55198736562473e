// BAD: BMv2 registers hold bit<W>/int<W> cells, so a register of a struct (read into a struct) cannot be mapped.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
struct pair_t { bit<8> a; bit<8> b; }
struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }

}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    register<pair_t>(4) r; // expect-error: register
    apply {
        pair_t v;
        r.read(v, 0);
        meta.b8 = v.a;
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
