// recirc_loop: a packet can recirculate several times; header changes
// accumulate across passes and field-list metadata carries a counter.
#include <core.p4>
#include <v1model.p4>

header c_t {
    bit<8> n;      // +1 in every egress pass
    bit<8> m;      // meta.cnt seen in ingress
    bit<8> inst;   // instance_type seen in ingress
}

struct headers_t {
    c_t c;
}

struct meta_t {
    @field_list(2)
    bit<8> cnt;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.c);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.c.m = meta.cnt;
        hdr.c.inst = (bit<8>)sm.instance_type;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.c.n = hdr.c.n + 1;
        if (hdr.c.n < 3) {
            meta.cnt = hdr.c.n;
            recirculate_preserving_field_list(2);
        }
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.c);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
