// meta_egress_start: at the start of egress, egress_port is the port chosen in
// ingress, egress_spec reads 0, and ingress_port, packet_length, instance_type
// and user metadata written in ingress are still there.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8>  want;        // input: the port ingress sends the packet to
    bit<16> eg_port;     // egress_port seen in egress
    bit<16> eg_spec;     // egress_spec seen at the start of egress
    bit<16> ig_port;     // ingress_port seen in egress
    bit<32> inst;        // instance_type seen in egress
    bit<32> len;         // packet_length seen in egress
    bit<8>  mval;        // user metadata written in ingress, read in egress
}

struct headers_t {
    rep_t rep;
}

struct meta_t {
    bit<8> val;
}

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>)hdr.rep.want;
        meta.val = 0x5A;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.eg_spec = (bit<16>)sm.egress_spec;
        hdr.rep.eg_port = (bit<16>)sm.egress_port;
        hdr.rep.ig_port = (bit<16>)sm.ingress_port;
        hdr.rep.inst = sm.instance_type;
        hdr.rep.len = sm.packet_length;
        hdr.rep.mval = meta.val;
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
