// hash_base_max: hash(result, algo, base, data, max) yields
// base + (hash(data) mod max): a non-power-of-two max, a power-of-two max,
// and max = 1 (always base).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<32> b;
    bit<16> r1;
    bit<32> r2;
    bit<8>  r3;
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
        hash(hdr.h.r1, HashAlgorithm.crc16, 16w100, { hdr.h.a, hdr.h.b }, 32w10);
        hash(hdr.h.r2, HashAlgorithm.crc32, 32w0x1000, { hdr.h.a, hdr.h.b }, 32w256);
        hash(hdr.h.r3, HashAlgorithm.crc16, 8w7, { hdr.h.a, hdr.h.b }, 16w1);
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
