// parser_verify: verify(cond, err) with a false condition stops parsing with
// that error (here a program-defined error); the packet is NOT dropped,
// headers extracted before stay valid, the next header stays invalid and
// its bytes remain payload.
#include <core.p4>
#include <v1model.p4>

error {
    BadVersion
}

header rep_t {
    bit<8> err_bad;    // parser_error == BadVersion
    bit<8> err_none;   // parser_error == NoError
    bit<8> h1_valid;
    bit<8> h2_valid;
}

header h1_t {
    bit<8> version;
    bit<8> len;
}

header h2_t {
    bit<16> v;
}

struct headers_t {
    rep_t rep;
    h1_t  h1;
    h2_t  h2;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h1);
        verify(hdr.h1.version == 4, error.BadVersion);
        pkt.extract(hdr.h2);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err_bad = (sm.parser_error == error.BadVersion) ? 8w1 : 8w0;
        hdr.rep.err_none = (sm.parser_error == error.NoError) ? 8w1 : 8w0;
        hdr.rep.h1_valid = hdr.h1.isValid() ? 8w1 : 8w0;
        hdr.rep.h2_valid = hdr.h2.isValid() ? 8w1 : 8w0;
        if (hdr.h2.isValid()) {
            hdr.h2.v = hdr.h2.v + 1;
        }
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
        pkt.emit(hdr.h1);
        pkt.emit(hdr.h2);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
