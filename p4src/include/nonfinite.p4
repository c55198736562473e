/* Non-finite flags per (slot, set): the OR of the `nonfinite` bytes the contributions carried
 * (NF_NAN, NF_POS_INF, NF_NEG_INF: a worker's block held NaN, +Inf or -Inf). Handled exactly
 * like the exponent register: the first contribution writes it (so a reused cell starts from
 * the packet's bits), later ones OR theirs in, a duplicate reads it; the value after the
 * update goes back in the packet, so a result and every retransmission answer carry the OR
 * over all workers, and each worker's host turns the whole block into NaN or the infinity. */
#ifndef P4REDUCE_NONFINITE_P4
#define P4REDUCE_NONFINITE_P4

#include "headers.p4"

control NonFiniteOr(inout headers_t hdr, in metadata_t meta) {
    register<bit<8>>(POOL_CELLS) nonfinite;

    apply {
        bit<8> f;
        nonfinite.read(f, meta.cell);
        if (meta.first == 1) {
            f = hdr.agg.nonfinite;
        } else if (meta.dup == 0) {
            f = f | hdr.agg.nonfinite;
        }
        nonfinite.write(meta.cell, f);
        hdr.agg.nonfinite = f;
    }
}

#endif
