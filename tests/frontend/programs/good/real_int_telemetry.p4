// Realistic: INT-like in-band telemetry; each switch pushes a hop record (switch id, timestamp,
// queue depth, latency) onto a header stack, tracks the maximum queue depth per port in a register
// and counts packets per port.
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

const bit<16> INT_PORT = 5000;

header int_shim_t {
    bit<8>  hop_count;
    bit<8>  max_hops;
    bit<16> reserved;
}

header int_hop_t {
    bit<32> switch_id;
    bit<32> ingress_ts_lo;
    bit<32> qdepth;
    bit<32> hop_latency;
}

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    udp_t udp;
    int_shim_t shim;
    int_hop_t[8] hops;
}

struct metadata_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    bit<8> remaining;
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
            INT_PORT: parse_shim;
            default: accept;
        }
    }
    state parse_shim {
        pkt.extract(hdr.shim);
        remaining = hdr.shim.hop_count;
        transition select(remaining) {
            0: accept;
            default: parse_hop;
        }
    }
    state parse_hop {
        pkt.extract(hdr.hops.next);
        remaining = remaining - 1;
        transition select(remaining) {
            0: accept;
            default: parse_hop;
        }
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    table forward {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            set_port;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        if (hdr.ipv4.isValid()) {
            forward.apply();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    register<bit<32>>(512) max_qdepth;
    counter(512, CounterType.packets_and_bytes) port_stats;

    action add_hop(bit<32> switch_id) {
        hdr.hops.push_front(1);
        hdr.hops[0].setValid();
        hdr.hops[0].switch_id = switch_id;
        hdr.hops[0].ingress_ts_lo = standard_metadata.ingress_global_timestamp[31:0];
        hdr.hops[0].qdepth = (bit<32>)standard_metadata.deq_qdepth;
        hdr.hops[0].hop_latency = standard_metadata.deq_timedelta;
        hdr.shim.hop_count = hdr.shim.hop_count + 1;
        hdr.ipv4.totalLen = hdr.ipv4.totalLen + 16;
        hdr.udp.len = hdr.udp.len + 16;
    }
    table int_config {
        actions = {
            add_hop;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        bit<32> idx = (bit<32>)standard_metadata.egress_port;
        bit<32> cur;
        max_qdepth.read(cur, idx);
        if ((bit<32>)standard_metadata.deq_qdepth > cur) {
            max_qdepth.write(idx, (bit<32>)standard_metadata.deq_qdepth);
        }
        port_stats.count(idx);
        if (hdr.shim.isValid() && hdr.shim.hop_count < hdr.shim.max_hops) {
            int_config.apply();
        }
    }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.shim);
        pkt.emit(hdr.hops);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
