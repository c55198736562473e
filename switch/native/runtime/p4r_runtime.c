/* The fixed part of every generated engine: bit access, tables, the replication engine's
 * multicast groups, BMv2's hash algorithms, Python's random generator, and the packet path
 * of simple_switch (docs/interpreter.md, "Semantics") around the generated stages.
 *
 * The generator writes, before including this file: P4R_NSLOTS, P4R_NTABLES, P4R_NREGS,
 * P4R_NCTRS, P4R_NPROF (action profiles), P4R_MAX_KEYS, P4R_MAX_ARGS, P4R_OUT_MAX, the
 * standard_metadata slot numbers (P4R_STD_*) and P4R_INIT (the slots' values on arrival);
 * after it, the stage functions, the table key and action-dispatch functions and the
 * register/counter sizes. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>
#include <unistd.h>
#include "p4r_handler.h"

#define P4R_OK 0
#define P4R_EXIT 1        /* exit: ends the current top-level control */
#define P4R_PARSER_ERR 2  /* a parser error; the code is in P->perr */
#define P4R_FAULT 3       /* a runtime fault (never generated yet: refused at load) */

#define P4R_DROP_PORT 511u
#define P4R_MAX_GROUP 65536u

typedef struct p4r_entry {
    uint32_t action;
    uint32_t ref; /* an action profile's entry: 1 a member, 2 a group, its id in args[0] */
    uint32_t hit;
    uint32_t cell; /* its direct counter and meter cell (p4r_externs.c) */
    uint64_t args[P4R_MAX_ARGS + 1];
    uint8_t kind[P4R_MAX_KEYS + 1]; /* 0: (k & a) == b, 1: a <= k <= b, 2: any */
    uint64_t a[P4R_MAX_KEYS + 1], b[P4R_MAX_KEYS + 1];
} p4r_entry;

/* Entries sharing one mask per key (an LPM table's prefix length), hashed on the masked key. */
typedef struct p4r_mgroup {
    uint32_t start, n, hcap;
    int32_t *hash;
    uint64_t mask[P4R_MAX_KEYS + 1];
} p4r_mgroup;

typedef struct p4r_table {
    uint32_t nkeys, exact; /* exact: every key exact, looked up through the hash index */
    uint32_t lpm;          /* lpm: entries in groups of one prefix length, longest first */
    uint32_t ngroups;
    p4r_mgroup *groups;
    uint32_t n;
    p4r_entry *e;          /* in lookup order (the Python table's order) */
    int32_t *hash;         /* open addressing, -1 empty; hcap a power of two */
    uint32_t hcap;
    p4r_entry def;
} p4r_table;

typedef struct p4r_group {
    uint32_t n;
    uint32_t *port, *rid;
} p4r_group;

typedef struct p4r_profile { /* an action profile or selector (p4r_profiles.c) */
    uint32_t nm, ng;
    uint64_t *mid;           /* member ids, ascending */
    p4r_entry *mem;          /* the members' actions and data, in mid's order */
    uint64_t *gid;           /* group ids, ascending */
    uint32_t *gstart, *gn;   /* group g's members: mem[gm[gstart[g] .. gstart[g] + gn[g])] */
    uint32_t *gm;
} p4r_profile;

typedef struct p4r_crcp { /* a custom CRC's parameters (p4r_externs.c) */
    uint64_t poly, init, xor_out;
    uint32_t width, refin, refout;
} p4r_crcp;

