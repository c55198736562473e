// meta_ingress_port_echo: ingress_port is the STF port the packet was sent on;
// setting egress_spec = ingress_port reflects it back out of the same port.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<16> port;    // overwritten with ingress_port
}

struct headers_t {
    rep_t rep;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.port = (bit<16>)sm.ingress_port;
        sm.egress_spec = sm.ingress_port;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
