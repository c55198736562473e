// register_wide: register<bit<32>> and register<bit<64>> keep full-width
// values across packets and wrap modulo 2^32 / 2^64 on addition.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  idx;
    bit<32> a32;
    bit<64> a64;
    bit<32> o32;   // value read before the update
    bit<64> o64;
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
    register<bit<32>>(2) r32;
    register<bit<64>>(2) r64;
    apply {
        bit<32> v32;
        bit<64> v64;
        r32.read(v32, (bit<32>)hdr.h.idx);
        r64.read(v64, (bit<32>)hdr.h.idx);
        hdr.h.o32 = v32;
        hdr.h.o64 = v64;
        r32.write((bit<32>)hdr.h.idx, v32 + hdr.h.a32);
        r64.write((bit<32>)hdr.h.idx, v64 + hdr.h.a64);
        sm.egress_spec = 1;
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
