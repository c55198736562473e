// BAD (P4Runtime): a value_set of a tuple; p4c-bm2-ss 1.2.5 allows only bit<W>, a struct of bit<W> fields or a serializable enum.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { bit<8> path; }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) {
    value_set<tuple<bit<8>, bit<8>>>(4) vs;  // expect-error: Unsupported
    state start { pk.extract(hdr.h); transition select(hdr.h.a, hdr.h.b) { vs: hit; default: accept; } }
    state hit { hdr.h.a = 0xEE; transition accept; }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
