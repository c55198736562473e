// pre_same_port: two nodes of one group that both contain a port produce two
// copies on that port, one per rid, in node-association order.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  grp;     // multicast group to use (0 = none)
    bit<16> rid;     // egress_rid seen in egress
    bit<32> inst;    // instance_type seen in egress
    bit<16> eport;   // egress_port seen in egress
    bit<16> iport;   // ingress_port seen in egress
    bit<8>  mval;    // user metadata written in ingress
}

struct headers_t {
    h_t h;
}

struct meta_t {
    bit<8> val;
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
        sm.mcast_grp = (bit<16>)hdr.h.grp;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.rid = sm.egress_rid;
        hdr.h.inst = sm.instance_type;
        hdr.h.eport = (bit<16>)sm.egress_port;
        hdr.h.iport = (bit<16>)sm.ingress_port;
        hdr.h.mval = meta.val;
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
