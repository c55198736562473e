/* Stateful externs beyond registers and indexed counters: BMv2's two-rate three-colour
 * meters (indexed and direct) and the per-entry cells of direct counters and meters.
 *
 * Included after p4r_runtime.c. Every rule of the meter follows switch/interp/meters.py
 * (itself BMv2's src/bm_sim/meters.cpp): buckets checked peak first, tokens credited lazily
 * from a cumulative int(micros_since_origin * rate), capped at the burst; a meter without
 * rates is GREEN. The control plane keeps a meter's rates in Python (they are validated
 * there) and pushes each cell's whole state here after every change (p4r_meter_put).
 *
 * A direct counter or meter belongs to a table entry. The entries are reloaded as a whole
 * after every table change (p4r_table_load), so their cells live apart from them: the
 * Python side gives each entry a cell number that stays with it for its life
 * (switch/native/mirror_externs.py), and the entry carries it (p4r_entry.cell). */

#define P4R_GREEN 0u

typedef struct p4r_bucket {
    double rate;             /* units per microsecond */
    __int128 burst, tokens;  /* burst < 2^64 (meters.py refuses more) */
    __int128 last;           /* cumulative tokens credited since the origin */
    uint64_t color;          /* the colour given when this bucket lacks tokens */
} p4r_bucket;

typedef struct p4r_meter {
    uint32_t n; /* buckets, peak first; 0: no rates, always GREEN */
    int64_t origin;
    p4r_bucket b[2];
} p4r_meter;

static uint64_t p4r_meter_exec(p4r_meter *m, uint64_t units, uint64_t now) {
    int64_t micros = (int64_t)now - m->origin;
    for (uint32_t i = 0; i < m->n; i++) {
        p4r_bucket *b = &m->b[i];
        /* Python: int(micros * rate), a double product truncated toward zero; meters.py
         * bounds the rate (2^60) so that the product fits 127 bits */
        __int128 total = (__int128)((double)micros * b->rate);
        if (total > b->last) {
            __int128 add = total - b->last;
            b->last = total;
            b->tokens = add >= b->burst - b->tokens ? b->burst : b->tokens + add;
        }
        if (b->tokens < (__int128)units) return b->color;
        b->tokens -= (__int128)units;
    }
    return P4R_GREEN;
}

/* The cells of the direct counter and meter of table t, by cell number; grown on demand
 * (under the mutex) by p4r_direct_cells. */
static p4r_meter *p4r_meter_cell(p4r_engine *E, uint32_t kind, uint32_t obj, uint32_t cell) {
    if (kind == 0) return obj < P4R_NMETERS && cell < P4R_MTR_SIZE[obj] ? &E->mtr[obj][cell] : NULL;
    return obj < P4R_NTABLES && cell < E->dcap[obj] ? &E->dmtr[obj][cell] : NULL;
}

/* ------------------------------------------------------------------ control plane */

/* Make room for cells [0, n) of table t's direct counter and meter (new cells zeroed, meters
 * without rates). Returns 0, or -1 when out of memory (nothing changed). */
int p4r_direct_cells(p4r_engine *E, uint32_t t, uint32_t n) {
    if (t >= P4R_NTABLES) return -1;
    pthread_mutex_lock(&E->mu);
    uint32_t cap = E->dcap[t];
    int rc = 0;
    if (n > cap) {
        uint32_t ncap = cap ? cap : 16;
        while (ncap < n) ncap *= 2;
        uint64_t *pk = realloc(E->dctr_pk[t], ncap * sizeof *pk);
        if (pk) E->dctr_pk[t] = pk;
        uint64_t *by = pk ? realloc(E->dctr_by[t], ncap * sizeof *by) : NULL;
        if (by) E->dctr_by[t] = by;
        p4r_meter *m = by ? realloc(E->dmtr[t], ncap * sizeof *m) : NULL;
        if (m) {
            E->dmtr[t] = m;
            memset(pk + cap, 0, (ncap - cap) * sizeof *pk);
            memset(by + cap, 0, (ncap - cap) * sizeof *by);
            memset(m + cap, 0, (ncap - cap) * sizeof *m);
            E->dcap[t] = ncap;
        } else {
            rc = -1; /* the arrays grown so far keep their first cap cells */
        }
    }
    pthread_mutex_unlock(&E->mu);
    return rc;
}

