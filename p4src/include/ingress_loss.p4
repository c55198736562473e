/* The loss simulator, arrival side: an aggregation packet arriving on port p is dropped with
 * probability ingress_loss[p] / 2^32. All zero (the default) means no loss. The controller
 * writes the thresholds (p4reduce-ctl loss). Only aggregation packets are affected. */
#ifndef P4REDUCE_INGRESS_LOSS_P4
#define P4REDUCE_INGRESS_LOSS_P4

#include "headers.p4"

control IngressLoss(inout metadata_t meta, in standard_metadata_t sm) {
    register<bit<32>>(PORTS) ingress_loss;

    apply {
        bit<32> threshold;
        ingress_loss.read(threshold, (bit<32>)sm.ingress_port);
        if (threshold != 0) {
            bit<32> r;
            random(r, 32w0, 32w0xFFFFFFFF);
            if (r < threshold) {
                meta.event = EV_LOSS;
            }
        }
    }
}

#endif
