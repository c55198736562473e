// counter_indexed: counter.count(index) (packets, bytes, or both; in range or
// out of range) and the STF counter_write command do not affect forwarding.
#include <core.p4>
#include <v1model.p4>

header h_t {
    bit<8> idx;
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
    counter(8, CounterType.packets_and_bytes) c_both;
    counter(8, CounterType.packets) c_pkts;
    counter(8, CounterType.bytes) c_bytes;
    apply {
        c_both.count((bit<32>)hdr.h.idx);
        c_pkts.count((bit<32>)hdr.h.idx);
        c_bytes.count((bit<32>)hdr.h.idx);
        hdr.h.v = hdr.h.v + 1;
        sm.egress_spec = 2;
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
