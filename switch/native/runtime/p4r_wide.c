/* Values wider than 64 bits (docs/native.md, "Wide values and varbit"): a p4r_w holds
 * P4R_WW 64-bit words, least significant first, and every operation is exact modulo
 * 2^(64 * P4R_WW). The generator (cwide.py) picks P4R_WW so that every value whose high bits
 * matter (an operand of >>, /, %, a comparison, a stored field) fits: the interpreter keeps
 * each bit<W> value in [0, 2^W), so the low 64 * P4R_WW bits are the whole value there, and
 * +, -, *, <<, &, |, ^, ~ only need the low bits of their operands. Included only by
 * programs that have such values; a slot of W > 64 bits takes ceil(W / 64) words of S, a
 * varbit slot its width word and then ceil(max / 64) value words. */

typedef struct p4r_w {
    uint64_t w[P4R_WW];
} p4r_w;

/* a constant: P4R_WC(lowest word, next, ...); the words not given are zero */
#define P4R_WC(...) ((p4r_w){{__VA_ARGS__}})

static inline p4r_w p4r_w_u64(uint64_t x) {
    p4r_w r;
    memset(&r, 0, sizeof r);
    r.w[0] = x;
    return r;
}

/* a 64-bit two's complement (an int<W> value, W <= 64) sign-extended */
static inline p4r_w p4r_w_s64(uint64_t x) {
    p4r_w r;
    memset(&r, (int64_t)x < 0 ? 0xff : 0, sizeof r);
    r.w[0] = x;
    return r;
}

/* n words of storage (n <= P4R_WW), the words above them zero */
static inline p4r_w p4r_w_ld(const uint64_t *s, uint32_t n) {
    p4r_w r;
    memset(&r, 0, sizeof r);
    memcpy(r.w, s, (size_t)n * 8);
    return r;
}

static inline void p4r_w_st(uint64_t *s, uint32_t n, p4r_w v) { memcpy(s, v.w, (size_t)n * 8); }

static inline p4r_w p4r_w_add(p4r_w a, p4r_w b) {
    p4r_w r;
    uint64_t c = 0;
    for (int i = 0; i < P4R_WW; i++) {
        unsigned __int128 s = (unsigned __int128)a.w[i] + b.w[i] + c;
        r.w[i] = (uint64_t)s;
        c = (uint64_t)(s >> 64);
    }
    return r;
}

static inline p4r_w p4r_w_sub(p4r_w a, p4r_w b) {
    p4r_w r;
    uint64_t borrow = 0;
    for (int i = 0; i < P4R_WW; i++) {
        uint64_t d = a.w[i] - b.w[i] - borrow;
        borrow = (a.w[i] < b.w[i]) || (a.w[i] == b.w[i] && borrow);
        r.w[i] = d;
    }
    return r;
}

/* schoolbook, truncated to P4R_WW words */
static inline p4r_w p4r_w_mul(p4r_w a, p4r_w b) {
    p4r_w r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < P4R_WW; i++) {
        uint64_t c = 0;
        for (int j = 0; i + j < P4R_WW; j++) {
            unsigned __int128 t = (unsigned __int128)a.w[i] * b.w[j] + r.w[i + j] + c;
            r.w[i + j] = (uint64_t)t;
            c = (uint64_t)(t >> 64);
        }
    }
    return r;
}

static inline p4r_w p4r_w_and(p4r_w a, p4r_w b) {
    for (int i = 0; i < P4R_WW; i++) a.w[i] &= b.w[i];
    return a;
}
static inline p4r_w p4r_w_or(p4r_w a, p4r_w b) {
    for (int i = 0; i < P4R_WW; i++) a.w[i] |= b.w[i];
    return a;
}
static inline p4r_w p4r_w_xor(p4r_w a, p4r_w b) {
    for (int i = 0; i < P4R_WW; i++) a.w[i] ^= b.w[i];
    return a;
}
static inline p4r_w p4r_w_not(p4r_w a) {
    for (int i = 0; i < P4R_WW; i++) a.w[i] = ~a.w[i];
    return a;
}
static inline p4r_w p4r_w_neg(p4r_w a) { return p4r_w_sub(p4r_w_u64(0), a); }

