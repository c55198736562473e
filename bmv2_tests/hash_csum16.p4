// hash_csum16: HashAlgorithm.csum16 is the 16-bit Internet checksum (ones'
// complement of the ones'-complement sum of 16-bit words); an odd number of
// bytes is padded with a zero byte at the end.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<16> a;
    bit<32> b;
    bit<8>  c;
    bit<16> r;
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
        hash(hdr.h.r, HashAlgorithm.csum16, 16w0, { hdr.h.a, hdr.h.b, hdr.h.c }, 32w65536);
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
