// meta_fresh_per_packet: nothing carries over between packets: user metadata
// written by one packet reads 0 in the next, and a header extracted for one
// packet is invalid for the next unless extracted again.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> kind;         // 1 -> opt follows
    bit<8> seen_meta;    // meta.x at the start of ingress
    bit<8> seen_valid;   // opt.isValid()
}

header opt_t {
    bit<8> o;
}

struct headers_t {
    h_t h;
    opt_t opt;
}

struct meta_t {
    bit<8> x;
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
        hdr.h.seen_meta = meta.x;
        meta.x = 0x55;
        hdr.h.seen_valid = hdr.opt.isValid() ? 8w1 : 8w0;
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
