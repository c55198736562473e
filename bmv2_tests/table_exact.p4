// table_exact: an exact-match table on two keys hits only when both keys are
// equal to an entry's; the entry's action runs with its parameters; any other
// key runs the default action.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k8;
    bit<16> k16;
    bit<8>  res;
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
    action set_out(bit<8> v, bit<9> port) {
        hdr.h.res = v;
        sm.egress_spec = port;
    }
    action on_miss() {
        hdr.h.res = 0xEE;
        sm.egress_spec = 3;
    }
    table t {
        key = {
            hdr.h.k8  : exact;
            hdr.h.k16 : exact;
        }
        actions = { set_out; on_miss; }
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
