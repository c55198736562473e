// A SAI-style L3 router in the manner of the PINS programs (our own program, written for the
// constructs they use): typed ids (`type bit<W>`) for VRFs, next hops, WCMP groups, router
// interfaces and ports; a top-level action with an inout parameter bound in the tables'
// action lists; @id on tables, actions, parameters and match fields; @refers_to and
// @entry_restriction/@action_restriction; @proto_id on action references; an action selector
// with @max_group_size; control-local variables as table keys; ACL with direct counter and
// direct meter; packet-in/packet-out controller headers; IPv4 checksum verified and updated
// with list expressions.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define CPU_PORT 510
#define PORT_BITWIDTH 9

typedef bit<48> ethernet_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<128> ipv6_addr_t;
typedef bit<12> vlan_id_t;

type bit<10> vrf_id_t;
type bit<12> nexthop_id_t;
type bit<12> wcmp_group_id_t;
type bit<12> router_interface_id_t;
type bit<PORT_BITWIDTH> port_id_t;

const vrf_id_t kDefaultVrf = 0;
const vlan_id_t INTERNAL_VLAN_ID = 0xfff;

enum bit<2> MeterColor_t { GREEN = 0, YELLOW = 1, RED = 2 }

@controller_header("packet_in")
header packet_in_header_t {
    @id(1) port_id_t ingress_port;
    @id(2) port_id_t target_egress_port;
    @id(3) @padding bit<6> unused_pad;
}

@controller_header("packet_out")
header packet_out_header_t {
    @id(1) port_id_t egress_port;
    @id(2) bit<1> submit_to_ingress;
    @id(3) @padding bit<6> unused_pad;
}

