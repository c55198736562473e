// table_action_run: switch (t.apply().action_run) branches on the action
// that ran, which on a miss is the default action; actions without a label
// go to the `default` branch.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> act;   // written by the action
    bit<8> sw;    // written by the switch branch
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action a1() {
        hdr.h.act = 0xA1;
    }
    action a2() {
        hdr.h.act = 0xA2;
    }
    action a3() {
        hdr.h.act = 0xA3;
    }
    table t {
        key = {
            hdr.h.a : exact;
        }
        actions = { a1; a2; a3; }
        default_action = a3();
    }
    apply {
        switch (t.apply().action_run) {
            a1: {
                hdr.h.sw = 1;
            }
            a3: {
                hdr.h.sw = 3;
            }
            default: {
                hdr.h.sw = 9;
            }
        }
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
