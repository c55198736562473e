// BAD (P4Runtime): an action profile constructed in the table property without @name; p4c-bm2-ss 1.2.5 has no control-plane name for it (no source position).
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }

struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }

}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action set(bit<9> p) { standard_metadata.egress_spec = p; }
    action_profile(32w128) shared;
    table named_profile {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { set; NoAction; }
        implementation = shared;
    }
    table inline_profile {
        key = { hdr.ethernet.srcAddr : exact; }
        actions = { set; NoAction; }
        implementation = action_profile(64);  // expect-error-noline: anonymous
    }
    table inline_selector {
        key = {
            hdr.ethernet.srcAddr : exact;
            hdr.ethernet.etherType : selector;
        }
        actions = { set; NoAction; }
        @name("ecmp_selector") implementation = action_selector(HashAlgorithm.crc16, 32w64, 32w14);
    }
    apply {
        standard_metadata.egress_spec = 6;
        named_profile.apply();
        inline_profile.apply();
        inline_selector.apply();
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
