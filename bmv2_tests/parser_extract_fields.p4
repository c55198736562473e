// parser_extract_fields: extract() splits bytes into fields MSB first,
// including fields that are not byte aligned (1, 3, 4, 7, 13 bits); the
// deparser packs them back; unparsed bytes follow unchanged.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header bits_t {
    bit<4>  v;
    bit<4>  ihl;
    bit<3>  flags;
    bit<13> frag;
    bit<1>  flag;
    bit<7>  rest;
    bit<16> x;
}

struct headers_t {
    ethernet_t ethernet;
    bits_t     b;
}

struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        pkt.extract(hdr.b);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<4> t = hdr.b.v;
        hdr.b.v = hdr.b.ihl;
        hdr.b.ihl = t;
        hdr.b.frag = hdr.b.frag + 1;
        hdr.b.flag = ~hdr.b.flag;
        hdr.b.x = (bit<8>)hdr.b.flags ++ (bit<8>)hdr.b.rest;
        hdr.ethernet.srcAddr = hdr.ethernet.dstAddr;
        sm.egress_spec = 1;
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.b);
    }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
