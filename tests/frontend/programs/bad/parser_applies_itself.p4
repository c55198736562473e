// BAD: a sub-parser invoking itself from one of its states (p4c: "Cannot refer parser inside itself")
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser Opt(packet_in pk, inout H hdr) {
    state start {
        Opt.apply(pk, hdr); // expect-error: itself
        transition accept;
    }
}
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); Opt.apply(pk, hdr); transition accept; }
}
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
