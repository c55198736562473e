// recirc_basic: recirculate_preserving_field_list(n) in egress sends the
// DEPARSED packet (egress changes included, here an added header) back to the
// parser; the new pass has instance_type 4, packet_length = the new size,
// the field list kept and other metadata zeroed; the recirculating pass
// itself is not transmitted.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8>  inst;
    bit<8>  keep;
    bit<8>  lose;
    bit<32> len;
}

header tag_t {
    bit<16> v;
}

struct headers_t {
    rep_t rep;
    tag_t tag;
}

struct meta_t {
    @field_list(1)
    bit<8> keep;
    bit<8> lose;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 4) {
            hdr.rep.inst = (bit<8>)sm.instance_type;
            hdr.rep.keep = meta.keep;
            hdr.rep.lose = meta.lose;
            hdr.rep.len = sm.packet_length;
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == 1) {
            hdr.tag.setValid();
            hdr.tag.v = 0xABCD;
            meta.keep = 0x5C;
            meta.lose = 0x77;
            recirculate_preserving_field_list(1);
        }
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
    }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
        pkt.emit(hdr.tag);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