header ethernet_t {
    ethernet_addr_t dst_addr;
    ethernet_addr_t src_addr;
    bit<16> ether_type;
}

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<6> dscp;
    bit<2> ecn;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> header_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header ipv6_t {
    bit<4> version;
    bit<8> traffic_class;
    bit<20> flow_label;
    bit<16> payload_length;
    bit<8> next_header;
    bit<8> hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

struct headers_t {
    packet_in_header_t packet_in_header;
    packet_out_header_t packet_out_header;
    ethernet_t ethernet;
    ipv4_t ipv4;
    ipv6_t ipv6;
}

struct packet_rewrites_t {
    ethernet_addr_t src_mac;
    ethernet_addr_t dst_mac;
    vlan_id_t vlan_id;
}

struct local_metadata_t {
    bool admit_to_l3;
    vrf_id_t vrf_id;
    bool nexthop_id_valid;
    nexthop_id_t nexthop_id_value;
    bool wcmp_group_id_valid;
    wcmp_group_id_t wcmp_group_id_value;
    bit<16> wcmp_selector_input;
    bool enable_decrement_ttl;
    packet_rewrites_t packet_rewrites;
    port_id_t ingress_port;
    MeterColor_t color;
    bool acl_drop;
}

parser packet_parser(packet_in packet, out headers_t headers,
                     inout local_metadata_t local_metadata,
                     inout standard_metadata_t standard_metadata) {
    state start {
        local_metadata.admit_to_l3 = false;
        local_metadata.vrf_id = kDefaultVrf;
        local_metadata.nexthop_id_valid = false;
        local_metadata.wcmp_group_id_valid = false;
        local_metadata.enable_decrement_ttl = false;
        local_metadata.acl_drop = false;
        local_metadata.ingress_port = (port_id_t)standard_metadata.ingress_port;
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out_header;
            default: parse_ethernet;
        }
    }
    state parse_packet_out_header {
        packet.extract(headers.packet_out_header);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(headers.ethernet);
        transition select(headers.ethernet.ether_type) {
            0x0800: parse_ipv4;
            0x86dd: parse_ipv6;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(headers.ipv4);
        transition accept;
    }
    state parse_ipv6 {
        packet.extract(headers.ipv6);
        transition accept;
    }
}

control verify_ipv4_checksum(inout headers_t headers, inout local_metadata_t local_metadata) {
    apply {
        verify_checksum(headers.ipv4.isValid(),
            { headers.ipv4.version, headers.ipv4.ihl, headers.ipv4.dscp, headers.ipv4.ecn,
              headers.ipv4.total_len, headers.ipv4.identification, headers.ipv4.flags,
              headers.ipv4.frag_offset, headers.ipv4.ttl, headers.ipv4.protocol,
              headers.ipv4.src_addr, headers.ipv4.dst_addr },
            headers.ipv4.header_checksum, HashAlgorithm.csum16);
    }
}

// Shared by a route and a WCMP group member; only refers to programmed next hops.
@id(0x01000001)
action set_nexthop_id(inout local_metadata_t local_metadata,
                      @id(1) @refers_to(nexthop_table, nexthop_id) nexthop_id_t nexthop_id) {
    local_metadata.nexthop_id_valid = true;
    local_metadata.nexthop_id_value = nexthop_id;
}

control l3_admit(in headers_t headers, inout local_metadata_t local_metadata,
                 inout standard_metadata_t standard_metadata) {
    @id(0x01000002)
    action admit_to_l3() {
        local_metadata.admit_to_l3 = true;
    }
    @p4runtime_role("sdn_controller")
    @id(0x02000001)
    table l3_admit_table {
        key = {
            headers.ethernet.dst_addr : ternary @name("dst_mac") @id(1) @format(MAC_ADDRESS);
            local_metadata.ingress_port : optional @name("in_port") @id(2);
        }
        actions = {
            @proto_id(1) admit_to_l3;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        size = 64;
    }
    apply {
        if (headers.ipv4.isValid() || headers.ipv6.isValid()) {
            l3_admit_table.apply();
        }
    }
}

control routing_lookup(in headers_t headers, inout local_metadata_t local_metadata,
                       inout standard_metadata_t standard_metadata) {
    @id(0x01000003)
    action no_action() {}

    @entry_restriction("
        // the default VRF is always present and cannot be written
        vrf_id != 0;
    ")
    @p4runtime_role("sdn_controller")
    @id(0x02000002)
    table vrf_table {
        key = {
            local_metadata.vrf_id : exact @id(1) @name("vrf_id");
        }
        actions = {
            @proto_id(1) no_action;
        }
        const default_action = no_action;
        size = 64;
    }

    @id(0x01000004)
    action drop() {
        mark_to_drop(standard_metadata);
    }

    @id(0x01000005)
    action set_wcmp_group_id(@id(1) @refers_to(wcmp_group_table, wcmp_group_id)
                             wcmp_group_id_t wcmp_group_id) {
        local_metadata.wcmp_group_id_valid = true;
        local_metadata.wcmp_group_id_value = wcmp_group_id;
    }

    @p4runtime_role("sdn_controller")
    @id(0x02000003)
    table ipv4_table {
        key = {
            local_metadata.vrf_id : exact @id(1) @name("vrf_id") @refers_to(vrf_table, vrf_id);
            headers.ipv4.dst_addr : lpm @id(2) @name("ipv4_dst") @format(IPV4_ADDRESS);
        }
        actions = {
            @proto_id(1) drop;
            @proto_id(2) set_nexthop_id(local_metadata);
            @proto_id(3) set_wcmp_group_id;
        }
        const default_action = drop;
        size = 1024;
    }

    @p4runtime_role("sdn_controller")
    @id(0x02000004)
    table ipv6_table {
        key = {
            local_metadata.vrf_id : exact @id(1) @name("vrf_id") @refers_to(vrf_table, vrf_id);
            headers.ipv6.dst_addr : lpm @id(2) @name("ipv6_dst") @format(IPV6_ADDRESS);
        }
        actions = {
            @proto_id(1) drop;
            @proto_id(2) set_nexthop_id(local_metadata);
            @proto_id(3) set_wcmp_group_id;
        }
        const default_action = drop;
        size = 1024;
    }

    apply {
        mark_to_drop(standard_metadata);
        vrf_table.apply();
        if (local_metadata.admit_to_l3) {
            if (headers.ipv4.isValid()) {
                ipv4_table.apply();
            } else if (headers.ipv6.isValid()) {
                ipv6_table.apply();
            }
        }
    }
}

control routing_resolution(in headers_t headers, inout local_metadata_t local_metadata,
                           inout standard_metadata_t standard_metadata) {
    bool router_interface_id_valid = false;
    router_interface_id_t router_interface_id_value;
    bool neighbor_id_valid = false;
    ipv6_addr_t neighbor_id_value;

    @id(0x01000006)
    action set_dst_mac(@id(1) @format(MAC_ADDRESS) ethernet_addr_t dst_mac) {
        local_metadata.packet_rewrites.dst_mac = dst_mac;
    }

    @p4runtime_role("sdn_controller")
    @id(0x02000005)
    table neighbor_table {
        key = {
            router_interface_id_value : exact @id(1) @name("router_interface_id")
                @refers_to(router_interface_table, router_interface_id);
            neighbor_id_value : exact @id(2) @format(IPV6_ADDRESS) @name("neighbor_id");
        }
        actions = {
            @proto_id(1) set_dst_mac;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        size = 256;
    }

    @id(0x01000007)
    @action_restriction("
        // reserved VLAN ids
        vlan_id != 0 && vlan_id != 4095
    ")
    action set_port_and_src_mac_and_vlan_id(@id(1) port_id_t port,
                                            @id(2) @format(MAC_ADDRESS) ethernet_addr_t src_mac,
                                            @id(3) vlan_id_t vlan_id) {
        standard_metadata.egress_spec = (bit<PORT_BITWIDTH>)port;
        local_metadata.packet_rewrites.src_mac = src_mac;
        local_metadata.packet_rewrites.vlan_id = vlan_id;
    }

    @id(0x01000008)
    action set_port_and_src_mac(@id(1) port_id_t port,
                                @id(2) @format(MAC_ADDRESS) ethernet_addr_t src_mac) {
        set_port_and_src_mac_and_vlan_id(port, src_mac, INTERNAL_VLAN_ID);
    }

    @p4runtime_role("sdn_controller")
    @id(0x02000006)
    table router_interface_table {
        key = {
            router_interface_id_value : exact @id(1) @name("router_interface_id");
        }
        actions = {
            @proto_id(1) set_port_and_src_mac;
            @proto_id(2) set_port_and_src_mac_and_vlan_id;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        size = 256;
    }

    @id(0x01000009)
    action set_ip_nexthop(@id(1) @refers_to(router_interface_table, router_interface_id)
                          @refers_to(neighbor_table, router_interface_id)
                          router_interface_id_t router_interface_id,
                          @id(2) @format(IPV6_ADDRESS) @refers_to(neighbor_table, neighbor_id)
                          ipv6_addr_t neighbor_id) {
        router_interface_id_valid = true;
        router_interface_id_value = router_interface_id;
        neighbor_id_valid = true;
        neighbor_id_value = neighbor_id;
        local_metadata.enable_decrement_ttl = true;
    }

    @p4runtime_role("sdn_controller")
    @id(0x02000007)
    table nexthop_table {
        key = {
            local_metadata.nexthop_id_value : exact @id(1) @name("nexthop_id");
        }
        actions = {
            @proto_id(1) set_ip_nexthop;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        size = 256;
    }

    @max_group_size(16)
    @id(0x11000001)
    action_selector(HashAlgorithm.identity, 1024, 16) wcmp_group_selector;

    @p4runtime_role("sdn_controller")
    @id(0x02000008)
    @oneshot()
    table wcmp_group_table {
        key = {
            local_metadata.wcmp_group_id_value : exact @id(1) @name("wcmp_group_id");
            local_metadata.wcmp_selector_input : selector;
        }
        actions = {
            @proto_id(1) set_nexthop_id(local_metadata);
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        implementation = wcmp_group_selector;
        size = 64;
    }

    apply {
        if (local_metadata.admit_to_l3) {
            if (local_metadata.wcmp_group_id_valid) {
                wcmp_group_table.apply();
            }
            if (local_metadata.nexthop_id_valid) {
                nexthop_table.apply();
                if (router_interface_id_valid && neighbor_id_valid) {
                    router_interface_table.apply();
                    neighbor_table.apply();
                }
            }
        }
    }
}

control acl_ingress(in headers_t headers, inout local_metadata_t local_metadata,
                    inout standard_metadata_t standard_metadata) {
    @id(0x13000001)
    direct_counter(CounterType.packets_and_bytes) acl_ingress_counter;
    @id(0x15000001)
    direct_meter<MeterColor_t>(MeterType.bytes) acl_ingress_meter;

    @id(0x0100000a)
    @sai_action(SAI_PACKET_ACTION_DROP)
    action acl_drop() {
        acl_ingress_meter.read(local_metadata.color);
        local_metadata.acl_drop = true;
    }

    @id(0x0100000b)
    action acl_forward() {
        acl_ingress_meter.read(local_metadata.color);
    }

    @p4runtime_role("sdn_controller")
    @id(0x02000009)
    @sai_acl(INGRESS)
    @entry_restriction("
        // only IP packets carry an IP protocol
        ip_protocol::mask != 0 -> (is_ip == 1);
        dst_ip::mask != 0 -> is_ipv4 == 1;
    ")
    table acl_ingress_table {
        key = {
            headers.ipv4.isValid() || headers.ipv6.isValid() : optional @name("is_ip") @id(1);
            headers.ipv4.isValid() : optional @name("is_ipv4") @id(2);
            headers.ethernet.ether_type : ternary @name("ether_type") @id(3);
            headers.ipv4.dst_addr : ternary @name("dst_ip") @id(4) @format(IPV4_ADDRESS);
            headers.ipv4.protocol : ternary @name("ip_protocol") @id(5);
            local_metadata.ingress_port : optional @name("in_port") @id(6);
        }
        actions = {
            @proto_id(1) acl_drop;
            @proto_id(2) acl_forward;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
        counters = acl_ingress_counter;
        meters = acl_ingress_meter;
        size = 128;
    }

    apply {
        acl_ingress_table.apply();
    }
}

control ingress(inout headers_t headers, inout local_metadata_t local_metadata,
                inout standard_metadata_t standard_metadata) {
    apply {
        if (headers.packet_out_header.isValid()
                && headers.packet_out_header.submit_to_ingress == 0) {
            standard_metadata.egress_spec = (bit<PORT_BITWIDTH>)headers.packet_out_header.egress_port;
            headers.packet_out_header.setInvalid();
            exit;
        }
        headers.packet_out_header.setInvalid();
        l3_admit.apply(headers, local_metadata, standard_metadata);
        routing_lookup.apply(headers, local_metadata, standard_metadata);
        acl_ingress.apply(headers, local_metadata, standard_metadata);
        routing_resolution.apply(headers, local_metadata, standard_metadata);
        if (local_metadata.acl_drop) {
            mark_to_drop(standard_metadata);
        }
    }
}

control egress(inout headers_t headers, inout local_metadata_t local_metadata,
               inout standard_metadata_t standard_metadata) {
    apply {
        if (local_metadata.admit_to_l3 && local_metadata.nexthop_id_valid) {
            headers.ethernet.src_addr = local_metadata.packet_rewrites.src_mac;
            headers.ethernet.dst_addr = local_metadata.packet_rewrites.dst_mac;
            if (headers.ipv4.isValid() && local_metadata.enable_decrement_ttl) {
                headers.ipv4.ttl = headers.ipv4.ttl - 1;
            }
            if (headers.ipv6.isValid() && local_metadata.enable_decrement_ttl) {
                headers.ipv6.hop_limit = headers.ipv6.hop_limit - 1;
            }
        }
    }
}

control compute_ipv4_checksum(inout headers_t headers, inout local_metadata_t local_metadata) {
    apply {
        update_checksum(headers.ipv4.isValid(),
            { headers.ipv4.version, headers.ipv4.ihl, headers.ipv4.dscp, headers.ipv4.ecn,
              headers.ipv4.total_len, headers.ipv4.identification, headers.ipv4.flags,
              headers.ipv4.frag_offset, headers.ipv4.ttl, headers.ipv4.protocol,
              headers.ipv4.src_addr, headers.ipv4.dst_addr },
            headers.ipv4.header_checksum, HashAlgorithm.csum16);
    }
}

control packet_deparser(packet_out packet, in headers_t headers) {
    apply {
        packet.emit(headers.packet_in_header);
        packet.emit(headers.ethernet);
        packet.emit(headers.ipv4);
        packet.emit(headers.ipv6);
    }
}

V1Switch(packet_parser(), verify_ipv4_checksum(), ingress(), egress(),
         compute_ipv4_checksum(), packet_deparser()) main;
