// meta_exit: `exit` in ingress (at apply level or inside a table action) skips
// the rest of ingress; statements before it keep their effect, and egress
// still runs.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> k;   // selects the path
    bit<8> a;   // written before the exit point
    bit<8> b;   // written after the apply-level exit
    bit<8> c;   // written after the table
    bit<8> d;   // written by the table action
    bit<8> e;   // written in egress
}

struct headers_t {
    h_t h;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action act_exit() {
        hdr.h.d = 0xD0;
        exit;
    }
    action act_noexit() {
        hdr.h.d = 0xD1;
    }
    table t {
        key = { hdr.h.k : exact; }
        actions = { act_exit; act_noexit; }
        const entries = {
            2 : act_exit();
        }
        default_action = act_noexit();
    }
    apply {
        hdr.h.a = 0xA0;
        sm.egress_spec = 1;
        if (hdr.h.k == 1) {
            exit;
        }
        hdr.h.b = 0xB0;
        t.apply();
        hdr.h.c = 0xC0;
        sm.egress_spec = 2;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.e = 0xE0;
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