static inline p4r_w p4r_w_shl(p4r_w a, uint64_t k) {
    p4r_w r;
    memset(&r, 0, sizeof r);
    if (k >= (uint64_t)64 * P4R_WW) return r;
    uint32_t q = (uint32_t)(k / 64), s = (uint32_t)(k % 64);
    for (int i = P4R_WW - 1; i >= (int)q; i--) {
        uint64_t v = a.w[i - q] << s;
        if (s && i - (int)q - 1 >= 0) v |= a.w[i - q - 1] >> (64 - s);
        r.w[i] = v;
    }
    return r;
}

static inline p4r_w p4r_w_shr(p4r_w a, uint64_t k) {
    p4r_w r;
    memset(&r, 0, sizeof r);
    if (k >= (uint64_t)64 * P4R_WW) return r;
    uint32_t q = (uint32_t)(k / 64), s = (uint32_t)(k % 64);
    for (int i = 0; i + (int)q < P4R_WW; i++) {
        uint64_t v = a.w[i + q] >> s;
        if (s && i + (int)q + 1 < P4R_WW) v |= a.w[i + q + 1] << (64 - s);
        r.w[i] = v;
    }
    return r;
}

/* -1, 0 or 1 as a < b, a == b, a > b (unsigned) */
static inline int p4r_w_cmp(p4r_w a, p4r_w b) {
    for (int i = P4R_WW - 1; i >= 0; i--)
        if (a.w[i] != b.w[i]) return a.w[i] < b.w[i] ? -1 : 1;
    return 0;
}

static inline int p4r_w_nz(p4r_w a) {
    for (int i = 0; i < P4R_WW; i++)
        if (a.w[i]) return 1;
    return 0;
}

/* the value as a shift amount: itself below 2^64, else UINT64_MAX (shifts by it give 0) */
static inline uint64_t p4r_w_sat64(p4r_w a) {
    for (int i = 1; i < P4R_WW; i++)
        if (a.w[i]) return UINT64_MAX;
    return a.w[0];
}

/* bits [off, off + w) of the big-endian number p[0..n), counted from its least significant
 * bit, for any w (0 too); off + w <= 8 * n (the interpreter checked the packet's length) */
static inline p4r_w p4r_get_wide(const uint8_t *p, uint32_t n, uint64_t off, uint64_t w) {
    p4r_w r;
    memset(&r, 0, sizeof r);
    for (uint32_t i = 0; i < P4R_WW && (uint64_t)64 * i < w; i++) {
        uint64_t k = w - (uint64_t)64 * i;
        r.w[i] = p4r_get_bits(p, n, (uint32_t)(off + (uint64_t)64 * i), k > 64 ? 64 : (uint32_t)k);
    }
    return r;
}

/* OR the low w bits of v into p[0..n) at bit offset off from the number's least significant
 * bit */
static inline void p4r_put_wide(uint8_t *p, uint32_t n, uint32_t off, uint32_t w, p4r_w v) {
    for (uint32_t i = 0; i < P4R_WW && 64 * i < w; i++) {
        uint32_t k = w - 64 * i;
        p4r_put_bits(p, n, off + 64 * i, k > 64 ? 64 : k, v.w[i]);
    }
}

/* append the low w bits of v (w a run-time width for varbit values), MSB first */
static inline void p4r_bb_push_w(p4r_bitbuf *bb, p4r_w v, uint64_t w) {
    if (w > (uint64_t)64 * P4R_WW) w = (uint64_t)64 * P4R_WW; /* never: w <= the field's max */
    for (int i = (int)((w + 63) / 64) - 1; i >= 0; i--) {
        uint64_t k = w - (uint64_t)64 * i;
        p4r_bb_push(bb, v.w[i], k > 64 ? 64 : (uint32_t)k);
    }
}

/* The control plane's access to one cell of a register over 64 bits: its n words at once,
 * under the engine's mutex, so that a packet never sees half a cell (engine.py reg_get and
 * reg_set; the whole register goes through p4r_reg_bulk). */
void p4r_reg_words(p4r_engine *E, uint32_t r, uint64_t first, uint32_t n, uint64_t *dst,
                   const uint64_t *src) {
    pthread_mutex_lock(&E->mu);
    if (src) memcpy(E->reg[r] + first, src, (size_t)n * 8);
    if (dst) memcpy(dst, E->reg[r] + first, (size_t)n * 8);
    pthread_mutex_unlock(&E->mu);
}
