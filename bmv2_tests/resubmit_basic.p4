// resubmit_basic: resubmit_preserving_field_list(n) re-runs ingress on the
// ORIGINAL packet (first-pass header changes are lost) with instance_type 6,
// the @field_list(n) metadata kept and all other metadata zeroed (egress_spec
// included); packet_length is the original length.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  a;       // changed in the first pass only
    bit<8>  inst;    // instance_type seen in the second pass
    bit<8>  keep;    // @field_list(1) metadata
    bit<8>  lose;    // other metadata
    bit<8>  espec;   // egress_spec at the start of the second pass
    bit<32> len;     // packet_length seen in the second pass
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> keep;
    bit<8> lose;
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
            meta.lose = 0x99;
            hdr.h.a = 0xEE;
            sm.egress_spec = 3;
            resubmit_preserving_field_list(1);
        } else {
            hdr.h.inst = (bit<8>)sm.instance_type;
            hdr.h.keep = meta.keep;
            hdr.h.lose = meta.lose;
            hdr.h.espec = (bit<8>)sm.egress_spec;
            hdr.h.len = sm.packet_length;
            sm.egress_spec = 2;
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
