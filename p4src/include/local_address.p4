/* Which IPv4 destinations are the switch itself, and the switch's MAC for that address.
 * Aggregation packets are taken only when addressed to the switch; the same port between two
 * hosts is ordinary traffic. Results leave from the MAC given here, whatever Ethernet
 * destination the packet that produced them had. */
#ifndef P4REDUCE_LOCAL_ADDRESS_P4
#define P4REDUCE_LOCAL_ADDRESS_P4

#include "headers.p4"

control LocalAddress(in headers_t hdr, inout metadata_t meta) {
    action is_switch(bit<48> mac) {
        meta.to_switch = 1;
        meta.switch_mac = mac;
    }
    table switch_ipv4 {
        key = { hdr.ipv4.dstAddr: exact; }
        actions = { is_switch; NoAction; }
        default_action = NoAction();
        size = 16;
    }
    apply {
        switch_ipv4.apply();
    }
}

#endif
