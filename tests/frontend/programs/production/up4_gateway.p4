// A mobile user-plane gateway in the manner of ONF's UP4 (our own program, written for the
// constructs it uses): GTP-U tunnels with an extension-header stack, the GTP-U port as a
// parser value set, an interfaces table with const entries, uplink/downlink session and
// termination tables, a multi-field application classifier (lpm, ternary and range keys),
// tunnel peers, pre-QoS counters and per-session meters indexed by ids, a digest asking the
// control plane to buffer-notify, packet-in/packet-out controller headers, GTP-U
// encapsulation, and IPv4 checksums over list expressions.
#include <core.p4>
#include <v1model.p4>

#define MAX_UES 1024
#define CPU_PORT 255

typedef bit<32> ipv4_addr_t;
typedef bit<32> teid_t;
typedef bit<32> counter_index_t;
typedef bit<8> tunnel_peer_id_t;
typedef bit<8> app_id_t;
typedef bit<32> session_meter_idx_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8> PROTO_UDP = 17;
const bit<8> GTPU_GPDU = 0xff;
const bit<8> GTPU_NEXT_EXT_PSC = 0x85;
const bit<8> GTPU_NEXT_EXT_NONE = 0x0;

enum bit<8> InterfaceType {
    UNKNOWN = 0x0,
    ACCESS = 0x1,
    CORE = 0x2
}

enum bit<8> Direction {
    UNKNOWN = 0x0,
    UPLINK = 0x1,
    DOWNLINK = 0x2,
    OTHER = 0x3
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<8> reserved;
}

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
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
    bit<8> proto;
    bit<16> checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_t {
    bit<16> sport;
    bit<16> dport;
    bit<16> len;
    bit<16> checksum;
}

header gtpu_t {
    bit<3> version;
    bit<1> pt;
    bit<1> spare;
    bit<1> ex_flag;
    bit<1> seq_flag;
    bit<1> npdu_flag;
    bit<8> msgtype;
    bit<16> msglen;
    teid_t teid;
}

header gtpu_options_t {
    bit<16> seq_num;
    bit<8> n_pdu_num;
    bit<8> next_ext;
}

// A GTP-U extension header (PDU session container): length, QFI, next type.
header gtpu_ext_t {
    bit<8> len;
    bit<4> type;
    bit<4> spare0;
    bit<1> ppp;
    bit<1> rqi;
    bit<6> qfi;
    bit<8> next_ext;
}

struct parsed_headers_t {
    packet_out_t packet_out;
    packet_in_t packet_in;
    ethernet_t ethernet;
    ipv4_t gtpu_ipv4;
    udp_t gtpu_udp;
    gtpu_t gtpu;
    gtpu_options_t gtpu_options;
    gtpu_ext_t[2] gtpu_ext;
    ipv4_t ipv4;
    udp_t udp;
    ipv4_t inner_ipv4;
    udp_t inner_udp;
}

struct ddn_digest_t {
    ipv4_addr_t ue_address;
}

struct local_meta_t {
    Direction direction;
    bit<16> ue_l4_port;
    bit<16> inet_l4_port;
    ipv4_addr_t ue_addr;
    ipv4_addr_t inet_addr;
    bit<8> ip_proto;
    bit<8> src_iface;
    bool needs_gtpu_decap;
    bool needs_tunneling;
    bool needs_buffering;
    bool needs_dropping;
    teid_t teid;
    app_id_t application_id;
    counter_index_t ctr_idx;
    tunnel_peer_id_t tunnel_peer_id;
    teid_t tunnel_out_teid;
    ipv4_addr_t tunnel_out_src;
    ipv4_addr_t tunnel_out_dst;
    bit<16> tunnel_out_udp_sport;
    session_meter_idx_t session_meter_idx;
    bit<2> color;
}

parser ParserImpl(packet_in packet, out parsed_headers_t hdr, inout local_meta_t local_meta,
                  inout standard_metadata_t std_meta) {
    value_set<bit<16>>(4) gtpu_ports;

    state start {
        transition select(std_meta.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.proto) {
            PROTO_UDP: parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dport) {
            gtpu_ports: parse_gtpu;
            default: accept;
        }
    }
    state parse_gtpu {
        packet.extract(hdr.gtpu);
        local_meta.teid = hdr.gtpu.teid;
        transition select(hdr.gtpu.ex_flag, hdr.gtpu.seq_flag, hdr.gtpu.npdu_flag) {
            (0, 0, 0): parse_inner_ipv4;
            default: parse_gtpu_options;
        }
    }
    state parse_gtpu_options {
        packet.extract(hdr.gtpu_options);
        transition select(hdr.gtpu_options.next_ext) {
            GTPU_NEXT_EXT_PSC: parse_gtpu_ext;
            default: parse_inner_ipv4;
        }
    }
    state parse_gtpu_ext {
        packet.extract(hdr.gtpu_ext.next);
        transition select(hdr.gtpu_ext.last.next_ext) {
            GTPU_NEXT_EXT_NONE: parse_inner_ipv4;
            default: parse_gtpu_ext;
        }
    }
    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
        transition select(hdr.inner_ipv4.proto) {
            PROTO_UDP: parse_inner_udp;
            default: accept;
        }
    }
    state parse_inner_udp {
        packet.extract(hdr.inner_udp);
        transition accept;
    }
}

