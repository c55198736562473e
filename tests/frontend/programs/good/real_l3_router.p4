// Realistic: IPv4 router with an ARP responder, LPM routing, next-hop rewrite, TTL decrement,
// and IPv4 header checksum verification/update.
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_addr_t;
typedef bit<32> ip4_addr_t;
typedef bit<9>  port_t;

const bit<16> TYPE_IPV4 = 0x0800;
const bit<16> TYPE_ARP = 0x0806;
const bit<16> ARP_OP_REQUEST = 1;
const bit<16> ARP_OP_REPLY = 2;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header arp_t {
    bit<16>    htype;
    bit<16>    ptype;
    bit<8>     hlen;
    bit<8>     plen;
    bit<16>    oper;
    mac_addr_t sha;
    ip4_addr_t spa;
    mac_addr_t tha;
    ip4_addr_t tpa;
}

header ipv4_t {
    bit<4>     version;
    bit<4>     ihl;
    bit<8>     diffserv;
    bit<16>    totalLen;
    bit<16>    identification;
    bit<3>     flags;
    bit<13>    fragOffset;
    bit<8>     ttl;
    bit<8>     protocol;
    bit<16>    hdrChecksum;
    ip4_addr_t srcAddr;
    ip4_addr_t dstAddr;
}

struct headers_t {
    ethernet_t ethernet;
    arp_t arp;
    ipv4_t ipv4;
}

struct metadata_t {
    ip4_addr_t nexthop;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            TYPE_ARP: parse_arp;
            default: accept;
        }
    }
    state parse_arp {
        pkt.extract(hdr.arp);
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    action set_nhop(ip4_addr_t nhop, port_t port) {
        meta.nexthop = nhop;
        standard_metadata.egress_spec = port;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action set_dmac(mac_addr_t dmac) {
        hdr.ethernet.dstAddr = dmac;
    }
    action arp_reply(mac_addr_t router_mac) {
        ip4_addr_t target = hdr.arp.tpa;
        hdr.ethernet.dstAddr = hdr.arp.sha;
        hdr.ethernet.srcAddr = router_mac;
        hdr.arp.oper = ARP_OP_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.spa = target;
        hdr.arp.sha = router_mac;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }
    table ipv4_lpm {
        key = {
            hdr.ipv4.dstAddr: lpm;
        }
        actions = {
            set_nhop;
            drop;
        }
        size = 1024;
        default_action = drop();
    }
    table forward {
        key = {
            meta.nexthop: exact;
        }
        actions = {
            set_dmac;
            drop;
        }
        size = 512;
        default_action = drop();
    }
    table arp_responder {
        key = {
            hdr.arp.tpa: exact;
            hdr.arp.oper: exact;
        }
        actions = {
            arp_reply;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        if (hdr.arp.isValid()) {
            if (hdr.arp.oper == ARP_OP_REQUEST) {
                arp_responder.apply();
            }
        } else if (hdr.ipv4.isValid() && standard_metadata.checksum_error == 0) {
            if (hdr.ipv4.ttl <= 1) {
                drop();
            } else {
                ipv4_lpm.apply();
                forward.apply();
            }
        } else {
            drop();
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action rewrite_smac(mac_addr_t smac) {
        hdr.ethernet.srcAddr = smac;
    }
    table send_frame {
        key = {
            standard_metadata.egress_port: exact;
        }
        actions = {
            rewrite_smac;
            NoAction;
        }
        default_action = NoAction();
    }
    apply {
        if (hdr.ipv4.isValid()) {
            send_frame.apply();
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
        pkt.emit(hdr.arp);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
