// clone_e2e: clone_preserving_field_list(E2E, ...) in egress copies the
// packet as it is at the end of egress (header changes made in egress are in
// the copy, without re-parsing); the copy runs egress again on the session's
// port with metadata zeroed except the field list, instance_type = 2.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  x;      // set in egress before cloning
    bit<8>  cnt;    // +1 on every egress pass
    bit<32> inst;
    bit<16> eport;
    bit<8>  tag;    // @field_list(1) metadata
    bit<8>  lose;   // other metadata
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> tag;
    bit<8> lose;
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
        meta.tag = 0x5A;
        meta.lose = 0x66;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 0) {
            hdr.h.x = 0xE1;
            clone_preserving_field_list(CloneType.E2E, 7, 1);
        }
        hdr.h.cnt = hdr.h.cnt + 1;
        hdr.h.inst = sm.instance_type;
        hdr.h.eport = (bit<16>)sm.egress_port;
        hdr.h.tag = meta.tag;
        hdr.h.lose = meta.lose;
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