control VerifyChecksumImpl(inout parsed_headers_t hdr, inout local_meta_t meta) {
    apply {
        verify_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control PreQosPipe(inout parsed_headers_t hdr, inout local_meta_t local_meta,
                   inout standard_metadata_t std_meta) {
    counter(MAX_UES, CounterType.packets_and_bytes) pre_qos_counter;
    meter(MAX_UES, MeterType.bytes) session_meter;

    action _initialize_metadata() {
        local_meta.needs_gtpu_decap = false;
        local_meta.needs_tunneling = false;
        local_meta.needs_buffering = false;
        local_meta.needs_dropping = false;
        local_meta.application_id = 0;
    }

    action set_source_iface(InterfaceType src_iface, Direction direction) {
        local_meta.src_iface = src_iface;
        local_meta.direction = direction;
    }
    table interfaces {
        key = {
            hdr.ipv4.dst_addr : lpm @name("ipv4_dst_prefix");
        }
        actions = {
            set_source_iface;
        }
        const entries = {
            0x0a000000 &&& 0xff000000 : set_source_iface(InterfaceType.ACCESS, Direction.UPLINK);
            0xc0a80000 &&& 0xffff0000 : set_source_iface(InterfaceType.CORE, Direction.DOWNLINK);
        }
    }

    action set_session_uplink(session_meter_idx_t session_meter_idx) {
        local_meta.needs_gtpu_decap = true;
        local_meta.session_meter_idx = session_meter_idx;
    }
    action set_session_uplink_drop() {
        local_meta.needs_dropping = true;
    }
    table sessions_uplink {
        key = {
            hdr.ipv4.dst_addr : exact @name("n3_address");
            local_meta.teid : exact @name("teid");
        }
        actions = {
            set_session_uplink;
            set_session_uplink_drop;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action set_session_downlink(tunnel_peer_id_t tunnel_peer_id,
                                session_meter_idx_t session_meter_idx) {
        local_meta.tunnel_peer_id = tunnel_peer_id;
        local_meta.session_meter_idx = session_meter_idx;
    }
    action set_session_downlink_buff(session_meter_idx_t session_meter_idx) {
        local_meta.needs_buffering = true;
        local_meta.session_meter_idx = session_meter_idx;
    }
    table sessions_downlink {
        key = {
            hdr.ipv4.dst_addr : exact @name("ue_address");
        }
        actions = {
            set_session_downlink;
            set_session_downlink_buff;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action uplink_term_fwd(counter_index_t ctr_idx) {
        local_meta.ctr_idx = ctr_idx;
    }
    action uplink_term_drop(counter_index_t ctr_idx) {
        local_meta.ctr_idx = ctr_idx;
        local_meta.needs_dropping = true;
    }
    table terminations_uplink {
        key = {
            local_meta.ue_addr : exact @name("ue_address");
            local_meta.application_id : exact @name("app_id");
        }
        actions = {
            uplink_term_fwd;
            uplink_term_drop;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action downlink_term_fwd(counter_index_t ctr_idx, teid_t teid) {
        local_meta.ctr_idx = ctr_idx;
        local_meta.tunnel_out_teid = teid;
        local_meta.needs_tunneling = true;
    }
    table terminations_downlink {
        key = {
            local_meta.ue_addr : exact @name("ue_address");
            local_meta.application_id : exact @name("app_id");
        }
        actions = {
            downlink_term_fwd;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action set_app_id(app_id_t app_id) {
        local_meta.application_id = app_id;
    }
    table applications {
        key = {
            local_meta.inet_addr : lpm @name("app_ip_addr");
            local_meta.inet_l4_port : range @name("app_l4_port");
            local_meta.ip_proto : ternary @name("app_ip_proto");
        }
        actions = {
            set_app_id;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action load_tunnel_param(ipv4_addr_t src_addr, ipv4_addr_t dst_addr, bit<16> sport) {
        local_meta.tunnel_out_src = src_addr;
        local_meta.tunnel_out_dst = dst_addr;
        local_meta.tunnel_out_udp_sport = sport;
    }
    table tunnel_peers {
        key = {
            local_meta.tunnel_peer_id : exact @name("tunnel_peer_id");
        }
        actions = {
            load_tunnel_param;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action do_forward(bit<9> port) {
        std_meta.egress_spec = port;
    }
    table routes {
        key = {
            hdr.ipv4.dst_addr : lpm @name("dst_prefix");
        }
        actions = {
            do_forward;
            @defaultonly NoAction;
        }
        const default_action = NoAction;
    }

    action gtpu_decap() {
        hdr.gtpu_ipv4.setInvalid();
        hdr.gtpu_udp.setInvalid();
        hdr.gtpu.setInvalid();
        hdr.gtpu_options.setInvalid();
        hdr.gtpu_ext[0].setInvalid();
        hdr.gtpu_ext[1].setInvalid();
        hdr.ipv4 = hdr.inner_ipv4;
        hdr.inner_ipv4.setInvalid();
        hdr.udp = hdr.inner_udp;
        hdr.inner_udp.setInvalid();
    }

    action gtpu_encap() {
        hdr.inner_ipv4 = hdr.ipv4;
        hdr.inner_udp = hdr.udp;
        hdr.ipv4.setValid();
        hdr.ipv4.version = 4;
        hdr.ipv4.ihl = 5;
        hdr.ipv4.dscp = 0;
        hdr.ipv4.ecn = 0;
        hdr.ipv4.total_len = hdr.inner_ipv4.total_len + 20 + 8 + 8;
        hdr.ipv4.identification = 0x1513;
        hdr.ipv4.flags = 0;
        hdr.ipv4.frag_offset = 0;
        hdr.ipv4.ttl = 64;
        hdr.ipv4.proto = PROTO_UDP;
        hdr.ipv4.src_addr = local_meta.tunnel_out_src;
        hdr.ipv4.dst_addr = local_meta.tunnel_out_dst;
        hdr.ipv4.checksum = 0;
        hdr.udp.setValid();
        hdr.udp.sport = local_meta.tunnel_out_udp_sport;
        hdr.udp.dport = 2152;
        hdr.udp.len = hdr.inner_ipv4.total_len + 8 + 8;
        hdr.udp.checksum = 0;
        hdr.gtpu.setValid();
        hdr.gtpu.version = 1;
        hdr.gtpu.pt = 1;
        hdr.gtpu.spare = 0;
        hdr.gtpu.ex_flag = 0;
        hdr.gtpu.seq_flag = 0;
        hdr.gtpu.npdu_flag = 0;
        hdr.gtpu.msgtype = GTPU_GPDU;
        hdr.gtpu.msglen = hdr.inner_ipv4.total_len;
        hdr.gtpu.teid = local_meta.tunnel_out_teid;
    }

    apply {
        if (hdr.packet_out.isValid()) {
            hdr.packet_out.setInvalid();
            exit;
        }
        _initialize_metadata();
        if (!hdr.ipv4.isValid()) {
            return;
        }
        if (!interfaces.apply().hit) {
            return;
        }
        if (local_meta.direction == Direction.UPLINK) {
            if (!hdr.gtpu.isValid()) {
                mark_to_drop(std_meta);
                exit;
            }
            sessions_uplink.apply();
            local_meta.ue_addr = hdr.inner_ipv4.src_addr;
            local_meta.inet_addr = hdr.inner_ipv4.dst_addr;
            local_meta.ip_proto = hdr.inner_ipv4.proto;
            local_meta.inet_l4_port = hdr.inner_udp.isValid() ? hdr.inner_udp.dport : 16w0;
        } else if (local_meta.direction == Direction.DOWNLINK) {
            sessions_downlink.apply();
            local_meta.ue_addr = hdr.ipv4.dst_addr;
            local_meta.inet_addr = hdr.ipv4.src_addr;
            local_meta.ip_proto = hdr.ipv4.proto;
            local_meta.inet_l4_port = hdr.udp.isValid() ? hdr.udp.sport : 16w0;
            tunnel_peers.apply();
        }
        applications.apply();
        if (local_meta.direction == Direction.UPLINK) {
            terminations_uplink.apply();
        } else {
            terminations_downlink.apply();
        }
        session_meter.execute_meter(local_meta.session_meter_idx, local_meta.color);
        pre_qos_counter.count(local_meta.ctr_idx);
        if (local_meta.needs_buffering) {
            digest<ddn_digest_t>(1, { local_meta.ue_addr });
            mark_to_drop(std_meta);
            exit;
        }
        if (local_meta.needs_dropping || local_meta.color == 2) {
            mark_to_drop(std_meta);
            exit;
        }
        if (local_meta.needs_gtpu_decap) {
            gtpu_decap();
        }
        if (local_meta.needs_tunneling) {
            gtpu_encap();
        }
        routes.apply();
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
}

control PostQosPipe(inout parsed_headers_t hdr, inout local_meta_t local_meta,
                    inout standard_metadata_t std_meta) {
    apply {
        if (std_meta.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = std_meta.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control ComputeChecksumImpl(inout parsed_headers_t hdr, inout local_meta_t local_meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.proto, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control DeparserImpl(packet_out packet, in parsed_headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.gtpu);
        packet.emit(hdr.gtpu_options);
        packet.emit(hdr.gtpu_ext);
        packet.emit(hdr.inner_ipv4);
        packet.emit(hdr.inner_udp);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), PreQosPipe(), PostQosPipe(),
         ComputeChecksumImpl(), DeparserImpl()) main;
