// resubmit_egress_view: a resubmitted packet that is then forwarded normally
// reaches egress with instance_type 0 (simple_switch sets NORMAL when it
// queues a unicast packet) and its field-list metadata still set.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> ig_inst;   // instance_type in the second ingress pass
    bit<8> eg_inst;   // instance_type in egress
    bit<8> keep;      // field-list metadata seen in egress
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> keep;
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
        if (sm.instance_type == 0) {
            meta.keep = 0x42;
            resubmit_preserving_field_list(1);
        } else {
            hdr.h.ig_inst = (bit<8>)sm.instance_type;
            sm.egress_spec = 1;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.eg_inst = (bit<8>)sm.instance_type;
        hdr.h.keep = meta.keep;
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
