/* The loss simulator, departure side: a result leaving by port p is dropped with probability
 * egress_loss[p] / 2^32 (all zero by default). Only aggregation results are affected. */
#ifndef P4REDUCE_EGRESS_LOSS_P4
#define P4REDUCE_EGRESS_LOSS_P4

#include "headers.p4"

control EgressLoss(out bit<1> lost, in standard_metadata_t sm) {
    register<bit<32>>(PORTS) egress_loss;

    apply {
        lost = 0;
        bit<32> threshold;
        egress_loss.read(threshold, (bit<32>)sm.egress_port);
        if (threshold != 0) {
            bit<32> r;
            random(r, 32w0, 32w0xFFFFFFFF);
            if (r < threshold) {
                lost = 1;
            }
        }
    }
}

#endif
