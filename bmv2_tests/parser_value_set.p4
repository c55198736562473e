// parser_value_set: a value_set case in select matches only values the control
// plane added; with an empty set it never matches and the other cases and
// default decide.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> kind;
    bit<8> path;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    bit<8> path;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    value_set<bit<8>>(4) kinds;

    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            kinds: s_vs;
            5: s5;
            default: s_def;
        }
    }
    state s_vs {
        meta.path = 1;
        transition accept;
    }
    state s5 {
        meta.path = 2;
        transition accept;
    }
    state s_def {
        meta.path = 3;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.path = meta.path;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
