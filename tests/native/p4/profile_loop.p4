// An action selector behind the UDP adapter (tests/native/test_profiles_loop.py): the frame
// is the adapter's Ethernet/IPv4/UDP wrapping (42 bytes, carried as is) and the datagram
// (kind, tag, flow); members set the egress port and write a tag equal to it.
#include <core.p4>
#include <v1model.p4>

header wrap_t {
    bit<64> w0;
    bit<64> w1;
    bit<64> w2;
    bit<64> w3;
    bit<64> w4;
    bit<16> w5;
}

header msg_t {
    bit<8> kind;
    bit<8> tag;
    bit<8> flow;
}

struct headers_t {
    wrap_t wrap;
    msg_t  msg;
}

struct meta_t {
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.wrap);
        pkt.extract(hdr.msg);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel;

    action fwd(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        hdr.msg.tag = tag;
    }
    action drop() {
        mark_to_drop(sm);
    }

    table t {
        key = {
            hdr.msg.kind: exact;
            hdr.msg.flow: selector;
        }
        actions = { fwd; drop; }
        implementation = sel;
        default_action = drop();
    }

    apply {
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.wrap);
        pkt.emit(hdr.msg);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
