// resubmit_twice: a packet can be resubmitted again from a resubmitted
// pass; each pass gets the metadata of the field list as set by the previous
// pass.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> passes;   // meta.count seen in the final pass
    bit<8> inst;
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> count;
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
        if (meta.count < 2) {
            meta.count = meta.count + 1;
            resubmit_preserving_field_list(1);
        } else {
            hdr.h.passes = meta.count;
            hdr.h.inst = (bit<8>)sm.instance_type;
            sm.egress_spec = 1;
        }
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
