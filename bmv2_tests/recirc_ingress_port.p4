// recirc_ingress_port: in simple_switch a recirculated packet starts its new
// ingress pass with ingress_port = 0 (metadata reset; only the field list,
// instance_type and packet_length are set).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> pass1_port;   // ingress_port in the first pass
    bit<8> pass2_port;   // ingress_port in the recirculated pass
    bit<8> inst;
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
        if (sm.instance_type == 4) {
            hdr.h.pass2_port = (bit<8>)sm.ingress_port;
            hdr.h.inst = (bit<8>)sm.instance_type;
            sm.egress_spec = 2;
        } else {
            hdr.h.pass1_port = (bit<8>)sm.ingress_port;
            sm.egress_spec = 1;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 1) {
            recirculate_preserving_field_list(0);
        }
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
