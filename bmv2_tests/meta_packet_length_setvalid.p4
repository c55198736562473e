// meta_packet_length_setvalid: in simple_switch, setValid() on an invalid
// header adds its size to the packet length seen in egress, and setInvalid()
// on a valid header subtracts it (BMv2 primitives add_header/remove_header
// update the packet-length register that egress copies into packet_length).
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8>  mode;     // 0: nothing, 1: add a 4-byte header, 2: remove opt
    bit<32> len_in;   // packet_length in ingress
    bit<32> len_eg;   // packet_length in egress
}

header add_t {
    bit<32> v;
}

header opt_t {
    bit<16> v;
}

struct headers_t {
    rep_t rep;
    add_t add;
    opt_t opt;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.rep);
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.len_in = sm.packet_length;
        if (hdr.rep.mode == 1) {
            hdr.add.setValid();
            hdr.add.v = 0xA5A5A5A5;
        } else if (hdr.rep.mode == 2) {
            hdr.opt.setInvalid();
        }
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.len_eg = sm.packet_length;
    }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
        pkt.emit(hdr.add);
        pkt.emit(hdr.opt);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
