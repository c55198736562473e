// V1MODEL_VERSION 20200408: register, counter and meter take a generic index type (bit<8> here).
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<8> idx;
    bit<16> val;
    bit<8> color;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    register<bit<16>, bit<8>>(256) last_len;
    counter<bit<8>>(256, CounterType.packets_and_bytes) port_pkts;
    meter<bit<8>>(256, MeterType.bytes) port_meter;
    apply {
        meta.idx = standard_metadata.ingress_port[7:0];
        last_len.read(meta.val, meta.idx);
        last_len.write(meta.idx, standard_metadata.packet_length[15:0]);
        port_pkts.count(meta.idx);
        port_meter.execute_meter(meta.idx, meta.color);
        if (meta.color == 2) {
            mark_to_drop(standard_metadata);
        } else {
            standard_metadata.egress_spec = 1;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
