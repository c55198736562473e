// BAD: the one-argument extract of a header that holds a varbit field (its size must be given)
#include <core.p4>
#include <v1model.p4>
header opts_t { bit<8> len; varbit<320> data; }
struct H { opts_t opts; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start {
        pk.extract(hdr.opts); // expect-error: varbit
        transition accept;
    }
}
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.opts); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
