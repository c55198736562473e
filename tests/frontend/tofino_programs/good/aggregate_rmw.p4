// Keeps every Tofino rule: one read-modify-write per register at one index (a table's action and
// a direct call), a bit<64> pair register, `* 4`, `>> 2`, `/ 16`, `% 8`, `*= 2`, a folded constant
// product, a sub-control instantiated twice in ingress and once in egress (a register per
// instance), and a parser with branches and an unrolled header stack but no loop.
#include <core.p4>
#include <v1model.p4>

const bit<32> SLOTS = 3 * 1024;  // folded at compile time: not a runtime multiply

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header label_t {
    bit<24> label;
    bit<8>  ttl;
}

header agg_t {
    bit<16> slot;
    bit<8>  worker;
    bit<8>  flags;
    bit<32> value;
}

struct headers_t {
    ethernet_t ethernet;
    label_t[2] labels;
    agg_t      agg;
}

struct metadata_t {
    bit<32> cell;
    bit<32> sum;
    bit<64> pair;
    bit<32> lane;
    bit<32> seen;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x8847: parse_label0;
            0x88B5: parse_agg;
            default: accept;
        }
    }
    state parse_label0 {
        pkt.extract(hdr.labels.next);
        transition select(hdr.labels.last.ttl) {
            0: parse_label1;
            default: parse_agg;
        }
    }
    state parse_label1 {
        pkt.extract(hdr.labels.next);
        transition parse_agg;
    }
    state parse_agg {
        pkt.extract(hdr.agg);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

// Counts packets per slot; each instance has its own register.
control SlotCounter(in bit<32> cell, inout bit<32> seen) {
    register<bit<32>>(1024) counts;
    apply {
        counts.read(seen, cell);
        counts.write(cell, seen + 1);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    register<bit<32>>(1024) sums;
    register<bit<64>>(512) pairs;
    SlotCounter() first_counter;
    SlotCounter() second_counter;

    action aggregate() {
        sums.read(meta.sum, meta.cell);
        meta.sum = meta.sum + hdr.agg.value * 4;
        sums.write(meta.cell, meta.sum);
    }
    action drop() {
        mark_to_drop(standard_metadata);
    }
    table aggregation {
        key = { hdr.agg.worker: exact; }
        actions = { aggregate; drop; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.agg.isValid()) {
            meta.cell = (bit<32>)(hdr.agg.slot >> 2);
            meta.lane = hdr.agg.value % 8 + hdr.agg.value / 16;
            meta.lane *= 2;
            meta.lane = meta.lane + SLOTS * 2;
            aggregation.apply();
            pairs.read(meta.pair, meta.cell);
            pairs.write(meta.cell, meta.pair + (bit<64>)hdr.agg.value);
            first_counter.apply(meta.cell, meta.seen);
            second_counter.apply(meta.lane, meta.seen);
        }
        standard_metadata.egress_spec = 1;
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    SlotCounter() egress_counter;
    apply {
        egress_counter.apply(meta.cell, meta.seen);
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.labels);
        pkt.emit(hdr.agg);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
