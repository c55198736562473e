// Declarations p4c's front end removes before P4Info: a table never applied, a sub-control instance never applied (with its table and action), an action only called from another action; an unused extern instance stays.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
control Sub(inout ethernet_t eth, inout standard_metadata_t sm) {
    action sub_set(bit<9> p) { sm.egress_spec = p; }
    table sub_t { key = { eth.dstAddr : exact; } actions = { sub_set; NoAction; } }
    apply { sub_t.apply(); }
}
struct headers_t { ethernet_t ethernet;  }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition accept; }

}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    Sub() unused_sub;
    counter(8, CounterType.packets) spare;
    action helper() { meta.b8 = 1; }
    action outer(bit<9> p) { helper(); standard_metadata.egress_spec = p; }
    table never { key = { hdr.ethernet.srcAddr : exact; } actions = { outer; NoAction; } }
    table t { key = { hdr.ethernet.dstAddr : exact; } actions = { outer; NoAction; } }
    apply {
        t.apply();
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
