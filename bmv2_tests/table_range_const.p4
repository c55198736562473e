// table_range_const: range keys (v1model `range`) match lo..hi inclusive;
// in const entries the earlier entry wins when ranges overlap; a key outside
// every range runs the default action.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  r;
    bit<16> r16;
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
    table t {
        key = {
            hdr.h.r   : range;
            hdr.h.r16 : range;
        }
        actions = { setv; }
        const entries = {
            (1 .. 10, 0 .. 0xFFFF)        : setv(1);
            (5 .. 20, 0 .. 0xFFFF)        : setv(2);
            (30 .. 30, 0x0100 .. 0x01FF)  : setv(3);
            (30 .. 30, 0 .. 0xFFFF)       : setv(4);
        }
        default_action = setv(0xEE);
    }
    apply {
        t.apply();
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
