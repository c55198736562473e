// BAD: a control applying itself by direct invocation (recursion; p4c: "Cannot refer to control inside itself")
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; }
struct H { h_t h; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) { state start { pk.extract(hdr.h); transition accept; } }
control V(inout H hdr, inout M m) { apply {} }
control Count(inout H hdr) {
    apply {
        hdr.h.a = hdr.h.a - 1;
        if (hdr.h.a != 0) {
            Count.apply(hdr); // expect-error: itself
        }
    }
}
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { Count.apply(hdr); } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
