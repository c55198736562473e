// One digest per datagram through the UDP adapter (docs/ports.md): the first 32 bits of the
// datagram's payload, so that a test can tell every packet's digest apart. Frames are dropped.
#include <core.p4>
#include <v1model.p4>

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header ipv4_t {
    bit<8> ver_ihl; bit<8> tos; bit<16> len; bit<16> id; bit<16> frag;
    bit<8> ttl; bit<8> proto; bit<16> csum; bit<32> src; bit<32> dst;
}
header udp_t { bit<16> sport; bit<16> dport; bit<16> len; bit<16> csum; }
header value_t { bit<32> value; }

struct headers_t { eth_t eth; ipv4_t ip; udp_t udp; value_t v; }
struct meta_t {}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        pkt.extract(hdr.ip);
        pkt.extract(hdr.udp);
        pkt.extract(hdr.v);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) { apply {} }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        digest<bit<32>>(1, hdr.v.value);
        mark_to_drop(sm);
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply {} }
control C(inout headers_t hdr, inout meta_t meta) { apply {} }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }

V1Switch(P(), V(), I(), E(), C(), D()) main;
