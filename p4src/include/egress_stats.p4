/* One counter update per result leaving (or dropped) in egress:
 * egress_counters[job index * 4 + egress event]. */
#ifndef P4REDUCE_EGRESS_STATS_P4
#define P4REDUCE_EGRESS_STATS_P4

#include "headers.p4"

control EgressStats(in metadata_t meta, in egress_event_t event) {
    counter(EGRESS_COUNTERS, CounterType.packets) egress_counters;

    apply {
        egress_counters.count(((bit<32>)meta.job_index << 2) | (bit<32>)event);
    }
}

#endif
