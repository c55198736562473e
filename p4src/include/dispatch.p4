/* What leaves after the slot state was updated (docs/protocol.md, "Switch rules"):
 *   new contribution that completes the slot   -> multicast the result to the job's group
 *   new contribution, slot still open          -> absorbed (dropped)
 *   duplicate into a complete slot             -> the stored result unicast to the sender
 *   duplicate into an open slot                -> dropped, never added
 * A result leaves from the switch's address and port; egress (ReplicaRewrite) then writes
 * each replica's destination, and the unicast answer goes back to its sender directly.
 *
 * ToR role (docs/protocol.md, "Hierarchical aggregation"): a job with an `uplink` entry has
 * a parent switch, to which this switch is one worker. "Complete" then means the local count
 * is complete, and the result is not known until the parent's comes down:
 *   new contribution that completes the local count  -> the partial sum sent up (EV_UP)
 *   duplicate, the parent's result stored            -> the stored result unicast to the sender
 *   duplicate, local count complete, nothing stored  -> the partial sum sent up again
 *                                                       (EV_UP_RETRANSMIT: the lost link may
 *                                                       be either way between here and the parent)
 *   the parent's result, taken (OP_DOWN)             -> stored by the steps before, multicast
 *                                                       to the job's group (EV_DOWN)
 *   the parent's result, not taken                   -> dropped (EV_DUPLICATE)
 * A switch without an uplink entry for the job is its root: it behaves as above. */
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

    /* The parent of a job (ToR role): the port towards it, its MAC and IPv4 address, and
     * this switch's rank in the parent's job (its bit in the parent's bitmap). */
    bool has_parent = false;
    bit<9>  parent_port = 0;
    bit<48> parent_mac = 0;
    bit<32> parent_ip = 0;
    bit<8>  up_rank = 0;
    action to_parent(bit<9> port, bit<48> mac, bit<32> ip, bit<8> rank) {
        has_parent = true;
        parent_port = port;
        parent_mac = mac;
        parent_ip = ip;
        up_rank = rank;
    }
    table uplink {
        key = { meta.job_index: exact; }
        actions = { to_parent; NoAction; }
        default_action = NoAction();
        size = MAX_JOBS;
    }

    /* Turn the packet into this switch's contribution to the parent's job: the cell's
     * partial sum (or the stored one, when sent again), from this switch's address and
     * AGG_PORT to the parent's, with this switch's rank there; no result-side flag. */
    action make_contribution() {
        hdr.ethernet.dstAddr = parent_mac;
        hdr.ethernet.srcAddr = meta.switch_mac;
        hdr.ipv4.srcAddr = hdr.ipv4.dstAddr;
        hdr.ipv4.dstAddr = parent_ip;
        hdr.udp.srcPort = AGG_PORT;
        hdr.udp.dstPort = AGG_PORT;
        hdr.udp.checksum = 0;
        hdr.ipv4.ttl = RESULT_TTL;
        hdr.ipv4.identification = 0;
        hdr.agg.flags = 0;
        hdr.agg.rank = up_rank;
        meta.is_result = 1;
        meta.ip_changed = 1;
    }

    apply {
        if (meta.op != OP_DOWN && meta.from_controller == 0) {
            uplink.apply();
        }
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
        } else if (meta.op == OP_DOWN && meta.dup == 1) {
            meta.event = EV_DUPLICATE;
        } else if (meta.dup == 0 && meta.complete == 0) {
            meta.event = EV_CONTRIBUTION;
        } else if (meta.dup == 1 && meta.complete == 0) {
            meta.event = EV_DUPLICATE;
        } else if (has_parent && meta.stored == 0) {
            /* locally complete, the parent's result not here yet: (again) up */
            make_contribution();
            sm.egress_spec = parent_port;
            meta.event = meta.dup == 0 ? EV_UP : EV_UP_RETRANSMIT;
        } else {
            make_result();
            if (meta.op == OP_DOWN) {
                meta.event = EV_DOWN;
                meta.multicast = 1;
                sm.mcast_grp = meta.mgid;
            } else if (meta.dup == 0) {
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
        }
        if (meta.is_result == 1) {
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
