// BAD: extracting a header with two varbit fields; p4c's type checker reports the pair at the first of them
#include <core.p4>
#include <v1model.p4>
header opts_t {
    bit<8> len;
    varbit<32> a; // expect-error: varbit
    varbit<32> b;
}
struct H { opts_t opts; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.opts, 16); transition accept; }
}
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.opts); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
