// refused_signed_wide: a signed int<128>, which the native engine does not hold (values over
// 64 bits are unsigned there): the program must run on the interpreter after one line
// naming it (tests/native/test_fallbacks.py).
#include <core.p4>
#include <v1model.p4>

header h_t {
    int<128> a;
    int<128> b;
}

struct headers_t { h_t h; }
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
        hdr.h.b = hdr.h.a + hdr.h.b;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
