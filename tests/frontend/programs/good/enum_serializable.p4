// Serializable enum (enum bit<8>) with explicit values, casts to and from its underlying type.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header calc_t {
    bit<8>  op;
    bit<32> a;
    bit<32> b;
    bit<32> res;
}

enum bit<8> Opcode_t {
    NOP = 0,
    ADD = 1,
    SUB = 2,
    MAX = 0x10
}

struct headers_t {
    ethernet_t ethernet;
    calc_t calc;
}

struct metadata_t {
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x1234: parse_calc;
            default: accept;
        }
    }
    state parse_calc {
        pkt.extract(hdr.calc);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
    }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    apply {
        if (hdr.calc.isValid()) {
            Opcode_t op = (Opcode_t)hdr.calc.op;
            if (op == Opcode_t.ADD) {
                hdr.calc.res = hdr.calc.a + hdr.calc.b;
            } else if (op == Opcode_t.SUB) {
                hdr.calc.res = hdr.calc.a - hdr.calc.b;
            }
            hdr.calc.op = (bit<8>)Opcode_t.NOP;
        }
        standard_metadata.egress_spec = 1;
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
        pkt.emit(hdr.calc);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
