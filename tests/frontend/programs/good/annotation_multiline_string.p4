// PINS/SAI-style annotations: a string literal that spans lines (the C preprocessor sees a
// lone '"' and a comment inside it), free-form token bodies, structured annotations with
// expressions that stay unevaluated, and characters P4 has no token for inside a body.
#include <core.p4>
#include <v1model.p4>

#define ACL_PRIORITY 7

header ethernet_t {
    @format(MAC_ADDRESS) bit<48> dstAddr;
    @format(MAC_ADDRESS) bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
    bit<1> is_ip;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t standard_metadata) {
    @sai_action(SAI_PACKET_ACTION_FORWARD, SAI_PACKET_COLOR_GREEN)
    @unsupported
    action forward(@refers_to(port_table, port_id) bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    @sai_acl(INGRESS)
    @sai_acl_priority(ACL_PRIORITY)
    @p4runtime_role("sdn_controller")
    @entry_restriction("
      // Only match on the destination of IP packets; don't use "quotes" badly.
      dst::mask != 0 -> is_ip == 1;
      // Ethernet type must be exact.
      ether_type::mask != 0 -> ether_type::mask == 0xffff;
    ")
    @structured_list[1 == 2, "text", ACL_PRIORITY + 1]
    @structured_kv[kind = "acl", weight = 3 * 4]
    @free_form($ns::opaque ` tokens, 1 /)
    table acl {
        key = {
            hdr.ethernet.dstAddr : ternary @name("dst") @sai_field(SAI_ACL_TABLE_ATTR_FIELD_DST_MAC);
            hdr.ethernet.etherType : ternary @name("ether_type");
            meta.is_ip : optional @name("is_ip");
        }
        actions = {
            @proto_id(1) forward;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        size = 128;
    }
    apply {
        meta.is_ip = (bit<1>)(hdr.ethernet.etherType == 0x0800);
        standard_metadata.egress_spec = 2;
        acl.apply();
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
