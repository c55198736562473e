// Realistic: SwitchML-style in-network aggregation; eight value registers per slot, a worker
// bitmap and a contribution count; the first contribution overwrites, later ones add, duplicates are
// dropped, and the completed block is multicast to the job's group.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header udp_t {
    bit<16> srcPort;
    bit<16> dstPort;
    bit<16> len;
    bit<16> checksum;
}

const bit<16> SWITCHML_PORT = 48864;

header sml_t {
    bit<8>  worker_id;
    bit<8>  num_workers;
    bit<16> slot;
}

header sml_data_t {
    bit<32> v0;
    bit<32> v1;
    bit<32> v2;
    bit<32> v3;
    bit<32> v4;
    bit<32> v5;
    bit<32> v6;
    bit<32> v7;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    udp_t udp;
    sml_t sml;
    sml_data_t data;
}

struct metadata_t {
    bit<32> worker_bit;
    bit<32> bitmap;
    bit<8> count;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dstPort) {
            SWITCHML_PORT: parse_sml;
            default: accept;
        }
    }
    state parse_sml {
        pkt.extract(hdr.sml);
        pkt.extract(hdr.data);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    register<bit<32>>(1024) bitmap_reg;
    register<bit<8>>(1024) count_reg;
    register<bit<32>>(1024) value0;
    register<bit<32>>(1024) value1;
    register<bit<32>>(1024) value2;
    register<bit<32>>(1024) value3;
    register<bit<32>>(1024) value4;
    register<bit<32>>(1024) value5;
    register<bit<32>>(1024) value6;
    register<bit<32>>(1024) value7;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action check_worker() {
        meta.worker_bit = 32w1 << hdr.sml.worker_id;
        bitmap_reg.read(meta.bitmap, (bit<32>)hdr.sml.slot);
    }
    action update_bitmap() {
        bit<32> idx = (bit<32>)hdr.sml.slot;
        bitmap_reg.write(idx, meta.bitmap | meta.worker_bit);
        count_reg.read(meta.count, idx);
        meta.count = meta.count + 1;
        count_reg.write(idx, meta.count);
    }
    action aggregate() {
        bit<32> idx = (bit<32>)hdr.sml.slot;
        bit<32> tmp;
        value0.read(tmp, idx);
        tmp = tmp + hdr.data.v0;
        value0.write(idx, tmp);
        hdr.data.v0 = tmp;
        value1.read(tmp, idx);
        tmp = tmp + hdr.data.v1;
        value1.write(idx, tmp);
        hdr.data.v1 = tmp;
        value2.read(tmp, idx);
        tmp = tmp + hdr.data.v2;
        value2.write(idx, tmp);
        hdr.data.v2 = tmp;
        value3.read(tmp, idx);
        tmp = tmp + hdr.data.v3;
        value3.write(idx, tmp);
        hdr.data.v3 = tmp;
        value4.read(tmp, idx);
        tmp = tmp + hdr.data.v4;
        value4.write(idx, tmp);
        hdr.data.v4 = tmp;
        value5.read(tmp, idx);
        tmp = tmp + hdr.data.v5;
        value5.write(idx, tmp);
        hdr.data.v5 = tmp;
        value6.read(tmp, idx);
        tmp = tmp + hdr.data.v6;
        value6.write(idx, tmp);
        hdr.data.v6 = tmp;
        value7.read(tmp, idx);
        tmp = tmp + hdr.data.v7;
        value7.write(idx, tmp);
        hdr.data.v7 = tmp;
    }
    action overwrite() {
        bit<32> idx = (bit<32>)hdr.sml.slot;
        value0.write(idx, hdr.data.v0);
        value1.write(idx, hdr.data.v1);
        value2.write(idx, hdr.data.v2);
        value3.write(idx, hdr.data.v3);
        value4.write(idx, hdr.data.v4);
        value5.write(idx, hdr.data.v5);
        value6.write(idx, hdr.data.v6);
        value7.write(idx, hdr.data.v7);
    }
    action multicast(bit<16> grp) {
        standard_metadata.mcast_grp = grp;
    }
    table job {
        key = {
            hdr.ipv4.dstAddr: exact;
        }
        actions = {
            multicast;
            drop;
        }
        default_action = drop();
    }
    apply {
        if (hdr.sml.isValid() && hdr.data.isValid()) {
            check_worker();
            if ((meta.bitmap & meta.worker_bit) == 0) {
                if (meta.bitmap == 0) {
                    overwrite();
                } else {
                    aggregate();
                }
                update_bitmap();
                if (meta.count == hdr.sml.num_workers) {
                    job.apply();
                } else {
                    drop();
                }
            } else {
                drop();
            }
        } else {
            drop();
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
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.sml);
        pkt.emit(hdr.data);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
