/* Block exponent per (slot, set): the maximum of the biased exponents the contributions
 * carried. The first contribution writes it, later ones take the maximum, a duplicate reads
 * it; the value after the update goes back in the packet, so the completing contribution
 * carries the maximum over every worker. */
#ifndef P4REDUCE_EXPONENT_P4
#define P4REDUCE_EXPONENT_P4

#include "headers.p4"

control ExponentMax(inout headers_t hdr, in metadata_t meta) {
    register<bit<8>>(POOL_CELLS) exponents;

    apply {
        bit<8> e;
        exponents.read(e, meta.cell);
        if (meta.first == 1) {
            e = hdr.agg.exponent;
        } else if (meta.dup == 0 && hdr.agg.exponent > e) {
            e = hdr.agg.exponent;
        }
        exponents.write(meta.cell, e);
        hdr.agg.exponent = e;
    }
}

#endif
