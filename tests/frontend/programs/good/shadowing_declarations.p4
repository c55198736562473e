// Declarations that shadow others (p4c's [--Wwarn=shadow] warnings, exit status 0): action parameters, a local in apply, one in a nested block and the table property 'actions'.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
const bit<8> size = 3;
const bit<8> gl = 1;
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pk.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    bit<8> v = 0;
    bit<8> actions = 0;
    action both(bit<8> v, bit<8> gl) { hdr.h.a = v + gl; }
    table t { key = { hdr.h.b: exact; } actions = { both; NoAction; } }
    apply { t.apply(); bit<8> gl = 2; if (gl == 2) { bit<8> v = 1; hdr.h.a = v; } }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
