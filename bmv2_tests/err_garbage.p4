// err_garbage: packets too short for an Ethernet parser (runt frames) are not
// dropped: ingress runs with parser_error = PacketTooShort and the raw bytes
// go out unchanged as payload; a full-size frame parses normally.
#include <core.p4>
#include <v1model.p4>

header rep_t {
    bit<8> err_pts;
    bit<8> eth_valid;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    rep_t      rep;
    ethernet_t ethernet;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.rep.setValid();
        hdr.rep.err_pts = (sm.parser_error == error.PacketTooShort) ? 8w1 : 8w0;
        hdr.rep.eth_valid = hdr.ethernet.isValid() ? 8w1 : 8w0;
        if (hdr.ethernet.isValid()) {
            hdr.ethernet.srcAddr = 0x0000000000AA;
        }
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.rep);
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
