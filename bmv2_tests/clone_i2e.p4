// clone_i2e: clone(I2E, session) sends a copy of the packet AS IT ARRIVED
// (ingress changes not applied, re-parsed) to the session's port; the copy
// starts egress with all metadata zeroed (ingress_port too, user metadata
// too) and instance_type = 1; the original continues normally.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;       // changed by ingress
    bit<32> inst;
    bit<16> iport;
    bit<16> eport;
    bit<8>  mval;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    bit<8> val;
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
        hdr.h.a = 0xAA;
        meta.val = 0x77;
        clone(CloneType.I2E, 5);
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.inst = sm.instance_type;
        hdr.h.iport = (bit<16>)sm.ingress_port;
        hdr.h.eport = (bit<16>)sm.egress_port;
        hdr.h.mval = meta.val;
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
