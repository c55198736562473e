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

/* lookahead: Python's int.from_bytes(data[lo:hi], 'big') >> k, for hi - lo <= 8 bytes (a
 * slice past the end is shorter, as in Python; the interpreter checks the length before) */
static inline uint64_t p4r_peek(const uint8_t *d, uint64_t len, uint64_t lo, uint64_t hi,
                                uint32_t k) {
    if (hi > len) hi = len;
    uint64_t v = 0;
    for (uint64_t i = lo; i < hi; i++) v = (v << 8) | d[i];
    return k >= 64 ? 0 : v >> k;
}

/* parser value sets (ValueSet.match): a member matches when every key field, masked, equals
 * its value; members are written by the control plane under the engine's mutex, which every
 * packet holds while it runs */
static inline int p4r_vs_match(const p4r_engine *E, uint32_t i, const uint64_t *key,
                               uint32_t nf) {
    const uint64_t *m = E->vs[i];
    for (uint32_t j = 0; j < E->vs_n[i]; j++, m += 2 * nf) {
        uint32_t f = 0;
        while (f < nf && (key[f] & m[2 * f + 1]) == m[2 * f]) f++;
        if (f == nf) return 1;
    }
    return 0;
}

/* replace value set i's members: n members of nf (value, mask) pairs (n <= its size) */
int p4r_vs_set(p4r_engine *E, uint32_t i, uint32_t n, const uint64_t *data) {
    if (i >= P4R_NVS || n > P4R_VS_SIZE[i]) return -1;
    pthread_mutex_lock(&E->mu);
    if (n) memcpy(E->vs[i], data, (size_t)n * 2 * P4R_VS_FIELDS[i] * sizeof(uint64_t));
    E->vs_n[i] = n;
    pthread_mutex_unlock(&E->mu);
    return 0;
}
