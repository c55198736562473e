// register_control_plane: STF register_write sets a cell that the data plane
// then reads; data-plane writes persist; register_reset sets every cell back
// to 0 (register_reset.stf, through a wrapper that includes this file).
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  op;    // 0: read, 1: write val
    bit<8>  idx;
    bit<32> val;
    bit<32> res;   // value read (op 0) or written (op 1)
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
    register<bit<32>>(4) r;
    apply {
        if (hdr.h.op == 0) {
            r.read(hdr.h.res, (bit<32>)hdr.h.idx);
        } else {
            r.write((bit<32>)hdr.h.idx, hdr.h.val);
            hdr.h.res = hdr.h.val;
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