void p4r_dctr_get(p4r_engine *E, uint32_t t, uint32_t cell, uint64_t *pk, uint64_t *by) {
    pthread_mutex_lock(&E->mu);
    int ok = t < P4R_NTABLES && cell < E->dcap[t];
    *pk = ok ? E->dctr_pk[t][cell] : 0;
    *by = ok ? E->dctr_by[t][cell] : 0;
    pthread_mutex_unlock(&E->mu);
}

void p4r_dctr_set(p4r_engine *E, uint32_t t, uint32_t cell, uint64_t pk, uint64_t by) {
    pthread_mutex_lock(&E->mu);
    if (t < P4R_NTABLES && cell < E->dcap[t]) {
        E->dctr_pk[t][cell] = pk;
        E->dctr_by[t][cell] = by;
    }
    pthread_mutex_unlock(&E->mu);
}

/* Replace one meter cell's state: kind 0 an indexed meter (obj its index), 1 the direct meter
 * of table obj. n buckets, peak first: rates[i], and words[5 i ..] = burst, tokens, last (low
 * and high 64 bits, two's complement), colour. Returns 0, or -1 for a cell that does not
 * exist. */
int p4r_meter_put(p4r_engine *E, uint32_t kind, uint32_t obj, uint32_t cell, uint32_t n,
                  int64_t origin, const double *rates, const uint64_t *words) {
    if (n > 2) return -1;
    pthread_mutex_lock(&E->mu);
    p4r_meter *m = p4r_meter_cell(E, kind, obj, cell);
    if (m) {
        m->n = n;
        m->origin = origin;
        for (uint32_t i = 0; i < n; i++) {
            const uint64_t *w = words + 5 * i;
            m->b[i].rate = rates[i];
            m->b[i].burst = (__int128)w[0];
            m->b[i].tokens = (__int128)w[1];
            m->b[i].last = (__int128)(((unsigned __int128)w[3] << 64) | w[2]);
            m->b[i].color = w[4];
        }
    }
    pthread_mutex_unlock(&E->mu);
    return m ? 0 : -1;
}

/* A meter cell's bucket state, as p4r_meter_put takes it (rates aside); returns n, or -1. */
int p4r_meter_state(p4r_engine *E, uint32_t kind, uint32_t obj, uint32_t cell,
                    uint64_t *words) {
    pthread_mutex_lock(&E->mu);
    p4r_meter *m = p4r_meter_cell(E, kind, obj, cell);
    int n = m ? (int)m->n : -1;
    for (int i = 0; i < n; i++) {
        uint64_t *w = words + 5 * i;
        unsigned __int128 last = (unsigned __int128)m->b[i].last;
        w[0] = (uint64_t)m->b[i].burst;
        w[1] = (uint64_t)m->b[i].tokens;
        w[2] = (uint64_t)last;
        w[3] = (uint64_t)(last >> 64);
        w[4] = m->b[i].color;
    }
    pthread_mutex_unlock(&E->mu);
    return n;
}

/* Meter.execute called from Python (the data plane calls p4r_meter_exec directly). */
int64_t p4r_meter_execute(p4r_engine *E, uint32_t kind, uint32_t obj, uint32_t cell,
                          uint64_t units, uint64_t now) {
    pthread_mutex_lock(&E->mu);
    p4r_meter *m = p4r_meter_cell(E, kind, obj, cell);
    int64_t c = m ? (int64_t)p4r_meter_exec(m, units, now) : -1;
    pthread_mutex_unlock(&E->mu);
    return c;
}

