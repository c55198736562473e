// clone_to_multicast: a clone session bound to a multicast group
// (mirroring_add_mc) replicates the I2E copy to every (port, rid) of the
// group; the copies keep instance_type 1 and carry their egress_rid.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<32> inst;
    bit<16> rid;
    bit<16> eport;
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
        clone(CloneType.I2E, 4);
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.inst = sm.instance_type;
        hdr.h.rid = sm.egress_rid;
        hdr.h.eport = (bit<16>)sm.egress_port;
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
