// BAD (BMv2 back end, without --emit-externs): an instance of an extern object type the
// program declares itself; p4c reports it at the extern's declaration
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
extern rate_limiter { // expect-error: unknown
    rate_limiter(bit<32> buckets);
    bit<8> admit(in bit<16> flow);
}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) { state start { pk.extract(hdr.h); transition accept; } }
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    rate_limiter(32w64) limiter;
    apply { m.x = limiter.admit(hdr.h.b); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