/* meter.execute_meter(index, color): GREEN for an index out of range (externs.Meter). */
static inline uint64_t p4r_meter_run(p4r_engine *E, uint32_t m, uint64_t i, uint64_t len,
                                     uint64_t now) {
    if (i >= P4R_MTR_SIZE[m]) return P4R_GREEN;
    return p4r_meter_exec(&E->mtr[m][i], P4R_MTR_BYTES[m] ? len : 1, now);
}

/* A checksum _with_payload: hash(field list bytes ++ the packet from the parser's end). */
static int p4r_hash_payload(uint64_t (*fn)(const uint8_t *, uint32_t), const uint8_t *b,
                            uint32_t n, const uint8_t *tail, uint32_t tlen, uint64_t *ret) {
    uint8_t small[2048];
    uint64_t total = (uint64_t)n + tlen;
    uint8_t *buf = total <= sizeof small ? small : malloc(total);
    if (!buf) return P4R_FAULT;
    memcpy(buf, b, n);
    if (tlen) memcpy(buf + n, tail, tlen);
    *ret = fn(buf, (uint32_t)total);
    if (buf != small) free(buf);
    return P4R_OK;
}

/* ------------------------------------------------------------------ events for Python
 * digest, log_msg and runtime faults (assert/assume) happen in C and are delivered by Python
 * (NativeSwitch drains them after each call, and when its digests or log_messages are read):
 * records of words [kind | site << 8, n, value 0 .. n-1]; a site is the call in the program
 * (mirror_externs.EventSite says what it is). Bounded: past P4R_EV_MAX words, records are
 * counted in ev_dropped and lost. */
#define P4R_EV_DIGEST 1
#define P4R_EV_LOG 2
#define P4R_EV_FAULT 3
#define P4R_EV_COMMIT 4 /* an ingress ended: the digests since the last commit are delivered */
#define P4R_EV_LOOP 5   /* a packet looped past P4R_MAX_PASSES: [port, limit] (p4r_path.c) */
#define P4R_EV_MAX (1u << 22)

/* Wake the Python side (NativeDataplane) when a record it can deliver arrives, so that
 * digests and log_msg text of the native I/O loop's packets reach the P4Runtime stream at
 * once instead of waiting for the next Python call. One eventfd write per take at most:
 * p4r_events_take clears ev_signalled (E->mu is held in both). */
static void p4r_event_signal(p4r_engine *E) {
    if (!E->ev_notify || E->ev_signalled) return;
    uint64_t one = 1;
    ssize_t r = write(E->ev_notify - 1, &one, sizeof one);
    (void)r; /* an eventfd only fails when its counter would overflow: it is readable then */
    E->ev_signalled = 1;
}

static void p4r_event(p4r_engine *E, uint32_t kind, uint32_t site, uint32_t n,
                      const uint64_t *v) {
    if (kind == P4R_EV_DIGEST && E->ev_egress) return; /* egress digests are dropped */
    if (kind == P4R_EV_COMMIT) {
        /* a commit delivers the digests since the previous one: without any it is a no-op
         * for Python, and is not stored (a digest program commits every packet) */
        if (!E->ev_open_digests) return;
        E->ev_open_digests = 0;
    } else if (kind == P4R_EV_DIGEST) {
        E->ev_open_digests++;
    } else if (kind == P4R_EV_FAULT) {
        E->ev_open_digests = 0; /* Python drops the packet's pending digests */
    }
    uint64_t need = (uint64_t)E->ev_n + 2 + n;
    if (need > E->ev_cap) {
        uint64_t cap = E->ev_cap ? E->ev_cap : 256;
        while (cap < need) cap *= 2;
        uint64_t *ev = cap <= P4R_EV_MAX ? realloc(E->ev, cap * sizeof *ev) : NULL;
        if (!ev) {
            E->ev_dropped++;
            return;
        }
        E->ev = ev;
        E->ev_cap = (uint32_t)cap;
    }
    E->ev[E->ev_n++] = kind | ((uint64_t)site << 8);
    E->ev[E->ev_n++] = n;
    for (uint32_t i = 0; i < n; i++) E->ev[E->ev_n++] = v[i];
    if (kind != P4R_EV_DIGEST) p4r_event_signal(E); /* a digest waits for its commit */
}

