// Explicit casts between bit<W>, int<W>, bool, bit<1>, a serializable enum and a new type.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

enum bit<8> Color_t {
    RED   = 1,
    GREEN = 2
}
type bit<16> Tag_t;

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<8>  u8;
    int<8>  s8;
    bit<16> u16;
    bit<4>  u4;
    int<16> s16;
    bit<1>  b1;
    bool    flag;
    bit<8>  color_raw;
    Tag_t   tag;
    bit<16> tag_raw;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        meta.u8 = hdr.ethernet.dstAddr[7:0];
        meta.s8 = (int<8>)meta.u8;
        meta.u16 = (bit<16>)meta.u8;
        meta.u4 = (bit<4>)meta.u8;
        meta.s16 = (int<16>)meta.s8;
        meta.u8 = (bit<8>)meta.s8;
        meta.flag = (bool)meta.u8[0:0];
        meta.b1 = (bit<1>)meta.flag;
        meta.color_raw = (bit<8>)Color_t.GREEN;
        Color_t c = (Color_t)meta.color_raw;
        meta.tag = (Tag_t)meta.u16;
        meta.tag_raw = (bit<16>)meta.tag;
        if (c == Color_t.GREEN && meta.flag) {
            standard_metadata.egress_spec = 1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
