/* The K accumulators, one register per element (Tofino touches each register once per
 * pass). Per element: v = (v & keep) + (x & add), written back and returned in the packet.
 *   first contribution:  keep = 0,  add = ~0  -> overwrite
 *   new contribution:    keep = ~0, add = ~0  -> wrapping 32-bit add
 *   duplicate:           keep = ~0, add = 0   -> read only, never added twice
 * A header-only contribution (zero block) adds nothing (add = 0; first: keep = 0 too, so the
 * slot starts from zero). */
#ifndef P4REDUCE_ACCUMULATE_P4
#define P4REDUCE_ACCUMULATE_P4

#include "headers.p4"

#define ELEMENT_REGISTER(i) register<bit<32>>(POOL_CELLS) acc##i;
#define ZERO_ELEMENT(i) hdr.data.e##i = 0;
#define ELEMENT_UPDATE(i) \
    acc##i.read(v, meta.cell); \
    v = (v & keep) + (hdr.data.e##i & add); \
    acc##i.write(meta.cell, v); \
    hdr.data.e##i = v;

control Accumulate(inout headers_t hdr, in metadata_t meta) {
    FOR_EACH_ELEMENT(ELEMENT_REGISTER)

    apply {
        bit<32> keep = meta.first == 1 ? 32w0 : 32w0xFFFFFFFF;
        /* a control message never adds its elements: a clear zeroes, a peek reads */
        bit<32> add = meta.dup == 1 || meta.from_controller == 1 || !hdr.data.isValid()
                      ? 32w0 : 32w0xFFFFFFFF;
        if (!hdr.data.isValid()) {
            /* header-only: give the elements a defined value before they are masked away */
            hdr.data.setValid();
            FOR_EACH_ELEMENT(ZERO_ELEMENT)
        }
        bit<32> v;
        FOR_EACH_ELEMENT(ELEMENT_UPDATE)
    }
}

#endif
