// table_valid_key: a header's validity (hdr.opt.isValid()) can be an exact
// key; STF names it hdr.opt.$valid$ and matches 1 (valid) or 0 (invalid).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> kind;   // 1 -> opt follows
    bit<8> v;
}

header opt_t {
    bit<8> o;
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
    action setv(bit<8> v) {
        hdr.h.v = v;
    }
    table t {
        key = {
            hdr.opt.isValid() : exact;
            hdr.h.kind        : exact;
        }
        actions = { setv; NoAction; }
        default_action = NoAction();
    }
    apply {
        t.apply();
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
