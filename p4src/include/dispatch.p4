/* What leaves after the slot state was updated (docs/protocol.md, "Switch rules"):
 *   new contribution that completes the slot   -> multicast the result to the job's group
 *   new contribution, slot still open          -> absorbed (dropped)
 *   duplicate into a complete slot             -> the stored result unicast to the sender
 *   duplicate into an open slot                -> dropped, never added
 * A result leaves from the switch's address and port; egress (ReplicaRewrite) then writes
 * each replica's destination, and the unicast answer goes back to its sender directly. */
#ifndef P4REDUCE_DISPATCH_P4
#define P4REDUCE_DISPATCH_P4

#include "headers.p4"

control ResultDispatch(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t sm) {
    /* Turn the packet into a result: addresses swapped (the sender becomes the destination,
     * the switch the source), lengths set for a full or a header-only result. */
    action make_result() {
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = meta.switch_mac;
        bit<32> ip = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = hdr.ipv4.srcAddr;
        hdr.ipv4.srcAddr = ip;
        hdr.udp.dstPort = hdr.udp.srcPort;
        hdr.udp.srcPort = AGG_PORT;
        hdr.udp.checksum = 0;
        hdr.ipv4.ttl = RESULT_TTL;
        hdr.ipv4.identification = 0;
        hdr.agg.flags = FLAG_RESULT;
        meta.is_result = 1;
        meta.ip_changed = 1;
    }

    apply {
        if (meta.from_controller == 1) {
            /* the answer to a control message: the cell's state after the op, back to the
             * controller (docs/protocol.md, "Control messages"); exponent, nonfinite, next
             * and the lanes are already in the packet */
            hdr.agg.flags = hdr.agg.flags | FLAG_RESULT;
            hdr.agg.block = meta.bitmap_word;
            hdr.agg.key = (bit<32>)meta.count;
            if ((hdr.agg.flags & FLAG_NO_PAYLOAD) != 0) {
                hdr.data.setInvalid();
            }
            sm.egress_spec = CPU_PORT;
        } else if (meta.dup == 0 && meta.complete == 0) {
            meta.event = EV_CONTRIBUTION;
        } else if (meta.dup == 1 && meta.complete == 0) {
            meta.event = EV_DUPLICATE;
        } else {
            make_result();
            if (meta.dup == 0) {
                meta.event = EV_COMPLETION;
                meta.multicast = 1;
                sm.mcast_grp = meta.mgid;
            } else {
                meta.event = EV_RETRANSMIT_ANSWERED;
                hdr.agg.flags = hdr.agg.flags | FLAG_RETRANSMIT;
                sm.egress_spec = sm.ingress_port;
            }
            if (hdr.agg.msgType == MSG_SPARSE && hdr.agg.next == NEXT_END) {
                hdr.agg.flags = hdr.agg.flags | FLAG_END;
            }
            if (meta.has_data == 1) {
                hdr.udp.length = UDP_LEN_FULL;
                hdr.ipv4.totalLen = IP_LEN_FULL;
            } else {
                hdr.agg.flags = hdr.agg.flags | FLAG_NO_PAYLOAD;
                hdr.data.setInvalid();
                hdr.udp.length = UDP_LEN_EMPTY;
                hdr.ipv4.totalLen = IP_LEN_EMPTY;
            }
        }
    }
}

#endif
