// hash_bit_packing: hash input fields are concatenated MSB first at bit
// granularity (no per-field byte alignment), and the total is padded with
// zero bits at the end up to a whole byte.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<4>  x;
    bit<12> y;
    bit<12> z;
    bit<4>  pad;
    bit<16> r1;
    bit<16> r2;
    bit<16> r3;
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
        hash(hdr.h.r1, HashAlgorithm.crc16, 16w0, { hdr.h.x, hdr.h.y }, 32w65536);
        hash(hdr.h.r2, HashAlgorithm.crc16, 16w0, { hdr.h.z }, 32w65536);
        hash(hdr.h.r3, HashAlgorithm.crc16, 16w0, { hdr.h.x, hdr.h.y, hdr.h.z }, 32w65536);
        sm.egress_spec = 1;
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
