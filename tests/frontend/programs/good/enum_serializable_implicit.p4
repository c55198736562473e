// DASH/UP4-style serializable enums used where their underlying bit<W> is expected: P4_16
// (1.2.x) converts a serializable enum value implicitly to its underlying type in binary
// operators, assignments, select keysets, table keys and entries, and extern arguments.
#include <core.p4>
#include <v1model.p4>

enum bit<16> ether_type_t {
    IPV4 = 0x0800,
    IPV6 = 0x86dd
}

enum bit<32> flag_t {
    TRACE = 0x100
}

enum bit<8> direction_t {
    INBOUND = 1,
    OUTBOUND = 2
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<8> direction;
    bit<32> flags;
    bit<16> hashed;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            ether_type_t.IPV4: ip;
            ether_type_t.IPV6: ip;
            default: accept;
        }
    }
    state ip {
        meta.direction = direction_t.OUTBOUND;
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    action set_port(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    table route {
        key = {
            meta.direction : exact;
            hdr.ethernet.etherType : ternary;
        }
        actions = {
            set_port;
            NoAction;
        }
        const entries = {
            (direction_t.OUTBOUND, ether_type_t.IPV4 &&& 0xffff) : set_port(3);
            (direction_t.INBOUND, _) : set_port(4);
        }
        default_action = NoAction;
    }
    apply {
        meta.flags = flag_t.TRACE | 32w2;
        if (hdr.ethernet.etherType == ether_type_t.IPV4 && meta.direction == direction_t.OUTBOUND) {
            meta.flags = meta.flags + 1;
        }
        bit<16> et = ether_type_t.IPV6;
        hash(meta.hashed, HashAlgorithm.crc16, 16w0, { ether_type_t.IPV4, hdr.ethernet.srcAddr }, 16w1024);
        route.apply();
        if (meta.flags != 0x103 || et != 0x86dd) {
            standard_metadata.egress_spec = 9;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