typedef struct p4r_engine {
    pthread_mutex_t mu;
    p4r_table tables[P4R_NTABLES + 1];
    uint64_t *reg[P4R_NREGS + 1];
    uint64_t *ctr_pk[P4R_NCTRS + 1], *ctr_by[P4R_NCTRS + 1];
    struct p4r_meter *mtr[P4R_NMETERS + 1];   /* indexed meters */
    uint32_t dcap[P4R_NTABLES + 1];           /* direct counter and meter cells per table */
    uint64_t *dctr_pk[P4R_NTABLES + 1], *dctr_by[P4R_NTABLES + 1];
    struct p4r_meter *dmtr[P4R_NTABLES + 1];
    uint64_t *ev; /* events for Python: digests, log_msg, faults (p4r_externs.c) */
    uint32_t ev_n, ev_cap;
    uint32_t ev_egress; /* 1 while an egress runs: its digests are dropped, as in V1Switch */
    p4r_crcp crc[P4R_NCRC + 1];
    uint64_t ev_dropped;
    uint64_t *vs[P4R_NVS + 1]; /* parser value sets: (value, mask) per field per member */
    uint32_t vs_n[P4R_NVS + 1];
    p4r_group *groups[P4R_MAX_GROUP];
    p4r_profile prof[P4R_NPROF + 1];
    uint32_t mt[624];
    int mti;
    uint64_t faults;
    uint64_t epoch_us;
    int ev_notify;           /* 1 + the eventfd told of deliverable events; 0: none */
    uint32_t ev_signalled;   /* the eventfd was written since Python last took events */
    uint32_t ev_open_digests; /* digest records since the last commit (p4r_externs.c) */
    struct p4r_passes *q; /* the packet path's queues and clone sessions (p4r_queues.c) */
} p4r_engine;

/* A clone, resubmit or recirculate request of the packet's current control (the interpreter's
 * CloneRequest / PreserveRequest; the last call wins): p4r_path.c acts on it at the end of
 * ingress or egress. */
typedef struct p4r_req {
    uint32_t set;     /* 0: no request (Python's None) */
    uint32_t kind;    /* clone: 0 ingress-to-egress, 1 egress-to-egress */
    uint64_t session; /* clone: the mirroring session */
    uint32_t has_fl;  /* 1: the @field_list index fl is preserved */
    uint32_t xfl;     /* the explicit slots preserved (clone3, resubmit(data)): P4R_XFL id, 0 none */
    uint64_t fl;
} p4r_req;

typedef struct p4r_pkt {
    p4r_engine *E;
    const uint8_t *data;
    uint32_t len, pos;
    int64_t length; /* BMv2's packet-length register */
    int32_t perr;
    uint64_t now;
    uint64_t color; /* the colour of the direct meter of the entry just hit */
    uint64_t truncate; /* the smallest truncate() length asked for; UINT64_MAX: none */
    p4r_req clone, resubmit, recirc;
    uint32_t outlen;
    uint8_t out[P4R_OUT_MAX + 1];
} p4r_pkt;

/* ------------------------------------------------------------------ bits */
static inline uint64_t p4r_shl(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a << b; }
static inline uint64_t p4r_shr(uint64_t a, uint64_t b) { return b >= 64 ? 0 : a >> b; }

/* Bits [off, off + w) of the big-endian number held in p[0..n), counted from its least
 * significant bit (Python's (int.from_bytes(p, 'big') >> off) & (2^w - 1)).
 *
 * The generated code calls these with constant n, off and w (one call per header field), so
 * once inlined the byte range is a constant: the fast path is one unaligned load of at most
 * 8 bytes and a byte swap, instead of a loop over bytes (a field spans 9 bytes only when it
 * is 58..64 bits wide and not byte-aligned: the loop then). always_inline: the large
 * programs are built with -O1, which would otherwise keep the calls. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define P4R_LE 1
#else
#define P4R_LE 0
#endif
static inline __attribute__((always_inline)) uint64_t p4r_get_bits(const uint8_t *p, uint32_t n,
                                                                   uint32_t off, uint32_t w) {
    uint32_t hi = n * 8 - off;        /* bit index (from the MSB) one past the field's end */
    uint32_t first = (hi - w) / 8, last = (hi - 1) / 8;
    uint32_t nb = last - first + 1, sh = (last + 1) * 8 - hi;
    uint64_t acc;
    if (P4R_LE && w == 32 && (off & 7) == 0) {
        /* a whole aligned 32-bit field (then sh == 0): the common case of a re-rolled loop
         * (creroll.py), whose offsets are not constants the compiler could fold the general
         * path with. The test is on off, not sh: the compiler tracks the low bits of
         * (C - 32 * i) and drops the test and the general path from the loop, which it
         * cannot prove for sh. */
        uint32_t x;
        memcpy(&x, p + first, 4);
        return __builtin_bswap32(x);
    }
    if (P4R_LE && nb <= 8) {
        uint64_t x = 0;
        memcpy((uint8_t *)&x + (8 - nb), p + first, nb);
        acc = __builtin_bswap64(x) >> sh;
    } else {
        /* at most 9 bytes: accumulate into 128 bits */
        unsigned __int128 v = 0;
        for (uint32_t i = first; i <= last; i++) v = (v << 8) | p[i];
        acc = (uint64_t)(v >> sh);
    }
    return w >= 64 ? acc : acc & ((UINT64_C(1) << w) - 1);
}

