/* Admission of an aggregation packet: the sender must be registered for the job (job id,
 * source IPv4 address, source UDP port), carry its job's key, claim its own rank, address a
 * slot inside the job's range, and the packet must be well formed. Anything else gets a drop
 * event and never reaches the slot state.
 *
 * The key is action data of the worker's entry, not a match field: the lookup stays one
 * exact match on (job id, source address, source port) (Tofino), and a packet from a
 * registered sender with the wrong key is told apart (EV_BAD_KEY, counted under the job it
 * names) from an unregistered sender (EV_UNKNOWN_SENDER, job index 0).
 *
 * ToR role (docs/protocol.md, "Hierarchical aggregation"): the job's parent switch is one more
 * entry of the same table, (job id, parent's IPv4 address, AGG_PORT) -> admit_parent. Its
 * packets are the parent's results (FLAG_RESULT set, any rank): meta.op = OP_DOWN, and the
 * later steps store them in the cell instead of adding them. */
#ifndef P4REDUCE_ADMISSION_P4
#define P4REDUCE_ADMISSION_P4

#include "headers.p4"

control Admission(inout headers_t hdr, inout metadata_t meta, in standard_metadata_t sm)
                 (bit<4> msg_type) {
    bit<8>  rank = 0;
    bit<16> slot_base = 0;
    bit<16> slot_count = 0;
    bit<32> registered_key = 0;

    /* One entry per worker of every job, installed by the controller. */
    action admit(bit<8> job_index, bit<8> worker_rank, bit<8> n_workers, bit<32> worker_bit,
                 bit<16> base, bit<16> count, bit<16> mgid, bit<32> job_key) {
        meta.job_index = job_index;
        rank = worker_rank;
        meta.n_workers = n_workers;
        meta.worker_bit = worker_bit;
        slot_base = base;
        slot_count = count;
        meta.mgid = mgid;
        registered_key = job_key;
    }
    /* The job's parent switch: its results come down to be stored and multicast here. */
    action admit_parent(bit<8> job_index, bit<8> n_workers, bit<16> base, bit<16> count,
                        bit<16> mgid, bit<32> job_key) {
        meta.job_index = job_index;
        meta.n_workers = n_workers;
        meta.worker_bit = 0;
        slot_base = base;
        slot_count = count;
        meta.mgid = mgid;
        registered_key = job_key;
        meta.op = OP_DOWN;
    }
    action unknown_sender() {
        meta.event = EV_UNKNOWN_SENDER;
    }
    table workers {
        key = {
            hdr.agg.jobId: exact;
            hdr.ipv4.srcAddr: exact;
            hdr.udp.srcPort: exact;
        }
        actions = { admit; admit_parent; unknown_sender; }
        default_action = unknown_sender();
        size = WORKER_TABLE_SIZE;
    }

    apply {
        workers.apply();
        if (meta.event == EV_NONE && hdr.agg.key != registered_key) {
            meta.event = EV_BAD_KEY;
        }
        if (meta.event == EV_NONE) {
            bool has_payload = (hdr.agg.flags & FLAG_NO_PAYLOAD) == 0;
            bit<16> udp_len = has_payload ? UDP_LEN_FULL : UDP_LEN_EMPTY;
            bit<32> frame_len = has_payload ? FRAME_LEN_FULL : FRAME_LEN_EMPTY;
            /* a worker's contribution has no result-side flag; a parent's result has
             * FLAG_RESULT (and may have the others) */
            bool flags_ok = meta.op == OP_DOWN
                ? (hdr.agg.flags & FLAG_RESULT) != 0
                : (hdr.agg.flags & (FLAG_RESULT | FLAG_RETRANSMIT | FLAG_END)) == 0;
            /* the sparse program also takes dense messages: one job can use both modes; a
             * MSG_CONTROL is malformed here (it is taken from the CPU port only) */
            if ((hdr.agg.msgType != msg_type && hdr.agg.msgType != MSG_DENSE)
                    || !flags_ok
                    || (has_payload && !hdr.data.isValid())
                    || hdr.udp.length != udp_len
                    || hdr.ipv4.totalLen != udp_len + 20
                    || sm.packet_length != frame_len
                    || sm.checksum_error == 1) {
                meta.event = EV_MALFORMED;
            } else if (meta.op != OP_DOWN && hdr.agg.rank != rank) {
                meta.event = EV_WRONG_RANK;
            } else if ((bit<16>)hdr.agg.slot >= slot_count) {
                meta.event = EV_SLOT_RANGE;
            } else {
                /* slot_base + slot stays below POOL_SLOTS: the controller allocates ranges
                 * inside the pool. */
                meta.slot_abs = (bit<32>)(slot_base + (bit<16>)hdr.agg.slot);
                meta.cell = (meta.slot_abs << 1) | (bit<32>)hdr.agg.set;
            }
        }
    }
}

#endif
