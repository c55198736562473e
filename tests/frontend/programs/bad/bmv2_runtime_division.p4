// BAD: a run-time value divided by 3: BMv2 cannot divide, and p4c reduces only divisions by
// powers of two ("could not evaluate expression at compilation time").
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> x; bit<8> y; bit<8> r; }
struct H { h_t h; }
struct M { }
const bit<8> SIXTEEN = 16;
const bit<8> THREE = 3;
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    apply {
        hdr.h.r = hdr.h.x / 3;  // expect-error: compilation time
        sm.egress_spec = 1;
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
