// profile_shared_action_run: a switch on action_run follows the member's action when the
// action_profile is shared by two tables, and a miss (no action ran) takes no case.
// Embedded switch only: BMv2 aborts on it (bmv2_tests/test_on_bmv2.py OURS_ONLY,
// docs/interpreter.md "Where BMv2 and the embedded switch differ").
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> a;
    bit<8> b;
    bit<8> sw;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_profile(32w4) ap;

    action set(bit<8> v, bit<9> port) {
        hdr.h.a = v;
        sm.egress_spec = port;
    }
    action other(bit<8> v) {
        hdr.h.b = v;
        sm.egress_spec = 2;
    }

    table t {
        key = { hdr.h.k: exact; }
        actions = { set; other; NoAction; }
        implementation = ap;
    }
    table t2 {
        key = { hdr.h.a: exact; }
        actions = { set; other; NoAction; }
        implementation = ap;
    }

    apply {
        switch (t.apply().action_run) {
            set: { hdr.h.sw = 1; }
            other: { hdr.h.sw = 2; }
            NoAction: { hdr.h.sw = 3; sm.egress_spec = 3; }
        }
        if (t2.apply().hit) {
            hdr.h.sw = hdr.h.sw | 0x10;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), ingress(), egress(), CC(), D()) main;