/* OR value (w bits) into p[0..n) at bit offset off from the LSB of the big-endian number. */
static inline __attribute__((always_inline)) void p4r_put_bits(uint8_t *p, uint32_t n,
                                                               uint32_t off, uint32_t w,
                                                               uint64_t v) {
    if (w < 64) v &= (UINT64_C(1) << w) - 1;
    uint32_t hi = n * 8 - off;
    uint32_t first = (hi - w) / 8, last = (hi - 1) / 8;
    uint32_t nb = last - first + 1, sh = (last + 1) * 8 - hi;
    if (P4R_LE && w == 32 && (off & 7) == 0) { /* an aligned 32-bit field (p4r_get_bits) */
        uint32_t cur;
        memcpy(&cur, p + first, 4);
        cur |= __builtin_bswap32((uint32_t)v);
        memcpy(p + first, &cur, 4);
        return;
    }
    if (P4R_LE && nb <= 8) { /* w + sh <= 8 * nb <= 64: v << sh fits */
        uint64_t cur = 0;
        memcpy((uint8_t *)&cur + (8 - nb), p + first, nb);
        cur |= __builtin_bswap64(v << sh);
        memcpy(p + first, (uint8_t *)&cur + (8 - nb), nb);
        return;
    }
    unsigned __int128 x = (unsigned __int128)v << sh;
    for (uint32_t i = last + 1; i-- > first;) {
        p[i] |= (uint8_t)x;
        x >>= 8;
    }
}

/* A bit string built MSB first (field lists of hashes and checksums). */
typedef struct p4r_bitbuf {
    uint32_t nbits;
    uint8_t b[P4R_BITBUF_MAX + 16];
} p4r_bitbuf;

static inline void p4r_bb_reset(p4r_bitbuf *bb) {
    bb->nbits = 0;
    memset(bb->b, 0, sizeof bb->b);
}

static inline void p4r_bb_push(p4r_bitbuf *bb, uint64_t v, uint32_t w) {
    if (w == 0) return;
    /* the buffer as one big-endian number of sizeof bb->b bytes: the field's offset from its
     * least significant bit */
    uint32_t cap = (uint32_t)sizeof bb->b;
    p4r_put_bits(bb->b, cap, cap * 8 - bb->nbits - w, w, v);
    bb->nbits += w;
}

/* ------------------------------------------------------------------ hashes (hashes.py) */
static uint64_t p4r_csum16(const uint8_t *p, uint32_t n) {
    uint64_t s = 0;
    uint32_t i = 0;
    for (; i + 1 < n; i += 2) s += ((uint32_t)p[i] << 8) | p[i + 1];
    if (i < n) s += (uint32_t)p[i] << 8;
    while (s >> 16) s = (s & 0xFFFF) + (s >> 16);
    return (~s) & 0xFFFF;
}

static uint64_t p4r_crc16(const uint8_t *p, uint32_t n) { /* CRC-16/ARC */
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xA001u : c >> 1;
    }
    return c & 0xFFFF;
}

