// Indexed meter extern; execute_meter with an explicit type argument; V1MODEL_METER_COLOR_RED macro.
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
    bit<32> color;
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
    meter(32w128, MeterType.packets) rate_limiter;

    action apply_meter(bit<32> idx) {
        rate_limiter.execute_meter<bit<32>>(idx, meta.color);
    }
    table m {
        key = {
            hdr.ethernet.srcAddr: exact;
        }
        actions = {
            apply_meter;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        meta.color = 0;
        m.apply();
        if (meta.color == V1MODEL_METER_COLOR_RED) {
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
