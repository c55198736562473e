// extern_digest: digest() sends data to the control plane only; the packet
// is forwarded unchanged and processing continues after the call.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<48> mac;
    bit<16> port;
}

struct headers_t {
    h_t h;
}

struct learn_t {
    bit<48> mac;
    bit<9>  port;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        digest<learn_t>(1, {hdr.h.mac, sm.ingress_port});
        hdr.h.port = (bit<16>)sm.ingress_port;
        sm.egress_spec = 2;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
