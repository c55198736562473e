// err_no_match: a select with no matching case and no default ends parsing as
// at accept, with parser_error still NoError (not the spec's NoMatch: p4c's BMv2
// back end emits no default transition, and BMv2 ends the parse on a missing
// one); the packet is not dropped, headers extracted so far stay valid, the next
// state's header stays invalid and its bytes remain payload.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> err_nomatch;   // parser_error == NoMatch
    bit<8> err_none;      // parser_error == NoError
    bit<8> h_valid;
    bit<8> n_valid;
}

header h_t {
    bit<8> kind;
}

header n_t {
    bit<16> v;
}

struct headers_t {
    rep_t rep;
    h_t   h;
    n_t   n;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition select(hdr.h.kind) {
            1: parse_n;
            2: parse_n;
        }
    }
    state parse_n {
        pkt.extract(hdr.n);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err_nomatch = (sm.parser_error == error.NoMatch) ? 8w1 : 8w0;
        hdr.rep.err_none = (sm.parser_error == error.NoError) ? 8w1 : 8w0;
        hdr.rep.h_valid = hdr.h.isValid() ? 8w1 : 8w0;
        hdr.rep.n_valid = hdr.n.isValid() ? 8w1 : 8w0;
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
        pkt.emit(hdr.h);
        pkt.emit(hdr.n);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
