// An overlay pipeline in the manner of DASH's v1model program (our own program, written for
// the constructs it uses): an extended `error` list with verify() in the parser, an IPv4
// options varbit header extracted by a computed length, VXLAN underlay/overlay parsing,
// serializable enums as metadata and table keys, structured key=value annotations on tables,
// keys and parameters (@SaiTable[...], @SaiVal[...]), typedef'd 128-bit addresses, a
// direction lookup feeding per-ENI tables, an ACL stage control instantiated twice,
// indexed counters and meters, VXLAN encapsulation, and checksums over list expressions.
error {
    IPv4IncorrectVersion,
    IPv4OptionsNotSupported,
    InvalidIPv4Header
}

#include <core.p4>
#include <v1model.p4>

typedef bit<48> EthernetAddress;
typedef bit<32> IPv4Address;
typedef bit<128> IPv6Address;
typedef bit<128> IPv4ORv6Address;

header ethernet_t {
    EthernetAddress dst_addr;
    EthernetAddress src_addr;
    bit<16> ether_type;
}

const bit<16> ETHER_HDR_SIZE = 112 / 8;

header ipv4_t {
    bit<4> version;
    bit<4> ihl;
    bit<8> diffserv;
    bit<16> total_len;
    bit<16> identification;
    bit<3> flags;
    bit<13> frag_offset;
    bit<8> ttl;
    bit<8> protocol;
    bit<16> hdr_checksum;
    IPv4Address src_addr;
    IPv4Address dst_addr;
}

const bit<16> IPV4_HDR_SIZE = 160 / 8;

header ipv4options_t {
    varbit<320> options;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

const bit<16> UDP_HDR_SIZE = 64 / 8;

header vxlan_t {
    bit<8> flags;
    bit<24> reserved;
    bit<24> vni;
    bit<8> reserved_2;
}

const bit<16> VXLAN_HDR_SIZE = 64 / 8;
const bit<16> UDP_PORT_VXLAN = 4789;

struct headers_t {
    ethernet_t ethernet;
    ipv4_t ipv4;
    ipv4options_t ipv4options;
    udp_t udp;
    vxlan_t vxlan;
    ethernet_t inner_ethernet;
    ipv4_t inner_ipv4;
}

enum bit<16> dash_direction_t {
    INVALID = 0,
    OUTBOUND = 1,
    INBOUND = 2
}

enum bit<8> dash_acl_action_t {
    PERMIT = 0,
    DENY = 1
}

struct encap_data_t {
    bit<24> vni;
    IPv4Address underlay_sip;
    IPv4Address underlay_dip;
    EthernetAddress underlay_dmac;
}

struct metadata_t {
    dash_direction_t direction;
    EthernetAddress eni_addr;
    bit<16> eni_id;
    bit<16> vnet_id;
    bit<1> is_overlay_ip_v6;
    IPv4ORv6Address dst_ip_addr;
    IPv4ORv6Address src_ip_addr;
    bit<8> ip_protocol;
    bit<16> src_l4_port;
    bit<16> dst_l4_port;
    dash_acl_action_t acl_outcome;
    bit<32> meter_class;
    bit<2> meter_color;
    bool dropped;
    encap_data_t encap_data;
}

parser dash_parser(packet_in packet, out headers_t hd, inout metadata_t meta,
                   inout standard_metadata_t standard_meta) {
    state start {
        packet.extract(hd.ethernet);
        transition select(hd.ethernet.ether_type) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hd.ipv4);
        verify(hd.ipv4.version == 4w4, error.IPv4IncorrectVersion);
        verify(hd.ipv4.ihl >= 5, error.InvalidIPv4Header);
        transition select(hd.ipv4.ihl) {
            5: dispatch_on_protocol;
            default: parse_ipv4options;
        }
    }
    state parse_ipv4options {
        packet.extract(hd.ipv4options, (bit<32>)(((bit<16>)hd.ipv4.ihl - 5) * 32));
        transition dispatch_on_protocol;
    }
    state dispatch_on_protocol {
        transition select(hd.ipv4.protocol) {
            17: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hd.udp);
        transition select(hd.udp.dst_port) {
            UDP_PORT_VXLAN: parse_vxlan;
            default: accept;
        }
    }
    state parse_vxlan {
        packet.extract(hd.vxlan);
        packet.extract(hd.inner_ethernet);
        transition select(hd.inner_ethernet.ether_type) {
            0x0800: parse_inner_ipv4;
            default: accept;
        }
    }
    state parse_inner_ipv4 {
        packet.extract(hd.inner_ipv4);
        transition accept;
    }
}

control dash_verify_checksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
                        { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                          hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                          hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr,
                          hdr.ipv4.dst_addr },
                        hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

// One ACL stage; the pipeline instantiates it twice (P4Info names each instance's table).
control acl_stage(inout headers_t hdr, inout metadata_t meta) {
    action permit() {
        meta.acl_outcome = dash_acl_action_t.PERMIT;
    }
    action deny() {
        meta.acl_outcome = dash_acl_action_t.DENY;
        meta.dropped = true;
    }
    @SaiTable[name = "dash_acl_rule", api = "dash_acl", isobject = "true"]
    table acl {
        key = {
            meta.eni_id : exact @SaiVal[type = "sai_object_id_t"];
            meta.dst_ip_addr : ternary @SaiVal[name = "dip", type = "sai_ip_prefix_list_t"];
            meta.src_ip_addr : ternary @SaiVal[name = "sip", type = "sai_ip_prefix_list_t"];
            meta.ip_protocol : ternary @SaiVal[name = "protocol", type = "sai_u8_list_t"];
            meta.src_l4_port : range @SaiVal[name = "src_port", type = "sai_u16_range_list_t"];
            meta.dst_l4_port : range @SaiVal[name = "dst_port", type = "sai_u16_range_list_t"];
        }
        actions = {
            permit;
            @defaultonly deny;
        }
        default_action = deny;
    }
    apply {
        acl.apply();
    }
}

