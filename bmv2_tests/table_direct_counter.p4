// table_direct_counter: a table with a direct_counter (counters = ...) works
// as usual; counting (implicit on every hit, explicit count() in an action)
// does not change forwarding.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> a;
    bit<8> v;
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
    direct_counter(CounterType.packets_and_bytes) dc;
    action setv(bit<8> v) {
        dc.count();
        hdr.h.v = v;
        sm.egress_spec = 2;
    }
    action other() {
        hdr.h.v = 0x0F;
        sm.egress_spec = 1;
    }
    table t {
        key = {
            hdr.h.a : exact;
        }
        actions = { setv; other; }
        default_action = other();
        counters = dc;
    }
    apply {
        t.apply();
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
