// parser_ops: lookahead and parser value sets, for the differential fuzz test (native vs
// Python): lookahead of whole and non-byte-aligned widths (bit<12>, bit<64>) and past the
// end of the packet (PacketTooShort), a two-field value set with masks filled by the
// control plane at random, and a one-field value set beside constant cases.
#include <core.p4>
#include <v1model.p4>

header a_t {
    bit<8>  kind;
    bit<16> tag;
}

header b_t {
    bit<12> peek12;
    bit<4>  lo;
    bit<64> peek64;
    bit<8>  path;
}

struct pair_t {
    bit<8>  kind;
    bit<16> tag;
}

struct headers_t {
    a_t a;
    b_t b;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    value_set<pair_t>(4) pairs;
    value_set<bit<8>>(2) kinds;

    state start {
        hdr.b.setValid();
        hdr.b.peek12 = pkt.lookahead<bit<12>>();
        hdr.b.peek64 = pkt.lookahead<bit<64>>();
        pkt.extract(hdr.a);
        transition select(hdr.a.kind, hdr.a.tag) {
            pairs: by_pair;
            default: by_kind;
        }
    }
    state by_pair {
        hdr.b.path = 1;
        transition accept;
    }
    state by_kind {
        transition select(pkt.lookahead<bit<8>>()) {
            kinds: by_set;
            8w0x7f: by_const;
            default: accept;
        }
    }
    state by_set {
        hdr.b.path = 2;
        transition accept;
    }
    state by_const {
        hdr.b.path = 3;
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) { hdr.b.lo = 1; }
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