control dash_ingress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    counter(1024, CounterType.packets_and_bytes) eni_counter;
    meter(1024, MeterType.bytes) eni_meter;
    acl_stage() outbound_acl;
    acl_stage() inbound_acl;

    action set_outbound_direction() {
        meta.direction = dash_direction_t.OUTBOUND;
    }
    action set_inbound_direction() {
        meta.direction = dash_direction_t.INBOUND;
    }
    @SaiTable[name = "direction_lookup", api = "dash_direction_lookup"]
    table direction_lookup {
        key = {
            hdr.vxlan.vni : exact @SaiVal[name = "VNI"];
        }
        actions = {
            set_outbound_direction;
            @defaultonly set_inbound_direction;
        }
        const default_action = set_inbound_direction;
    }

    action set_eni(@SaiVal[type = "sai_object_id_t"] bit<16> eni_id,
                   @SaiVal[type = "sai_object_id_t"] bit<16> vnet_id,
                   bit<32> meter_class) {
        meta.eni_id = eni_id;
        meta.vnet_id = vnet_id;
        meta.meter_class = meter_class;
    }
    action deny() {
        meta.dropped = true;
    }
    @SaiTable[name = "eni", api = "dash_eni", order = 1, isobject = "true"]
    table eni {
        key = {
            meta.eni_addr : exact @SaiVal[name = "address", type = "sai_mac_t"];
            meta.direction : exact @SaiVal[name = "direction", type = "sai_dash_direction_t"];
        }
        actions = {
            set_eni;
            @defaultonly deny;
        }
        const default_action = deny;
    }

    action route_vnet(@SaiVal[type = "sai_object_id_t"] bit<24> dest_vni,
                      IPv4Address underlay_dip, EthernetAddress underlay_dmac) {
        meta.encap_data.vni = dest_vni;
        meta.encap_data.underlay_dip = underlay_dip;
        meta.encap_data.underlay_dmac = underlay_dmac;
    }
    action drop() {
        meta.dropped = true;
    }
    @SaiTable[name = "outbound_routing", api = "dash_outbound_routing"]
    table outbound_routing {
        key = {
            meta.eni_id : exact @SaiVal[type = "sai_object_id_t"];
            meta.is_overlay_ip_v6 : exact @SaiVal[name = "destination_is_v6"];
            meta.dst_ip_addr : lpm @SaiVal[name = "destination"];
        }
        actions = {
            route_vnet;
            drop;
        }
        const default_action = drop;
    }

    action set_underlay_source(IPv4Address underlay_sip) {
        meta.encap_data.underlay_sip = underlay_sip;
    }
    @SaiTable[ignored = "true"]
    table appliance {
        key = {
            meta.eni_id : ternary;
        }
        actions = {
            set_underlay_source;
        }
        size = 8;
    }

    apply {
        meta.dropped = false;
        meta.is_overlay_ip_v6 = 0;
        meta.acl_outcome = dash_acl_action_t.PERMIT;
        if (!hdr.vxlan.isValid() || !hdr.inner_ipv4.isValid()) {
            mark_to_drop(standard_metadata);
            return;
        }
        direction_lookup.apply();
        if (meta.direction == dash_direction_t.OUTBOUND) {
            meta.eni_addr = hdr.inner_ethernet.src_addr;
        } else {
            meta.eni_addr = hdr.inner_ethernet.dst_addr;
        }
        meta.dst_ip_addr = (IPv4ORv6Address)hdr.inner_ipv4.dst_addr;
        meta.src_ip_addr = (IPv4ORv6Address)hdr.inner_ipv4.src_addr;
        meta.ip_protocol = hdr.inner_ipv4.protocol;
        meta.src_l4_port = 0;
        meta.dst_l4_port = 0;
        eni.apply();
        if (meta.dropped) {
            mark_to_drop(standard_metadata);
            return;
        }
        appliance.apply();
        eni_counter.count((bit<32>)meta.eni_id);
        eni_meter.execute_meter((bit<32>)meta.eni_id, meta.meter_color);
        if (meta.direction == dash_direction_t.OUTBOUND) {
            outbound_acl.apply(hdr, meta);
        } else {
            inbound_acl.apply(hdr, meta);
        }
        if (meta.acl_outcome == dash_acl_action_t.DENY) {
            mark_to_drop(standard_metadata);
            return;
        }
        outbound_routing.apply();
        if (meta.dropped) {
            mark_to_drop(standard_metadata);
            return;
        }
        // re-encapsulate towards the underlay next hop
        hdr.ethernet.dst_addr = meta.encap_data.underlay_dmac;
        hdr.ipv4.src_addr = meta.encap_data.underlay_sip;
        hdr.ipv4.dst_addr = meta.encap_data.underlay_dip;
        hdr.ipv4.ttl = 64;
        hdr.vxlan.vni = meta.encap_data.vni;
        hdr.udp.checksum = 0;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }
}

control dash_egress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

control dash_compute_checksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,
                        { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                          hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset,
                          hdr.ipv4.ttl, hdr.ipv4.protocol, hdr.ipv4.src_addr,
                          hdr.ipv4.dst_addr },
                        hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control dash_deparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4options);
        packet.emit(hdr.udp);
        packet.emit(hdr.vxlan);
        packet.emit(hdr.inner_ethernet);
        packet.emit(hdr.inner_ipv4);
    }
}

V1Switch(dash_parser(), dash_verify_checksum(), dash_ingress(), dash_egress(),
         dash_compute_checksum(), dash_deparser()) main;
