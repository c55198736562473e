// action_profile: entries point to members (an action and its data) by handle; a profile
// shared by two tables; a member modified and one deleted and re-created (its handle reused);
// hit/miss and action_run through a member; a miss runs no action, not even default_action.
// (A shared profile in a switch on action_run aborts BMv2: profile_shared_action_run.)
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;
    bit<8> a;
    bit<8> b;
    bit<8> sw;
    bit<8> c;
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
    action_profile(32w8) ap;
    action_profile(32w4) ap3;

    action set(bit<8> v, bit<9> port) {
        hdr.h.a = v;
        sm.egress_spec = port;
    }
    action other(bit<8> v) {
        hdr.h.b = v;
        sm.egress_spec = 2;
    }
    action mark(bit<8> v) {
        hdr.h.c = v;
    }

    // p4c-bm2-ss ignores default_action with an implementation (it warns); so does ours
    table t {
        key = { hdr.h.k: exact; }
        actions = { set; other; NoAction; }
        implementation = ap;
        default_action = other(0x77);
    }
    table t2 {
        key = { hdr.h.a: exact; }
        actions = { set; other; NoAction; }
        implementation = ap;
        default_action = NoAction();
    }
    table t3 {
        key = { hdr.h.c: exact; }
        actions = { mark; NoAction; }
        implementation = ap3;
    }

    apply {
        if (t.apply().hit) {
            hdr.h.sw = 1;
        } else {
            hdr.h.sw = 3;
            sm.egress_spec = 3;
        }
        if (t2.apply().hit) {
            hdr.h.sw = hdr.h.sw | 0x10;
        }
        switch (t3.apply().action_run) {
            mark: { hdr.h.sw = hdr.h.sw | 0x20; }
            default: { hdr.h.sw = hdr.h.sw | 0x40; }
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
