// table_key_slice: a key can be a bit slice of a field; only the sliced bits
// take part in the match (entries given as const entries, whose key values
// are values of the slice itself).
#include <core.p4>
#include <v1model.p4>

header h_t {
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
    }
    table t {
        key = {
            hdr.h.w[15:8] : exact @name("w_hi");
            hdr.h.w[3:0]  : ternary @name("w_lo");
        }
        actions = { setv; NoAction; }
        const entries = {
            (0x12, _)             : setv(1);
            (0xAB, 0x5 &&& 0xF)   : setv(2);
            (0xAB, _)             : setv(3);
        }
        default_action = NoAction();
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
