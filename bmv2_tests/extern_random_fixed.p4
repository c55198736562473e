// extern_random_fixed: random(result, lo, hi) with lo == hi always yields lo,
// for constant and for run-time bounds, at several widths.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  lo;     // input: run-time bound
    bit<8>  r8;
    bit<16> r16;
    bit<32> r32;
    bit<8>  rt;
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        random(hdr.h.r8, 8w7, 8w7);
        random(hdr.h.r16, 16w0xBEEF, 16w0xBEEF);
        random(hdr.h.r32, 32w0, 32w0);
        random(hdr.h.rt, hdr.h.lo, hdr.h.lo);
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
