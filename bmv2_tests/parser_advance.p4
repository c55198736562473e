// parser_advance: advance(n) skips n bits (run-time or constant amount); the
// skipped bytes are consumed and are not emitted again; advancing past the
// end of the packet fails with PacketTooShort.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> skip;   // bytes to skip after h
    bit<8> err;    // written: parser_error == PacketTooShort
}

header t_t {
    bit<16> x;
}

header u_t {
    bit<8> v;
}

struct headers_t {
    h_t h;
    t_t t;
    u_t u;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.advance((bit<32>)hdr.h.skip << 3);
        pkt.extract(hdr.t);
        pkt.advance(16);
        pkt.extract(hdr.u);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.err = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        if (hdr.t.isValid()) {
            hdr.t.x = hdr.t.x + 1;
        }
        if (hdr.u.isValid()) {
            hdr.u.v = hdr.u.v + 1;
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
        pkt.emit(hdr.h);
        pkt.emit(hdr.t);
        pkt.emit(hdr.u);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
