// err_header_too_short: a varbit extract asking for more bits than the
// varbit's maximum fails with error.HeaderTooShort when the packet has the
// bytes, or PacketTooShort when it does not (that check comes first); the
// header stays invalid and the bytes stay payload.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> err_hts;    // parser_error == HeaderTooShort
    bit<8> err_pts;    // parser_error == PacketTooShort
    bit<8> err_none;   // parser_error == NoError
    bit<8> opt_valid;
    bit<8> tail_valid;
}

header len_t {
    bit<8> n;          // option length in bytes
}

header opt_t {
    varbit<64> data;   // at most 8 bytes
}

header tail_t {
    bit<8> t;
}

struct headers_t {
    rep_t  rep;
    len_t  len;
    opt_t  opt;
    tail_t tail;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.len);
        pkt.extract(hdr.opt, (bit<32>)hdr.len.n * 8);
        pkt.extract(hdr.tail);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err_hts = (sm.parser_error == error.HeaderTooShort) ? 8w1 : 8w0;
        hdr.rep.err_pts = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        hdr.rep.err_none = (sm.parser_error == error.NoError) ? 8w1 : 8w0;
        hdr.rep.opt_valid = hdr.opt.isValid() ? 8w1 : 8w0;
        hdr.rep.tail_valid = hdr.tail.isValid() ? 8w1 : 8w0;
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
        pkt.emit(hdr.len);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.tail);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
