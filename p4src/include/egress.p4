/* The egress pipeline both programs share: results get their per-replica destination, may
 * be lost on purpose (loss simulator) and are counted; flooded traffic never returns to the
 * port it came from. */
#ifndef P4REDUCE_EGRESS_P4
#define P4REDUCE_EGRESS_P4

#include "headers.p4"
#include "replica.p4"
#include "egress_loss.p4"
#include "egress_stats.p4"

control SwitchEgress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t sm) {
    ReplicaRewrite() replica;
    EgressLoss() loss;
    EgressStats() stats;

    apply {
        if (meta.flooded == 1 && sm.egress_port == sm.ingress_port) {
            mark_to_drop(sm);
        } else if (meta.is_result == 1) {
            bit<1> missing = 0;
            if (meta.multicast == 1) {
                replica.apply(hdr, meta, sm, missing);
            }
            bit<1> lost;
            loss.apply(lost, sm);
            egress_event_t event = EG_RESULT_SENT;
            if (missing == 1) {
                event = EG_NO_REPLICA;
            } else if (lost == 1) {
                event = EG_LOSS;
            }
            stats.apply(meta, event);
            if (event != EG_RESULT_SENT) {
                mark_to_drop(sm);
            }
        }
    }
}

#endif
