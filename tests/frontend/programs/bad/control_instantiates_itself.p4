// BAD: a control that instantiates itself among its locals would contain itself (p4c: "Cannot refer to control inside itself")
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) { state start { pk.extract(hdr.h); transition accept; } }
control V(inout H hdr, inout M m) { apply {} }
control Nest(inout H hdr) {
    Nest() inner; // expect-error: itself
    apply { inner.apply(hdr); }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { Nest() n; apply { n.apply(hdr); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
