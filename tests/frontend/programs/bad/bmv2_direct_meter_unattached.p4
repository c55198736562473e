// BAD (BMv2 back end): a direct meter that an action reads but no table lists in 'meters' (p4c: not associated with any table; unused, it is only an 'unused' warning).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct H { h_t h; }
struct M { bit<8> x; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) { state start { pk.extract(hdr.h); transition accept; } }
control V(inout H hdr, inout M m) { apply {} }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.h); } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    direct_meter<bit<8>>(MeterType.packets) dm; // expect-error: not associated
    action a() { dm.read(m.x); }
    table t { key = { hdr.h.b: exact; } actions = { a; } }
    apply { t.apply(); }
}
V1Switch(P(), V(), I(), E(), C(), D()) main;
