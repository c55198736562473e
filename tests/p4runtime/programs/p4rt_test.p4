// The P4Runtime server's test program: every entity kind P4Runtime can program, and packet
// I/O with the controller (CPU port 255).
#include <core.p4>
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> pad;
}

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> len;
    bit<16> id;
    bit<3>  flags;
    bit<13> frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    packet_in_t  packet_in;
    packet_out_t packet_out;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
}

struct learn_t {
    bit<48> src;
    bit<9>  port;
}

struct metadata_t {
    bit<1> special;
    bit<2> color;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout metadata_t meta,
                inout standard_metadata_t standard_metadata) {
    value_set<bit<16>>(4) type_vs;
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.type) {
            0x0800: parse_ipv4;
            type_vs: special;
            default: accept;
        }
    }
    state special {
        meta.special = 1;
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) l2_counter;
    direct_meter<bit<2>>(MeterType.bytes) l2_meter;
    counter(64, CounterType.packets_and_bytes) port_counter;
    counter(8, CounterType.packets) pkt_counter;
    meter(16, MeterType.packets) port_meter;
    register<bit<32>>(16) reg32;
    register<int<8>>(4) reg_signed;
    action_selector(HashAlgorithm.crc16, 32, 16) ecmp_sel;
    action_profile(32) prof;

    action drop() { mark_to_drop(standard_metadata); }
    action forward(bit<9> port) { standard_metadata.egress_spec = port; }
    action set_mcast(bit<16> grp) { standard_metadata.mcast_grp = grp; }
    action to_cpu() { standard_metadata.egress_spec = CPU_PORT; }
    action forward_and_clone(bit<9> port, bit<32> session) {
        standard_metadata.egress_spec = port;
        clone(CloneType.I2E, session);
    }
    action learn() { digest<learn_t>(1, {hdr.ethernet.src, standard_metadata.ingress_port}); }
    @defaultonly action only_default() { }
    action metered_forward(bit<9> port) {
        l2_meter.read(meta.color);
        standard_metadata.egress_spec = port;
    }

    table l2 {
        key = { hdr.ethernet.dst: exact @name("dst"); }
        actions = { forward; set_mcast; to_cpu; drop; forward_and_clone; NoAction;
                    only_default; metered_forward; }
        default_action = NoAction();
        counters = l2_counter;
        meters = l2_meter;
        size = 64;
    }
    table acl {
        key = {
            hdr.ethernet.type: exact @name("type");
            hdr.ipv4.dst: lpm @name("dst");
            hdr.ipv4.src: ternary @name("src");
            hdr.ipv4.proto: range @name("proto");
            hdr.ipv4.tos: optional @name("tos");
        }
        actions = { drop; NoAction; }
        default_action = NoAction();
    }
    table routes {
        key = { hdr.ipv4.dst: lpm @name("dst"); }
        actions = { forward; drop; }
        default_action = drop();
    }
    table ecmp {
        key = { hdr.ipv4.dst: exact @name("dst"); hdr.ipv4.src: selector; }
        actions = { forward; NoAction; }
        implementation = ecmp_sel;
    }
    table indirect {
        key = { hdr.ethernet.type: exact @name("type"); }
        actions = { forward; NoAction; }
        implementation = prof;
    }
    table consts {
        key = { hdr.ethernet.type: exact @name("type"); }
        actions = { NoAction; drop; }
        const entries = { 0x0806 : drop(); }
        const default_action = NoAction();
    }
    table ordered {
        key = { hdr.ethernet.type: ternary @name("type"); }
        actions = { NoAction; drop; }
        const entries = {
            0x0900 &&& 0xff00 : NoAction();
            0x0000 &&& 0x0000 : NoAction();
        }
    }
    table learning {
        key = { hdr.ethernet.src: exact @name("src"); }
        actions = { learn; NoAction; }
        default_action = learn();
    }

    apply {
        if (hdr.packet_out.isValid()) {
            if (hdr.packet_out.egress_port == CPU_PORT) {
                // echo: back to the controller, tagged with the port it came in on
                standard_metadata.egress_spec = CPU_PORT;
                hdr.packet_in.setValid();
                hdr.packet_in.ingress_port = standard_metadata.ingress_port;
                hdr.packet_in.pad = 0;
            } else {
                standard_metadata.egress_spec = hdr.packet_out.egress_port;
            }
            hdr.packet_out.setInvalid();
            return;
        }
        port_counter.count((bit<32>)standard_metadata.ingress_port);
        pkt_counter.count(0);
        bit<32> r;
        reg32.read(r, 0);
        reg32.write(0, r + 1);
        port_meter.execute_meter((bit<32>)standard_metadata.ingress_port, meta.color);
        learning.apply();
        consts.apply();
        ordered.apply();
        if (meta.special == 1) {
            standard_metadata.egress_spec = 7;
        }
        if (hdr.ipv4.isValid()) {
            acl.apply();
            routes.apply();
            ecmp.apply();
        }
        indirect.apply();
        l2.apply();
        if (standard_metadata.egress_spec == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in.pad = 0;
        }
    }
}

control MyEgress(inout headers_t hdr, inout metadata_t meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
