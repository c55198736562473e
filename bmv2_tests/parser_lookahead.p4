// parser_lookahead: lookahead<T>() reads upcoming bits without consuming
// them, both in an assignment and as a select key; the next extract starts
// at the same position; lookahead past the end fails with PacketTooShort.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<16> peek;    // lookahead<bit<16>>() taken in the parser
    bit<8>  which;   // 0A: a extracted, 0B: b extracted, 00: neither
    bit<8>  err;     // parser_error == PacketTooShort
}

header a_t {
    bit<8> type;     // 1
    bit<8> v;
}

header b_t {
    bit<8>  type;    // anything but 1
    bit<16> w;
}

struct headers_t {
    rep_t rep;
    a_t   a;
    b_t   b;
}

struct meta_t {
    bit<16> peek;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        meta.peek = pkt.lookahead<bit<16>>();
        transition select(pkt.lookahead<bit<8>>()) {
            1: parse_a;
            default: parse_b;
        }
    }
    state parse_a {
        pkt.extract(hdr.a);
        transition accept;
    }
    state parse_b {
        pkt.extract(hdr.b);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.peek = meta.peek;
        hdr.rep.which = 0;
        if (hdr.a.isValid()) {
            hdr.rep.which = 0x0A;
        }
        if (hdr.b.isValid()) {
            hdr.rep.which = 0x0B;
        }
        hdr.rep.err = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
