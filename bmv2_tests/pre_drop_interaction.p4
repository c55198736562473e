// pre_drop_interaction: mark_to_drop clears mcast_grp, so setting mcast_grp
// afterwards still multicasts while mark_to_drop afterwards cancels it; with
// mcast_grp set, egress_spec = 511 does not drop (multicast is decided
// before the drop check).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  mode;
    bit<16> rid;
    bit<32> inst;
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
    apply {
        if (hdr.h.mode == 1) {
            mark_to_drop(sm);
            sm.mcast_grp = 5;
        } else if (hdr.h.mode == 2) {
            sm.mcast_grp = 5;
            mark_to_drop(sm);
        } else if (hdr.h.mode == 3) {
            sm.mcast_grp = 5;
            sm.egress_spec = 511;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.inst = sm.instance_type;
    }
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
