/* Completion count per (slot, set): the first contribution starts it at 1, every other new
 * contribution adds 1, a duplicate only reads it. The slot is complete when the count equals
 * the job's worker count. Bit 7 remembers whether any contribution carried a payload, so a
 * block that is zero on every worker comes back header-only.
 *
 * ToR role: bit 6 (COUNT_GLOBAL) says the parent's result is stored in the cell. A parent's
 * result (OP_DOWN) is taken only once per use of the cell, when the local count is complete
 * and no result is stored yet: it sets the bit and its own payload bit, and the later steps
 * take their "first" path (overwrite the partial sum with the result). Any other copy (a
 * second answer, or one for a cell whose count is not complete) takes the "duplicate" path:
 * read only, dropped. A first contribution clears the bit with the rest of the byte. */
#ifndef P4REDUCE_COMPLETION_P4
#define P4REDUCE_COMPLETION_P4

#include "headers.p4"

control Completion(in headers_t hdr, inout metadata_t meta) {
    register<bit<8>>(POOL_CELLS) counts;

    apply {
        bit<8> c;
        counts.read(c, meta.cell);
        bit<8> data_bit = (hdr.agg.flags & FLAG_NO_PAYLOAD) == 0 ? COUNT_HAS_DATA : 8w0;
        if (meta.op == OP_CLEAR) {
            c = 0;
        } else if (meta.op == OP_DOWN) {
            if ((c & COUNT_MASK) == meta.n_workers && (c & COUNT_GLOBAL) == 0) {
                c = (c & COUNT_MASK) | COUNT_GLOBAL | data_bit;
                meta.first = 1;
                meta.dup = 0;
            } else {
                meta.first = 0;
                meta.dup = 1;
            }
        } else if (meta.first == 1) {
            c = data_bit | 8w1;
        } else if (meta.dup == 0) {
            c = (c | data_bit) + 8w1;
        }
        counts.write(meta.cell, c);
        meta.count = c;
        meta.complete = (c & COUNT_MASK) == meta.n_workers ? 1w1 : 1w0;
        meta.has_data = (c & COUNT_HAS_DATA) != 0 ? 1w1 : 1w0;
        meta.stored = (c & COUNT_GLOBAL) != 0 ? 1w1 : 1w0;
    }
}

#endif
