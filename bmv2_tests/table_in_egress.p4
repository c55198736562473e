// table_in_egress: tables can be applied in egress (STF names them
// egress.<table>) and match on egress_port there; unicast packets and the
// default action behave as in ingress.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> out_port;   // input: where ingress sends the packet
    bit<8> tag;        // written by the egress table
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)hdr.h.out_port;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_tag(bit<8> tag) {
        hdr.h.tag = tag;
    }
    table port_tbl {
        key = {
            sm.egress_port : exact @name("port");
        }
        actions = { set_tag; }
        default_action = set_tag(0xEE);
    }
    apply {
        port_tbl.apply();
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
