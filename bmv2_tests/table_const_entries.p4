// table_const_entries: `const entries` are installed at start-up without any
// control-plane command; in a ternary table the earlier of two matching
// entries wins and `_` matches anything.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> b;
    bit<8> va;
    bit<8> vb;
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
    action seta(bit<8> v) {
        hdr.h.va = v;
    }
    action setb(bit<8> v) {
        hdr.h.vb = v;
    }
    table t_exact {
        key = {
            hdr.h.a : exact;
        }
        actions = { seta; }
        const entries = {
            1 : seta(0x11);
            2 : seta(0x22);
        }
        default_action = seta(0xEE);
    }
    table t_tern {
        key = {
            hdr.h.b : ternary;
        }
        actions = { setb; NoAction; }
        const entries = {
            0x10 &&& 0xF0 : setb(0x01);
            0x01 &&& 0x0F : setb(0x02);
            _             : setb(0x03);
        }
        default_action = NoAction();
    }
    apply {
        t_exact.apply();
        t_tern.apply();
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
