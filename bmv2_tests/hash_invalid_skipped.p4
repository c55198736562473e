// hash_invalid_skipped: fields of an invalid header contribute nothing to a
// hash input: hash({opt.v, h.a}) equals hash({h.a}) when opt is invalid.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  kind;   // 1 -> opt follows h
    bit<16> a;
    bit<16> r;
}

header opt_t {
    bit<16> v;
}

struct headers_t {
    h_t h;
    opt_t opt;
}

struct meta_t {
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            1: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hash(hdr.h.r, HashAlgorithm.crc16, 16w0, { hdr.opt.v, hdr.h.a }, 32w65536);
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
        pkt.emit(hdr.opt);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
