// table_mixed_keys: a table with exact, ternary and lpm keys together is
// priority based: among matching entries the highest STF priority wins even
// when another entry has a longer prefix.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  e;
    bit<8>  t;
    bit<16> p;
    bit<8>  v;
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
    action setv(bit<8> v) {
        hdr.h.v = v;
    }
    table tbl {
        key = {
            hdr.h.e : exact;
            hdr.h.t : ternary;
            hdr.h.p : lpm;
        }
        actions = { setv; NoAction; }
        default_action = NoAction();
    }
    apply {
        tbl.apply();
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
