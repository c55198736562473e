// resubmit_ingress_port: in simple_switch a resubmitted packet starts its
// new ingress pass with ingress_port = 0: the copy's metadata is reset and
// only the field list and instance_type are filled in (ingress_port is not
// restored; only I2E clones get it back, for re-parsing).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> first_port;    // ingress_port in the first pass
    bit<8> second_port;   // ingress_port in the resubmitted pass
    bit<8> kept_port;     // first-pass ingress_port carried in a field list
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> port;
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
        if (sm.instance_type == 0) {
            meta.port = (bit<8>)sm.ingress_port;
            resubmit_preserving_field_list(1);
        } else {
            hdr.h.first_port = meta.port;
            hdr.h.second_port = (bit<8>)sm.ingress_port;
            hdr.h.kept_port = meta.port;
            sm.egress_spec = 1;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
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
