// BAD: an untyped integer left of &&& takes the right operand's underlying bit<16>, so the
// set is of bit<16>, not of the key's enum type Kind (p4c's typeSet).
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
            0x1234 &&& Kind.B : mark(1);  // expect-error: type
        }
        default_action = NoAction();
    }
    apply { t.apply(); }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
