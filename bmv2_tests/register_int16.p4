// register_int16: register<int<16>> stores signed values: reading back a
// negative value gives a negative int<16> (compares < 0), and addition wraps
// in two's complement.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  idx;
    int<16> d;     // signed delta
    bit<16> old;   // bits of the value read
    bit<16> nv;    // bits of the value written
    bit<8>  neg;   // 1 when the new value is < 0
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
    register<int<16>>(2) rs;
    apply {
        int<16> v;
        rs.read(v, (bit<32>)hdr.h.idx);
        hdr.h.old = (bit<16>)v;
        v = v + hdr.h.d;
        rs.write((bit<32>)hdr.h.idx, v);
        hdr.h.nv = (bit<16>)v;
        hdr.h.neg = (v < 0) ? 8w1 : 8w0;
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
