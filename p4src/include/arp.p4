/* ARP responder for the switch's own addresses: a request for a target in arp_replies is
 * answered out of its ingress port with the configured MAC. Other ARP is ordinary traffic. */
#ifndef P4REDUCE_ARP_P4
#define P4REDUCE_ARP_P4

#include "headers.p4"

control ArpResponder(inout headers_t hdr, inout standard_metadata_t sm, out bool answered) {
    action reply(bit<48> mac) {
        hdr.ethernet.dstAddr = hdr.arp.sha;
        hdr.ethernet.srcAddr = mac;
        hdr.arp.oper = ARP_OPER_REPLY;
        hdr.arp.tha = hdr.arp.sha;
        bit<32> target = hdr.arp.tpa;
        hdr.arp.tpa = hdr.arp.spa;
        hdr.arp.sha = mac;
        hdr.arp.spa = target;
        sm.egress_spec = sm.ingress_port;
    }
    table arp_replies {
        key = { hdr.arp.tpa: exact; }
        actions = { reply; NoAction; }
        default_action = NoAction();
        size = 16;
    }
    apply {
        answered = false;
        if (hdr.arp.htype == ARP_HTYPE_ETHERNET && hdr.arp.ptype == ETHERTYPE_IPV4
                && hdr.arp.oper == ARP_OPER_REQUEST) {
            answered = arp_replies.apply().hit;
        }
    }
}

#endif