static uint64_t p4r_crc32(const uint8_t *p, uint32_t n) { /* CRC-32/ISO-HDLC (zlib) */
    uint32_t c = 0xFFFFFFFFu;
    for (uint32_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

static uint64_t p4r_xor16(const uint8_t *p, uint32_t n) {
    uint64_t x = 0;
    for (uint32_t i = 0; i < n; i += 2) x ^= ((uint32_t)p[i] << 8) | (i + 1 < n ? p[i + 1] : 0);
    return x;
}

static uint64_t p4r_identity(const uint8_t *p, uint32_t n) {
    uint64_t x = 0;
    for (uint32_t i = 0; i < n && i < 8; i++) x = (x << 8) | p[i];
    return x;
}

/* ------------------------------------------------------------------ Python's random.Random */
static uint32_t p4r_mt_next(p4r_engine *E) {
    static const uint32_t mag01[2] = {0x0u, 0x9908b0dfu};
    uint32_t y;
    if (E->mti >= 624) {
        int kk;
        for (kk = 0; kk < 624 - 397; kk++) {
            y = (E->mt[kk] & 0x80000000u) | (E->mt[kk + 1] & 0x7fffffffu);
            E->mt[kk] = E->mt[kk + 397] ^ (y >> 1) ^ mag01[y & 1u];
        }
        for (; kk < 623; kk++) {
            y = (E->mt[kk] & 0x80000000u) | (E->mt[kk + 1] & 0x7fffffffu);
            E->mt[kk] = E->mt[kk + (397 - 624)] ^ (y >> 1) ^ mag01[y & 1u];
        }
        y = (E->mt[623] & 0x80000000u) | (E->mt[0] & 0x7fffffffu);
        E->mt[623] = E->mt[396] ^ (y >> 1) ^ mag01[y & 1u];
        E->mti = 0;
    }
    y = E->mt[E->mti++];
    y ^= (y >> 11);
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= (y >> 18);
    return y;
}

/* random.getrandbits(k), 1 <= k <= 64: 32-bit words, least significant first */
static uint64_t p4r_getrandbits(p4r_engine *E, uint32_t k) {
    if (k <= 32) return p4r_mt_next(E) >> (32 - k);
    uint64_t lo = p4r_mt_next(E);
    uint64_t hi = p4r_mt_next(E) >> (64 - k);
    return lo | (hi << 32);
}

/* random.randint(lo, hi) for hi - lo + 1 < 2^64: lo + _randbelow(n) */
static uint64_t p4r_randint(p4r_engine *E, uint64_t lo, uint64_t hi) {
    uint64_t n = hi - lo + 1;
    uint32_t k = 64 - (uint32_t)__builtin_clzll(n);
    uint64_t r = p4r_getrandbits(E, k);
    while (r >= n) r = p4r_getrandbits(E, k);
    return lo + r;
}

/* ------------------------------------------------------------------ tables */
static inline uint64_t p4r_mix(uint64_t h, uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdull;
}

static uint64_t p4r_key_hash(const uint64_t *k, uint32_t n) {
    uint64_t h = 0x12345;
    for (uint32_t i = 0; i < n; i++) h = p4r_mix(h, k[i]);
    return h ^ (h >> 29);
}

static const p4r_entry *p4r_lookup(const p4r_table *t, const uint64_t *key) {
    if (t->nkeys == 0) return NULL;
    if (t->exact) {
        if (!t->hcap) return NULL;
        uint32_t m = t->hcap - 1, i = (uint32_t)p4r_key_hash(key, t->nkeys) & m;
        for (;;) {
            int32_t x = t->hash[i];
            if (x < 0) return NULL;
            const p4r_entry *e = &t->e[x];
            uint32_t j = 0;
            for (; j < t->nkeys; j++)
                if (e->b[j] != key[j]) break;
            if (j == t->nkeys) return e;
            i = (i + 1) & m;
        }
    }
    if (t->lpm) {
        uint64_t k[P4R_MAX_KEYS + 1];
        for (uint32_t g = 0; g < t->ngroups; g++) {
            const p4r_mgroup *G = &t->groups[g];
            for (uint32_t j = 0; j < t->nkeys; j++) k[j] = key[j] & G->mask[j];
            uint32_t m = G->hcap - 1, i = (uint32_t)p4r_key_hash(k, t->nkeys) & m;
            for (;;) {
                int32_t x = G->hash[i];
                if (x < 0) break;
                const p4r_entry *e = &t->e[x];
                uint32_t j = 0;
                for (; j < t->nkeys; j++)
                    if (e->b[j] != k[j]) break;
                if (j == t->nkeys) return e;
                i = (i + 1) & m;
            }
        }
        return NULL;
    }
    for (uint32_t x = 0; x < t->n; x++) {
        const p4r_entry *e = &t->e[x];
        uint32_t j = 0;
        for (; j < t->nkeys; j++) {
            uint64_t v = key[j];
            if (e->kind[j] == 0) {
                if ((v & e->a[j]) != e->b[j]) break;
            } else if (e->kind[j] == 1) {
                if (v < e->a[j] || v > e->b[j]) break;
            }
        }
        if (j == t->nkeys) return e;
    }
    return NULL;
}

/* ------------------------------------------------------------------ control plane (called
 * from Python through ctypes, under the engine mutex) */
void p4r_lock(p4r_engine *E) { pthread_mutex_lock(&E->mu); }
void p4r_unlock(p4r_engine *E) { pthread_mutex_unlock(&E->mu); }

/* Replace a table's entries: n entries of (action, hit, args[P4R_MAX_ARGS], then per key
 * kind, a, b), already in lookup order. Returns 0, or -1 when out of memory. */
int p4r_table_load(p4r_engine *E, uint32_t t, uint32_t n, const uint64_t *flat) {
    p4r_table *T = &E->tables[t];
    p4r_entry *e = n ? calloc(n, sizeof *e) : NULL;
    uint32_t hcap = 0;
    int32_t *hash = NULL;
    if (n && !e) return -1;
    const uint64_t *f = flat;
    for (uint32_t x = 0; x < n; x++) {
        e[x].action = (uint32_t)*f;
        e[x].ref = (uint32_t)(*f++ >> 32); /* an indirect entry: its kind above the action */
        uint64_t hit = *f++; /* 1 | cell << 1 */
        e[x].hit = (uint32_t)(hit & 1);
        e[x].cell = (uint32_t)(hit >> 1);
        for (uint32_t i = 0; i < P4R_MAX_ARGS; i++) e[x].args[i] = *f++;
        for (uint32_t j = 0; j < T->nkeys; j++) {
            e[x].kind[j] = (uint8_t)*f++;
            e[x].a[j] = *f++;
            e[x].b[j] = *f++;
        }
    }
    if (T->exact && n) {
        hcap = 16;
        while (hcap < 2 * n) hcap <<= 1;
        hash = malloc(hcap * sizeof *hash);
        if (!hash) {
            free(e);
            return -1;
        }
        memset(hash, 0xff, hcap * sizeof *hash);
        for (uint32_t x = 0; x < n; x++) {
            uint32_t i = (uint32_t)p4r_key_hash(e[x].b, T->nkeys) & (hcap - 1);
            while (hash[i] >= 0) i = (i + 1) & (hcap - 1);
            hash[i] = (int32_t)x;
        }
    }
    uint32_t ngroups = 0;
    p4r_mgroup *groups = NULL;
    if (T->lpm && n) {
        groups = calloc(n, sizeof *groups); /* at most one group per entry */
        if (!groups) {
            free(e);
            free(hash);
            return -1;
        }
        for (uint32_t x = 0; x < n; x++) {
            int same = ngroups > 0;
            for (uint32_t j = 0; same && j < T->nkeys; j++)
                same = groups[ngroups - 1].mask[j] == e[x].a[j];
            if (!same) {
                p4r_mgroup *G = &groups[ngroups++];
                G->start = x;
                for (uint32_t j = 0; j < T->nkeys; j++) G->mask[j] = e[x].a[j];
            }
            groups[ngroups - 1].n++;
        }
        int failed = 0;
        for (uint32_t g = 0; g < ngroups; g++) {
            p4r_mgroup *G = &groups[g];
            G->hcap = 8;
            while (G->hcap < 2 * G->n) G->hcap <<= 1;
            G->hash = malloc(G->hcap * sizeof *G->hash);
            if (!G->hash) {
                failed = 1;
                break;
            }
            memset(G->hash, 0xff, G->hcap * sizeof *G->hash);
            for (uint32_t x = G->start; x < G->start + G->n; x++) {
                uint32_t i = (uint32_t)p4r_key_hash(e[x].b, T->nkeys) & (G->hcap - 1);
                while (G->hash[i] >= 0) i = (i + 1) & (G->hcap - 1);
                G->hash[i] = (int32_t)x;
            }
        }
        if (failed) {
            for (uint32_t g = 0; g < ngroups; g++) free(groups[g].hash);
            free(groups);
            free(e);
            free(hash);
            return -1;
        }
    }
    pthread_mutex_lock(&E->mu);
    p4r_entry *olde = T->e;
    int32_t *oldh = T->hash;
    p4r_mgroup *oldg = T->groups;
    uint32_t oldng = T->ngroups;
    T->e = e;
    T->n = n;
    T->hash = hash;
    T->hcap = hcap;
    T->groups = groups;
    T->ngroups = ngroups;
    pthread_mutex_unlock(&E->mu);
    free(olde);
    free(oldh);
    for (uint32_t g = 0; g < oldng; g++) free(oldg[g].hash);
    free(oldg);
    return 0;
}

void p4r_table_default(p4r_engine *E, uint32_t t, uint32_t action, const uint64_t *args) {
    pthread_mutex_lock(&E->mu);
    p4r_entry *d = &E->tables[t].def;
    d->action = action;
    d->hit = 0;
    for (uint32_t i = 0; i < P4R_MAX_ARGS; i++) d->args[i] = args[i];
    pthread_mutex_unlock(&E->mu);
}

/* Replace multicast group g's replicas ((port, rid) pairs); n == 0 removes the group. */
int p4r_group_set(p4r_engine *E, uint32_t g, uint32_t n, const uint32_t *ports,
                  const uint32_t *rids) {
    if (g >= P4R_MAX_GROUP) return -1;
    p4r_group *G = NULL;
    if (n) {
        G = calloc(1, sizeof *G);
        if (!G) return -1;
        G->port = malloc(n * sizeof *G->port);
        G->rid = malloc(n * sizeof *G->rid);
        if (!G->port || !G->rid) {
            free(G->port);
            free(G->rid);
            free(G);
            return -1;
        }
        memcpy(G->port, ports, n * sizeof *ports);
        memcpy(G->rid, rids, n * sizeof *rids);
        G->n = n;
    }
    pthread_mutex_lock(&E->mu);
    p4r_group *old = E->groups[g];
    E->groups[g] = G;
    pthread_mutex_unlock(&E->mu);
    if (old) {
        free(old->port);
        free(old->rid);
        free(old);
    }
    return 0;
}

void p4r_rng_seed(p4r_engine *E, const uint32_t *state, int index) {
    pthread_mutex_lock(&E->mu);
    memcpy(E->mt, state, sizeof E->mt);
    E->mti = index;
    pthread_mutex_unlock(&E->mu);
}

void p4r_rng_state(p4r_engine *E, uint32_t *state, int *index) {
    pthread_mutex_lock(&E->mu);
    memcpy(state, E->mt, sizeof E->mt);
    *index = E->mti;
    pthread_mutex_unlock(&E->mu);
}
