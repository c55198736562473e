// table_action_params: action parameters of several widths (48, 9, 16, 8 and
// 1 bits) from an STF `add` reach the action with their exact values.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<48> mac;
    bit<16> v16;
    bit<8>  v8;
    bit<8>  flag;
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
    action set(bit<48> mac, bit<9> port, bit<16> v16, bit<8> v8, bit<1> flag) {
        hdr.h.mac = mac;
        sm.egress_spec = port;
        hdr.h.v16 = v16;
        hdr.h.v8 = v8;
        hdr.h.flag = (bit<8>)flag;
    }
    table t {
        key = {
            hdr.h.k : exact;
        }
        actions = { set; NoAction; }
        default_action = NoAction();
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
