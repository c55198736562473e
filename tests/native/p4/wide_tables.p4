// wide_tables: table keys wider than 64 bits (an IPv6-style bit<128> LPM, a bit<100>
// ternary beside an exact bit<8>, a bit<72> exact) and action data over 64 bits (from a
// table entry, and in a direct call) and a register of bit<130> cells, for the differential fuzz test (native
// vs Python): random entries, defaults and deletions against packets whose addresses are
// made of edge bytes, so that prefixes, masks and exact keys match now and then.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<128> dst;
    bit<100> src;
    bit<4>   k;
    bit<72>  flow;
    bit<8>   tag;
    bit<8>   port_tag;
    bit<8>   hits;
}

struct headers_t { h_t h; }
struct meta_t { }

parser ParserImpl(packet_in pkt, out headers_t hdr, inout meta_t meta,
                  inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control verifyChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> port, bit<8> t) {
        sm.egress_spec = port;
        hdr.h.port_tag = t;
    }
    action set_tag(bit<8> t) {
        hdr.h.tag = t;
    }
    action set_dst(bit<128> d, bit<72> f, bit<8> t) {
        hdr.h.dst = d;
        hdr.h.flow = f ^ hdr.h.flow;
        hdr.h.tag = t;
    }
    action to_cpu() {
        sm.egress_spec = 3;
    }
    table lpm6 {
        key = { hdr.h.dst: lpm; }
        actions = { set_port; to_cpu; NoAction; }
        default_action = to_cpu();
    }
    table tern {
        key = { hdr.h.src: ternary; hdr.h.k: exact; }
        actions = { set_tag; NoAction; }
        default_action = NoAction();
    }
    table ex {
        key = { hdr.h.flow: exact; }
        actions = { set_tag; set_dst; NoAction; }
        default_action = NoAction();
    }
    register<bit<130>>(4) acc;
    apply {
        bit<130> v;
        sm.egress_spec = 1;
        hdr.h.hits = 0;
        if (lpm6.apply().hit) { hdr.h.hits = hdr.h.hits | 1; }
        if (tern.apply().hit) { hdr.h.hits = hdr.h.hits | 2; }
        if (ex.apply().hit) { hdr.h.hits = hdr.h.hits | 4; }
        if (hdr.h.k == 15) {
            set_dst(hdr.h.dst + 1, 72w5, 8w9);
        }
        acc.read(v, (bit<32>)hdr.h.k);
        v = v + (bit<130>)hdr.h.dst;
        acc.write((bit<32>)hdr.h.k, v);
        hdr.h.flow = v[129:58];
    }
}

control egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control computeChecksum(inout headers_t hdr, inout meta_t meta) { apply { } }

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply { pkt.emit(hdr.h); }
}

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;
