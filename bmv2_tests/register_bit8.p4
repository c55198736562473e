// register_bit8: register<bit<8>> cells start at 0, keep their value across
// packets, are independent per index, wrap modulo 2^8 on a read-add-write,
// and a write to an index >= size is ignored.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> op;    // 0: read-add-write, 1: write `inc` only
    bit<8> idx;
    bit<8> inc;
    bit<8> old;   // value read (op 0)
    bit<8> nv;    // value written
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
    register<bit<8>>(4) r8;
    apply {
        if (hdr.h.op == 0) {
            bit<8> v;
            r8.read(v, (bit<32>)hdr.h.idx);
            hdr.h.old = v;
            v = v + hdr.h.inc;
            r8.write((bit<32>)hdr.h.idx, v);
            hdr.h.nv = v;
        } else {
            r8.write((bit<32>)hdr.h.idx, hdr.h.inc);
            hdr.h.nv = hdr.h.inc;
        }
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
