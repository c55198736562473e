// table_enum_key_mask: a ternary key of a serializable enum type takes masks whose
// left operand is an enum member (a set of Kind): Kind.A &&& 0xFF00 matches 0x12??.
// (A set of bit<16>, such as ((bit<16>)Kind.A) &&& 0xFF00, is refused, as by p4c.)
#include <core.p4>
#include <v1model.p4>
enum bit<16> Kind { A = 0x1234, B = 0x12FF }
header h_t { Kind k; bit<8> out_mark; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    action mark(bit<8> v) { hdr.h.out_mark = v; }
    table t {
        key = { hdr.h.k: ternary; }
        actions = { mark; NoAction; }
        const entries = {
            Kind.A &&& 0xFF00 : mark(1);
        }
        default_action = NoAction();
    }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
