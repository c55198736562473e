// BAD (BMv2 back end): a header type with two varbit fields; only emitted, never extracted, so p4c's front end accepts it and BMv2's header conversion refuses it at the header
#include <core.p4>
#include <v1model.p4>
header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tlv_t { // expect-error: varbit
    bit<8> kind;
    varbit<64> first;
    varbit<64> second;
}
struct H { eth_t eth; tlv_t tlv; }
struct M { }
parser P(packet_in pk, out H hdr, inout M m, inout standard_metadata_t sm) { state start { pk.extract(hdr.eth); transition accept; } }
control V(inout H hdr, inout M m) { apply {} }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { sm.egress_spec = 1; } }
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply {} }
control C(inout H hdr, inout M m) { apply {} }
control D(packet_out pk, in H hdr) { apply { pk.emit(hdr.eth); pk.emit(hdr.tlv); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
