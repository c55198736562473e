/* Sparse only: the running minimum of the workers' "next non-zero block" per (slot, set).
 * The first contribution writes it, later ones take the minimum, a duplicate reads it. The
 * result carries the minimum: the block every worker sends next in this slot. */
#ifndef P4REDUCE_NEXT_MIN_P4
#define P4REDUCE_NEXT_MIN_P4

#include "headers.p4"

control NextMin(inout headers_t hdr, in metadata_t meta) {
    register<bit<32>>(POOL_CELLS) next_min;

    apply {
        bit<32> m;
        next_min.read(m, meta.cell);
        if (meta.first == 1) {
            m = hdr.agg.next;
        } else if (meta.dup == 0 && hdr.agg.next < m) {
            m = hdr.agg.next;
        }
        next_min.write(meta.cell, m);
        hdr.agg.next = m;
    }
}

#endif
