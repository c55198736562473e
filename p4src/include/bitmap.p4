/* Worker bitmaps: which workers contributed to each (slot, set). Both sets of a slot live in
 * one 64-bit pair cell (set 0 low word, set 1 high word) so that one read-modify-write can
 * set the sender's bit in its set and clear it in the other one: the implicit reset that
 * frees the other set for its next use (docs/protocol.md, "Shadow sets"). */
#ifndef P4REDUCE_BITMAP_P4
#define P4REDUCE_BITMAP_P4

#include "headers.p4"

control WorkerBitmap(in headers_t hdr, inout metadata_t meta) {
    register<bit<64>>(POOL_SLOTS) bitmaps;

    apply {
        bit<64> pair;
        bitmaps.read(pair, meta.slot_abs);
        bit<32> mine = hdr.agg.set == 0 ? pair[31:0] : pair[63:32];
        bit<32> other = hdr.agg.set == 0 ? pair[63:32] : pair[31:0];
        meta.first = mine == 0 ? 1w1 : 1w0;
        meta.dup = (mine & meta.worker_bit) != 0 ? 1w1 : 1w0;
        if (meta.op == OP_CLEAR) {
            /* empty word: every later step takes the "first" way, writing its zero */
            mine = 0;
            meta.first = 1;
        } else if (meta.op == OP_PEEK) {
            /* as a duplicate: every later step only reads */
            meta.first = 0;
            meta.dup = 1;
        }
        /* a control message has worker_bit 0: these change nothing for it */
        mine = mine | meta.worker_bit;
        other = other & ~meta.worker_bit;
        meta.bitmap_word = mine;
        pair = hdr.agg.set == 0 ? other ++ mine : mine ++ other;
        bitmaps.write(meta.slot_abs, pair);
    }
}

#endif
