// action_selector (crc16 over two selector fields): groups of members chosen by
// hash % size in ascending member-handle order (BMv2's group selection), an emptied group
// makes the table miss, an entry pointing to a member of the selector directly.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8>  k;
    bit<16> f1;
    bit<8>  f2;
    bit<8>  res;
}

struct headers_t {
    h_t h;
}

struct meta_t {
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) sel;

    action pick(bit<8> id, bit<9> port) {
        hdr.h.res = id;
        sm.egress_spec = port;
    }

    table t {
        key = {
            hdr.h.k: exact;
            hdr.h.f1: selector;
            hdr.h.f2: selector;
        }
        actions = { pick; NoAction; }
        implementation = sel;
        default_action = NoAction();
    }

    apply {
        if (t.apply().miss) {
            hdr.h.res = 0xEE;
            sm.egress_spec = 3;
        }
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(P(), VC(), ingress(), egress(), CC(), D()) main;
