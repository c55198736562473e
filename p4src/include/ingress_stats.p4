/* One counter update per aggregation packet, job_counters[job index * 16 + event], and the
 * drop for every event that does not send a result. Unknown senders count under job index 0
 * (their job is not known). Control messages are not counted. */
#ifndef P4REDUCE_INGRESS_STATS_P4
#define P4REDUCE_INGRESS_STATS_P4

#include "headers.p4"

control IngressStats(in metadata_t meta, inout standard_metadata_t sm) {
    counter(JOB_COUNTERS, CounterType.packets) job_counters;

    apply {
        if (meta.from_controller == 1) {
            /* the controller's own messages are not job traffic: not counted; an answered
             * one leaves for the CPU port, a malformed one is dropped */
            if (meta.event != EV_NONE) {
                mark_to_drop(sm);
            }
        } else {
            job_counters.count(((bit<32>)meta.job_index << 4) | (bit<32>)meta.event);
            /* a result (EV_COMPLETION, EV_RETRANSMIT_ANSWERED, EV_DOWN) or a partial sum
             * (EV_UP, EV_UP_RETRANSMIT) leaves; every other event drops the packet */
            if (meta.is_result == 0) {
                mark_to_drop(sm);
            }
        }
    }
}

#endif
