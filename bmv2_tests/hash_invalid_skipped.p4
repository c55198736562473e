// hash_invalid_skipped: an invalid header contributes nothing to a hash input:
// hash({opt, h.a}) equals hash({h.a}) when opt is invalid. The list names the whole
// header: p4c-bm2-ss copies it with assign_header, which keeps it invalid, and BMv2 leaves an
// invalid header out of a calculation. A field of it (opt.v) would be copied into a scalar
// and hashed with whatever value the reused PHV held: stale from an earlier packet or 0
// (docs/interpreter.md, "Where BMv2 and the embedded switch differ").
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
        hash(hdr.h.r, HashAlgorithm.crc16, 16w0, { hdr.opt, hdr.h.a }, 32w65536);
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