/* Tell (fd >= 0) or stop telling (fd < 0) an eventfd of deliverable events. */
void p4r_events_notify(p4r_engine *E, int fd) {
    pthread_mutex_lock(&E->mu);
    E->ev_notify = fd >= 0 ? fd + 1 : 0;
    E->ev_signalled = 0;
    if (E->ev_n) p4r_event_signal(E); /* records from before: deliver them too */
    pthread_mutex_unlock(&E->mu);
}

uint32_t p4r_events_size(p4r_engine *E) {
    pthread_mutex_lock(&E->mu);
    uint32_t n = E->ev_n;
    pthread_mutex_unlock(&E->mu);
    return n;
}

/* Move whole records, up to cap words, into dst; returns the words moved. */
uint32_t p4r_events_take(p4r_engine *E, uint64_t *dst, uint32_t cap) {
    pthread_mutex_lock(&E->mu);
    uint32_t used = 0;
    while (used + 2 <= E->ev_n) {
        uint32_t len = 2 + (uint32_t)E->ev[used + 1];
        if (used + len > cap) break;
        used += len;
    }
    memcpy(dst, E->ev, used * sizeof *dst);
    memmove(E->ev, E->ev + used, (E->ev_n - used) * sizeof *dst);
    E->ev_n -= used;
    E->ev_signalled = 0;
    if (E->ev_n) p4r_event_signal(E); /* records past cap (or new ones): another wake */
    pthread_mutex_unlock(&E->mu);
    return used;
}

uint64_t p4r_events_dropped(p4r_engine *E) { return E->ev_dropped; }

/* ------------------------------------------------------------------ custom CRCs
 * crc8/16/32/64_custom (hashes.crc): a Rocksoft-model CRC whose parameters the control plane
 * may change (HashCalc.set_crc_params), one parameter set per algorithm of the program, as
 * the interpreter's namespace holds one HashCalc per algorithm. Bitwise, the same remainder
 * as the interpreter's table-driven loops. */
static uint64_t p4r_reflect(uint64_t v, uint32_t n) {
    uint64_t r = 0;
    for (uint32_t i = 0; i < n; i++) r = (r << 1) | ((v >> i) & 1);
    return r;
}

static uint64_t p4r_crc_custom(const p4r_crcp *c, const uint8_t *p, uint32_t n) {
    uint32_t w = c->width;
    uint64_t mask = w >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << w) - 1;
    uint64_t poly = c->poly & mask, reg, out;
    if (c->refin) {
        uint64_t rpoly = p4r_reflect(poly, w);
        reg = p4r_reflect(c->init & mask, w);
        for (uint32_t i = 0; i < n; i++) {
            reg ^= p[i];
            for (int k = 0; k < 8; k++) reg = (reg & 1) ? (reg >> 1) ^ rpoly : reg >> 1;
        }
        out = c->refout ? reg : p4r_reflect(reg, w);
    } else {
        uint64_t top = UINT64_C(1) << (w - 1);
        reg = c->init & mask;
        for (uint32_t i = 0; i < n; i++) {
            reg ^= (uint64_t)p[i] << (w - 8);
            for (int k = 0; k < 8; k++) reg = (reg & top) ? ((reg << 1) ^ poly) & mask : (reg << 1) & mask;
        }
        out = c->refout ? p4r_reflect(reg, w) : reg;
    }
    return out ^ (c->xor_out & mask);
}

void p4r_crc_set(p4r_engine *E, uint32_t k, uint32_t width, uint64_t poly, uint64_t init,
                 uint64_t xor_out, uint32_t refin, uint32_t refout) {
    if (k >= P4R_NCRC) return;
    pthread_mutex_lock(&E->mu);
    p4r_crcp *c = &E->crc[k];
    c->width = width;
    c->poly = poly;
    c->init = init;
    c->xor_out = xor_out;
    c->refin = refin;
    c->refout = refout;
    pthread_mutex_unlock(&E->mu);
}
