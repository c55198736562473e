/* Signed int<W> values and saturating arithmetic (see csigns.py): a value that may be
 * negative is held as its 64-bit two's complement, so it is compared, shifted right and
 * saturated as int64_t; wider intermediate results (a + b of two int<64>) use __int128. */

/* v's low w bits (1 <= w <= 64) as a signed number, in two's complement */
static inline uint64_t p4r_sext(uint64_t v, uint32_t w) {
    if (w >= 64) return v;
    uint64_t m = (UINT64_C(1) << w) - 1, h = UINT64_C(1) << (w - 1);
    return ((v & m) ^ h) - h;
}

/* Python's a >> b on a signed a: arithmetic, -1 or 0 once b reaches 64 */
static inline uint64_t p4r_sar(uint64_t a, uint64_t b) {
    if (b >= 64) return (int64_t)a < 0 ? ~UINT64_C(0) : 0;
    return (uint64_t)((int64_t)a >> b);
}

/* min(max(v, lo), hi) on the exact value v */
static inline uint64_t p4r_clamp(__int128 v, int64_t lo, int64_t hi) {
    if (v < lo) return (uint64_t)lo;
    if (v > hi) return (uint64_t)hi;
    return (uint64_t)(int64_t)v;
}

/* min(a + b, m) and max(a - b, 0) on unsigned a, b (|+| and |-| on bit<W>) */
static inline uint64_t p4r_addsat_u(uint64_t a, uint64_t b, uint64_t m) {
    unsigned __int128 s = (unsigned __int128)a + b;
    return s > m ? m : (uint64_t)s;
}
static inline uint64_t p4r_subsat_u(uint64_t a, uint64_t b) { return a > b ? a - b : 0; }
