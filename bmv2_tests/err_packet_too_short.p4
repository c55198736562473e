// err_packet_too_short: extracting a header longer than the bytes left fails
// with error.PacketTooShort; the header stays invalid, earlier headers stay
// valid, and the leftover bytes are passed on as payload.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> err_pts;    // parser_error == PacketTooShort
    bit<8> a_valid;
    bit<8> b_valid;
}

header a_t {
    bit<16> x;
}

header b_t {
    bit<32> y;
}

struct headers_t {
    rep_t rep;
    a_t   a;
    b_t   b;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.a);
        pkt.extract(hdr.b);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err_pts = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        hdr.rep.a_valid = hdr.a.isValid() ? 8w1 : 8w0;
        hdr.rep.b_valid = hdr.b.isValid() ? 8w1 : 8w0;
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
