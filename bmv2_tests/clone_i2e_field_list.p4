// clone_i2e_field_list: clone_preserving_field_list(I2E, session, n) keeps
// the user metadata fields annotated @field_list(n) in the copy; other user
// metadata (including fields of a different field list) reads 0.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> inst;
    bit<8>  keep;
    bit<8>  lose;
    bit<8>  other;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> keep;
    bit<8> lose;
    @field_list(2)
    bit<8> other;
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
        meta.keep = 0x11;
        meta.lose = 0x22;
        meta.other = 0x33;
        clone_preserving_field_list(CloneType.I2E, 5, 1);
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.inst = sm.instance_type;
        hdr.h.keep = meta.keep;
        hdr.h.lose = meta.lose;
        hdr.h.other = meta.other;
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
