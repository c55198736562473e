/* Ordinary traffic: an IPv4 route (longest prefix; TTL decremented, MACs rewritten; not for
 * IPv4 options or TTL <= 1), else L2 by destination MAC, else flood to FLOOD_MGID. */
#ifndef P4REDUCE_FORWARDING_P4
#define P4REDUCE_FORWARDING_P4

#include "headers.p4"

control Forwarding(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action route(bit<9> port, bit<48> src_mac, bit<48> dst_mac) {
        sm.egress_spec = port;
        hdr.ethernet.srcAddr = src_mac;
        hdr.ethernet.dstAddr = dst_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        meta.ip_changed = 1;
    }
    table ipv4_routes {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { route; drop; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    action to_port(bit<9> port) {
        sm.egress_spec = port;
    }
    action flood() {
        sm.mcast_grp = FLOOD_MGID;
        meta.flooded = 1;
    }
    table l2_forward {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { to_port; flood; drop; }
        default_action = flood();
        size = 1024;
    }
    apply {
        bool routed = false;
        if (hdr.ipv4.isValid() && hdr.ipv4.ihl == 5 && hdr.ipv4.ttl > 1) {
            routed = ipv4_routes.apply().hit;
        }
        if (!routed) {
            l2_forward.apply();
        }
    }
}

#endif
