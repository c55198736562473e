// table_ternary_prio: in a ternary table, among the entries whose
// value/mask match, the one with the highest STF priority wins regardless of
// insertion order; `*` nibbles are don't-care; an omitted key is a wildcard.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<16> w;
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
        sm.egress_spec = 1;
    }
    action on_miss() {
        hdr.h.v = 0xEE;
        sm.egress_spec = 2;
    }
    table t {
        key = {
            hdr.h.k : ternary;
            hdr.h.w : ternary;
        }
        actions = { setv; on_miss; }
        default_action = on_miss();
    }
    apply {
        t.apply();
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
