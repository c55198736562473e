// table_lpm: in an lpm table the entry with the longest matching prefix wins,
// whatever the order the entries were added in; a /0 entry matches
// everything; with no matching entry the default action (drop) runs.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> addr;
    bit<8>  id;     // which entry matched
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
    action fwd(bit<9> port, bit<8> id) {
        sm.egress_spec = port;
        hdr.h.id = id;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table t {
        key = {
            hdr.h.addr : lpm;
        }
        actions = { fwd; drop; }
        default_action = drop();
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
