// A stack of header unions (next/last in the parser, push/pop, copies, inout arguments) and a union holding a varbit header.
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header a_t { bit<8> x; }
header b_t { bit<16> y; }
header v_t { varbit<32> data; }
header_union u_t { a_t a; b_t b; }
header_union w_t { a_t a; v_t v; }
struct headers_t { ethernet_t ethernet; u_t[2] us;
    w_t w; }
struct metadata_t { bit<8> b8; bit<16> b16; bit<32> b32; }
parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start { pkt.extract(hdr.ethernet); transition more; }
    state more {
        pkt.extract(hdr.us.next.a);
        transition select(hdr.us.last.a.x) { 0: more2; default: accept; }
    }
    state more2 {
        pkt.extract(hdr.w.v, 16);
        transition accept;
    }
}
control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action cp(inout u_t u) { u.b.setValid(); u.b.y = 9; }
    apply {
        if (hdr.us[0].isValid()) { standard_metadata.egress_spec = 2; }
        u_t tmp = hdr.us[0];
        hdr.us[1] = tmp;
        cp(hdr.us[1]);
        hdr.w.a = hdr.us[0].a;
        if (hdr.us[1].b.isValid() && hdr.w.isValid()) { standard_metadata.egress_spec = 4; }
        hdr.us.push_front(1);
        hdr.us.pop_front(1);
    }
}
control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }
control MyDeparser(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
