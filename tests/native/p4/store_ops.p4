#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct H { h_t h; }
struct M { }
parser P(packet_in pkt, out H hdr, inout M m, inout standard_metadata_t sm) {
    value_set<bit<8>>(4) vs;
    state start { pkt.extract(hdr.h); transition select(hdr.h.a) { vs: accept; default: accept; } }
}
control V(inout H hdr, inout M m) { apply { } }
control I(inout H hdr, inout M m, inout standard_metadata_t sm) {
    register<bit<8>>(4) r;
    counter(4, CounterType.packets_and_bytes) c;
    meter(2, MeterType.packets) mt;
    direct_counter(CounterType.packets_and_bytes) dc;
    action_profile(32w4) ap;
    action setb(bit<8> v) { hdr.h.b = v; sm.egress_spec = 1; }
    table t { key = { hdr.h.a: exact; } actions = { setb; NoAction; } counters = dc;
              default_action = NoAction(); }
    table u { key = { hdr.h.b: exact; } actions = { setb; NoAction; } implementation = ap; }
    apply {
        t.apply();
        u.apply();
        r.write(32w0, hdr.h.a);
        c.count(32w1);
        bit<2> col;
        mt.execute_meter(32w0, col);
    }
}
control E(inout H hdr, inout M m, inout standard_metadata_t sm) { apply { } }
control C(inout H hdr, inout M m) { apply { } }
control D(packet_out pkt, in H hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), V(), I(), E(), C(), D()) main;
