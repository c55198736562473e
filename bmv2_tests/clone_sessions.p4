// clone_sessions: the clone survives mark_to_drop of the original; a clone
// to an unconfigured session does nothing; when clone is called twice in one
// pass only the last session is used.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  mode;
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
        sm.egress_spec = 1;
        if (hdr.h.mode == 1) {
            clone(CloneType.I2E, 5);
            mark_to_drop(sm);
        } else if (hdr.h.mode == 2) {
            clone(CloneType.I2E, 9);
        } else if (hdr.h.mode == 3) {
            clone(CloneType.I2E, 6);
            clone(CloneType.I2E, 5);
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
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
