// Action profiles and selectors on both engines (tests/native/test_differential.py):
// a selector over fields of an optional header (a field list with validity guards), a
// selector with a custom CRC whose parameters change at run time, a profile shared by two
// tables with the same actions, a direct counter on a profile table, a selector constructed
// in the table (csum16) with a direct meter whose colour the member's action reads,
// hit/miss/action_run.
#include <core.p4>
#include <v1model.p4>

header eth_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header l4_t {
    bit<16> sport;
    bit<16> dport;
    bit<8>  flags;
}

struct headers_t {
    eth_t eth;
    l4_t  l4;
}

struct meta_t {
    bit<8>  tag;
    bit<32> mark;
    bit<8>  col;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            0x0800: l4;
            default: accept;
        }
    }
    state l4 {
        pkt.extract(hdr.l4);
        transition accept;
    }
}

control VC(inout headers_t hdr, inout meta_t meta) { apply { } }

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.crc16, 32w16, 32w14) sel16;
    action_selector(HashAlgorithm.crc32_custom, 32w16, 32w32) selc;
    action_profile(32w16) shared;
    direct_counter(CounterType.packets_and_bytes) hits;
    direct_meter<bit<8>>(MeterType.packets) dm;

    action fwd(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        meta.tag = tag;
    }
    action mark(bit<32> m) {
        meta.mark = m;
    }
    action drop() {
        mark_to_drop(sm);
    }
    action colour(bit<8> base) {
        dm.read(meta.col);
        hdr.l4.flags = base + meta.col;
    }

    table ecmp {
        key = {
            hdr.eth.dst: exact;
            hdr.eth.src: selector;
            hdr.l4.sport: selector;
            hdr.l4.dport: selector;
        }
        actions = { fwd; drop; NoAction; }
        implementation = sel16;
        counters = hits;
        size = 16;
    }
    table crc_sel {
        key = {
            hdr.eth.type: ternary;
            hdr.eth.src: selector;
            meta.tag: selector;
        }
        actions = { mark; NoAction; }
        implementation = selc;
        size = 16;
    }
    table by_src {
        key = { hdr.eth.src: lpm; }
        actions = { mark; NoAction; }
        implementation = shared;
        size = 16;
    }
    table by_type {
        key = { hdr.eth.type: exact; }
        actions = { mark; NoAction; }
        implementation = shared;
        size = 16;
    }

    table metered {
        key = {
            hdr.l4.isValid(): exact;
            hdr.l4.dport: selector;
            hdr.eth.src: selector;
        }
        actions = { colour; NoAction; }
        @name("metered_selector") implementation = action_selector(HashAlgorithm.csum16, 32w8, 32w16);
        meters = dm;
        size = 8;
    }

    apply {
        metered.apply();
        switch (ecmp.apply().action_run) {
            fwd: { hdr.eth.type = hdr.eth.type ^ 16w0x0100; }
            drop: { exit; }
        }
        if (crc_sel.apply().hit) {
            hdr.eth.src[31:0] = meta.mark;
        }
        if (by_src.apply().miss) {
            meta.mark = 32w0xdead;
        }
        by_type.apply();
        hdr.eth.dst[39:8] = meta.mark;
        hdr.eth.dst[7:0] = meta.tag;
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.l4);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
