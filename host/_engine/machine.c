/* The state machine of one call (engine.h): host/protocol/call.py, dense.py and
   sparse.py, event for event and action for action. */

#include "engine.h"

/* ------------------------------------------------------------------ heap */

static int entry_less(const TimerEntry *a, const TimerEntry *b)
{
    if (a->deadline != b->deadline)
        return a->deadline < b->deadline;
    if (a->slot != b->slot)
        return a->slot < b->slot;
    return a->version < b->version;
}

static int heap_push(Core *c, double deadline, Py_ssize_t slot, uint64_t version)
{
    if (c->heap_len == c->heap_cap) {
        Py_ssize_t cap = c->heap_cap ? 2 * c->heap_cap : 64;
        TimerEntry *h = PyMem_RawRealloc(c->heap, (size_t)cap * sizeof *h);
        if (!h)
            return -1;
        c->heap = h;
        c->heap_cap = cap;
    }
    TimerEntry e = {deadline, slot, version};
    Py_ssize_t i = c->heap_len++;
    while (i > 0) {
        Py_ssize_t p = (i - 1) / 2;
        if (!entry_less(&e, &c->heap[p]))
            break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = e;
    return 0;
}

static TimerEntry heap_pop(Core *c)
{
    TimerEntry top = c->heap[0];
    TimerEntry last = c->heap[--c->heap_len];
    Py_ssize_t i = 0, len = c->heap_len;
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, m = i;
        const TimerEntry *best = &last;
        if (l < len && entry_less(&c->heap[l], best)) {
            m = l;
            best = &c->heap[l];
        }
        if (r < len && entry_less(&c->heap[r], best))
            m = r;
        if (m == i)
            break;
        c->heap[i] = c->heap[m];
        i = m;
    }
    if (len > 0)
        c->heap[i] = last;
    return top;
}

/* ------------------------------------------------------------------ helpers */

static void quantize_row(const Core *c, const float *x, int e, int own, uint8_t *out)
{
    quantize_impl(x, c->k, c->n, e, own, c->q_mode, c->regular_from, c->q_table, out);
}

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static uint32_t get32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

HIDDEN int append_steal(PyObject *acts, PyObject *item)
{
    if (!item)
        return -1;
    int rc = PyList_Append(acts, item);
    Py_DECREF(item);
    return rc;
}
/* The driver's send queue: packets copied out of the slot buffers, in order. */
static int queue_send(Core *c, Py_ssize_t s)
{
    if (c->q_len == c->q_cap) {
        Py_ssize_t cap = c->q_cap ? 2 * c->q_cap : 256;
        uint8_t *b = PyMem_RawRealloc(c->q_buf, (size_t)(cap * c->pkt_cap));
        if (!b)
            return -1;
        Py_ssize_t *l = PyMem_RawRealloc(c->q_lens, (size_t)cap * sizeof *l);
        if (!l) {
            c->q_buf = b;
            return -1;
        }
        c->q_buf = b;
        c->q_lens = l;
        c->q_cap = cap;
    }
    memcpy(c->q_buf + c->q_len * c->pkt_cap, c->pkt + s * c->pkt_cap, (size_t)c->pkt_len[s]);
    c->q_lens[c->q_len++] = c->pkt_len[s];
    return 0;
}

static int emit(Core *c, Py_ssize_t s, int retransmit, Sink *k)
{
    Py_ssize_t len = c->pkt_len[s];
    c->stats[S_PACKETS_SENT] += 1;
    c->stats[S_BYTES_SENT] += len;
    if (retransmit)
        c->stats[S_RETRANSMISSIONS] += 1;
    if (!k->list) {
        if (queue_send(c, s) < 0) {
            k->oom = 1;
            return -1;
        }
        return 0;
    }
    PyObject *data = PyBytes_FromStringAndSize((const char *)c->pkt + s * c->pkt_cap, len);
    if (!data)
        return -1;
    return append_steal(k->list, Py_BuildValue("(sNnO)", "send", data, s,
                                               retransmit ? Py_True : Py_False));
}

static int add_timer(Core *c, Sink *k)
{
    if (!k->list)
        return 0;  /* the driver reads c->has_last / c->last_deadline */
    PyObject *v = c->has_last ? PyFloat_FromDouble(c->last_deadline) : (Py_INCREF(Py_None), Py_None);
    if (!v)
        return -1;
    return append_steal(k->list, Py_BuildValue("(sN)", "timer", v));
}

static int arm(Core *c, Py_ssize_t s, double now, Sink *k)
{
    double a = now + c->timeout[s], b = c->first[s] + c->give_up;
    double deadline = b < a ? b : a; /* Python's min(a, b): a unless b is smaller */
    c->version[s] += 1;
    if (heap_push(c, deadline, s, c->version[s]) < 0) {
        k->oom = 1;
        if (k->list)
            PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* Call._send_use. The payload, if any, is already at the slot's buffer + HEADER_BYTES. */
static int send_use(Core *c, Py_ssize_t s, double now, Sink *k, uint32_t block, int exponent,
                    uint32_t nxt, int has_payload, int priming, int nonfinite)
{
    int st = c->sets[s];
    c->sets[s] = (uint8_t)(st ^ 1);
    int flags = has_payload ? 0 : FLAG_NO_PAYLOAD;
    uint8_t *h = c->pkt + s * c->pkt_cap;
    h[0] = (uint8_t)((c->msg_type << 4) | flags);
    h[1] = (uint8_t)c->rank;
    h[2] = (uint8_t)(c->job_id >> 8);
    h[3] = (uint8_t)c->job_id;
    uint32_t ss = ((uint32_t)st << 15) | (uint32_t)s;
    h[4] = (uint8_t)(ss >> 8);
    h[5] = (uint8_t)ss;
    h[6] = (uint8_t)exponent;
    h[7] = (uint8_t)nonfinite;
    put32(h + 8, c->call_id);
    put32(h + 12, block);
    put32(h + 16, nxt);
    put32(h + 20, c->job_key);
    if (c->pkt_len[s] == 0)
        c->open += 1;
    c->pkt_len[s] = has_payload ? HEADER_BYTES + 4 * c->k : HEADER_BYTES;
    c->set_[s] = (uint8_t)st;
    c->block_[s] = block;
    c->priming[s] = (uint8_t)priming;
    c->attempts[s] = 1;
    c->first[s] = now;
    c->timeout[s] = c->initial;
    if (arm(c, s, now, k) < 0)
        return -1;
    return emit(c, s, 0, k);
}

/* Write block b's payload into slot s's buffer; returns whether there is one. */
static int payload_of(Core *c, Py_ssize_t s, Py_ssize_t b, int exponent)
{
    if (!c->nonzero[b])
        return 0;
    uint8_t *out = c->pkt + s * c->pkt_cap + HEADER_BYTES;
    if (c->is_float) {
        int own = c->own[b];
        if (own > exponent)
            c->stats[S_CLAMPED_BLOCKS] += 1;
        quantize_row(c, c->blocks + b * c->k, exponent, own, out);
    } else {
        memcpy(out, c->be + b * 4 * c->k, (size_t)(4 * c->k));
    }
    return 1;
}

static int stop(Core *c, Sink *k)
{
    if (c->has_last) {
        c->has_last = 0;
        return add_timer(c, k);
    }
    return 0;
}

static int finish(Core *c, Sink *k)
{
    c->state = ST_DONE;
    c->heap_len = 0;
    if (stop(c, k) < 0)
        return -1;
    if (!k->list) {
        k->ended = END_DONE;
        return 0;
    }
    return append_steal(k->list, Py_BuildValue("(s)", "done"));
}

static int slot_done(Core *c, Py_ssize_t s, Sink *k)
{
    c->pkt_len[s] = 0;
    c->version[s] += 1;
    c->open -= 1;
    if (c->open == 0)
        return finish(c, k);
    return 0;
}

/* Call.next_deadline; returns 0 with no deadline. */
HIDDEN int next_deadline(Core *c, double *out)
{
    if (c->state != ST_RUNNING)
        return 0;
    while (c->heap_len) {
        TimerEntry *t = &c->heap[0];
        if (t->version == c->version[t->slot] && c->pkt_len[t->slot]) {
            *out = t->deadline;
            return 1;
        }
        heap_pop(c);
    }
    return 0;
}

static int close_acts(Core *c, Sink *k)
{
    if (c->state != ST_RUNNING)
        return 0;
    double dl = 0;
    int has = next_deadline(c, &dl);
    if (has != c->has_last || (has && dl != c->last_deadline)) {
        c->has_last = has;
        c->last_deadline = dl;
        return add_timer(c, k);
    }
    return 0;
}

/* ------------------------------------------------------------------ dense and sparse */

static int dense_send_block(Core *c, Py_ssize_t s, Py_ssize_t b, double now, Sink *k)
{
    int exponent = 0, has = 0, nf = 0;
    if (c->is_float) {
        Py_ssize_t nb = b + c->nslots;
        exponent = nb < c->nblocks ? c->own[nb] : 0;
        has = payload_of(c, s, b, c->agreed[b]);
        nf = c->nf ? c->nf[b] : 0;
    } else {
        has = payload_of(c, s, b, 0);
    }
    return send_use(c, s, now, k, (uint32_t)b, exponent, 0, has, 0, nf);
}

static int start_slots(Core *c, double now, Sink *k)
{
    for (Py_ssize_t s = c->lo; s < c->hi; s++) {
        int rc;
        if (c->sparse)
            rc = send_use(c, s, now, k, (uint32_t)s, c->class_own[s],
                          (uint32_t)c->first_nz[s], 0, 1, 0);
        else if (c->is_float)
            rc = send_use(c, s, now, k, (uint32_t)s, c->own[s], 0, 0, 1, 0);
        else
            rc = dense_send_block(c, s, s, now, k);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* quantize.apply_nonfinite for one row: NaN when NF_NAN or both infinities are set
   (+Inf + -Inf is NaN), else the one infinity. */
static void fill_nonfinite(float *row, Py_ssize_t k, int bits)
{
    int nan = (bits & NF_NAN) || ((bits & NF_POS_INF) && (bits & NF_NEG_INF));
    float v = nan ? __builtin_nanf("") : (bits & NF_POS_INF) ? __builtin_inff() : -__builtin_inff();
    for (Py_ssize_t i = 0; i < k; i++)
        row[i] = v;
}

/* Call._store: row b of the result, final. int32: the lanes; float32: the lanes dequantized
   with the block's agreed exponent e, or NaN/+-Inf for the result's non-finite bits. A
   header-only result is a row of zeros. */
static void store(Core *c, Py_ssize_t b, int flags, int e, const uint8_t *data)
{
    const Py_ssize_t k = c->k;
    if (!c->is_float) {
        int32_t *row = (int32_t *)c->result + b * k;
        if (flags & FLAG_NO_PAYLOAD)
            memset(row, 0, (size_t)k * sizeof *row);
        else
            store_impl(row, data + HEADER_BYTES, k);
        return;
    }
    float *row = (float *)c->result + b * k;
    int nf = data[7] & NF_MASK;
    if (c->nf_out)
        c->nf_out[b] = (uint8_t)nf;
    if (nf)
        fill_nonfinite(row, k, nf);
    else if (flags & FLAG_NO_PAYLOAD)
        memset(row, 0, (size_t)k * sizeof *row);
    else
        dequantize_impl(row, data + HEADER_BYTES, k,
                        c->d_f32 && (e == 0 || e >= c->d_regular_from),
                        c->d_f32 ? c->d_scale[e] : 0.0f, c->d_mul64[e]);
}

/* Returns -1 on an error, 1 on a protocol error (c->perr_* say which), else 0. */
static int on_result(Core *c, Py_ssize_t s, int flags, int exponent, uint32_t nxt,
                     const uint8_t *data, double now, Sink *k)
{
    if (!c->sparse) {
        if (c->priming[s]) {
            c->agreed[s] = (uint8_t)exponent;
            return dense_send_block(c, s, s, now, k);
        }
        Py_ssize_t b = c->block_[s];
        store(c, b, flags, c->is_float ? c->agreed[b] : 0, data);
        Py_ssize_t nb = b + c->nslots;
        if (c->is_float) {
            if (nb < c->nblocks) {
                c->agreed[nb] = (uint8_t)exponent;
            } else if (exponent != 0) {
                c->perr_kind = 1;
                c->perr_slot = s;
                c->perr_block = b;
                c->perr_value = exponent;
                return 1;
            }
        }
        if (nb < c->nblocks)
            return dense_send_block(c, s, nb, now, k);
        return slot_done(c, s, k);
    }
    int64_t low;
    if (c->priming[s]) {
        c->agreed[s] = (uint8_t)(c->is_float ? exponent : 0);
        low = s;
    } else {
        Py_ssize_t m = c->block_[s];
        store(c, m, flags, c->is_float ? c->agreed[s] : 0, data);
        low = (int64_t)m + 1;
    }
    if (nxt == NEXT_END)
        return slot_done(c, s, k);
    if ((int64_t)nxt < low || (int64_t)nxt >= c->nblocks || (Py_ssize_t)(nxt % c->nslots) != s) {
        c->perr_kind = 2;
        c->perr_slot = s;
        c->perr_value = nxt;
        return 1;
    }
    int exp = c->agreed[s];
    int has = payload_of(c, s, nxt, exp);
    int nf = c->nf ? c->nf[nxt] : 0;
    return send_use(c, s, now, k, nxt, exp, (uint32_t)c->after[nxt], has, 0, nf);
}

/* ------------------------------------------------------------------ events, in C */

HIDDEN int ev_start(Core *c, double now, Sink *k)
{
    c->state = ST_RUNNING;
    if (c->hi == c->lo)
        return finish(c, k);
    if (start_slots(c, now, k) < 0)
        return -1;
    return close_acts(c, k);
}

HIDDEN int ev_packet(Core *c, const uint8_t *d, Py_ssize_t len, double now, Sink *k)
{
    long long *st = c->stats;
    st[S_PACKETS_RECEIVED] += 1;
    st[S_BYTES_RECEIVED] += len;
    if (len < HEADER_BYTES) {
        st[S_MALFORMED] += 1;
        return 0;
    }
    int msg_type = d[0] >> 4, flags = d[0] & 0xF;
    int job = (d[2] << 8) | d[3];
    uint32_t ss = ((uint32_t)d[4] << 8) | d[5];
    int set = (int)(ss >> 15);
    Py_ssize_t s = (Py_ssize_t)(ss & 0x7FFF);
    int exponent = d[6];
    uint32_t pid = get32(d + 8), block = get32(d + 12), nxt = get32(d + 16);
    uint32_t key = get32(d + 20);
    /* wire.check_result */
    int bad = (flags & FLAG_NO_PAYLOAD) ? len != HEADER_BYTES : len != HEADER_BYTES + 4 * c->k;
    bad = bad || !(flags & FLAG_RESULT) || (msg_type != MSG_DENSE && msg_type != MSG_SPARSE);
    if (!bad) {
        int end = (flags & FLAG_END) != 0;
        bad = msg_type == MSG_SPARSE ? end != (nxt == NEXT_END) : end;
    }
    if (bad) {
        st[S_MALFORMED] += 1;
        return 0;
    }
    if (msg_type != c->msg_type || job != c->job_id || key != c->job_key) {
        st[S_FOREIGN] += 1;
        return 0;
    }
    if (pid != c->call_id) {
        st[S_STALE] += 1;
        return 0;
    }
    if (c->state != ST_RUNNING && !(c->in_group && c->state == ST_DONE)) {
        st[S_LATE] += 1;
        return 0;
    }
    if (s < c->lo || s >= c->hi || c->pkt_len[s] == 0 || set != c->set_[s] || block != c->block_[s]) {
        st[S_DUPLICATES] += 1;
        return 0;
    }
    st[S_RESULTS] += 1;
    if (flags & FLAG_RETRANSMIT)
        st[S_UNICAST_RESULTS] += 1;
    int rc = on_result(c, s, flags, exponent, nxt, d, now, k);
    if (rc < 0)
        return -1;
    if (rc > 0) {
        c->state = ST_BROKEN;
        if (stop(c, k) < 0)
            return -1;
        k->ended = END_PROTOCOL;
        return 0;
    }
    return close_acts(c, k);
}

static int stuck_now(const Core *c, Py_ssize_t s, double now)
{
    return now - c->first[s] >= c->give_up ||
           (c->max_attempts >= 0 && c->attempts[s] >= c->max_attempts);
}

HIDDEN int ev_timer(Core *c, double now, Sink *k)
{
    if (c->state != ST_RUNNING)
        return 0;
    Py_ssize_t ndue = 0, nstuck = 0;
    while (c->heap_len && c->heap[0].deadline <= now) {
        TimerEntry t = heap_pop(c);
        if (t.version == c->version[t.slot] && c->pkt_len[t.slot])
            c->due[ndue++] = t.slot;  /* one valid entry per slot: ndue <= active */
    }
    for (Py_ssize_t i = 0; i < ndue; i++)
        nstuck += stuck_now(c, c->due[i], now);
    if (nstuck) {
        /* Call._fail: the stuck slots are marked for the error the caller builds */
        c->state = ST_FAILED;
        memset(c->stuck, 0, (size_t)(c->active ? c->active : 1));
        for (Py_ssize_t i = 0; i < ndue; i++)
            if (stuck_now(c, c->due[i], now))
                c->stuck[c->due[i]] = 1;
        if (stop(c, k) < 0)
            return -1;
        k->ended = END_TIMEOUT;
        return 0;
    }
    for (Py_ssize_t i = 0; i < ndue; i++) {
        Py_ssize_t s = c->due[i];
        c->attempts[s] += 1;
        double t = c->timeout[s] * c->multiplier;
        c->timeout[s] = t < c->max_timeout ? t : c->max_timeout; /* min(t, max) */
        if (arm(c, s, now, k) < 0 || emit(c, s, 1, k) < 0)
            return -1;
    }
    return close_acts(c, k);
}

/* One of several cores of a call (threads.c): another core's slot gave up at `now`, which
   fails the whole call. This core fails with it, marking its own slots that were due and
   stuck by then, so the call names the stuck slots one core running every slot would
   (that core fails on the first timer that finds a stuck slot, marking every due one). */
HIDDEN int ev_fail_check(Core *c, double now, Sink *k)
{
    if (c->state != ST_RUNNING)
        return 0;
    Py_ssize_t nstuck = 0;
    memset(c->stuck, 0, (size_t)(c->active ? c->active : 1));
    for (Py_ssize_t i = 0; i < c->heap_len; i++) {
        const TimerEntry *t = &c->heap[i];
        Py_ssize_t s = t->slot;
        if (t->deadline <= now && t->version == c->version[s] && c->pkt_len[s] &&
            !c->stuck[s] && stuck_now(c, s, now)) {
            c->stuck[s] = 1;
            nstuck += 1;
        }
    }
    if (!nstuck)
        return 0;
    c->state = ST_FAILED;
    if (stop(c, k) < 0)
        return -1;
    k->ended = END_TIMEOUT;
    return 0;
}

HIDDEN int ev_resume(Core *c, double now, Sink *k)
{
    c->state = ST_RUNNING;
    for (Py_ssize_t s = c->lo; s < c->hi; s++) {
        if (!c->pkt_len[s])
            continue;
        c->attempts[s] += 1;
        c->first[s] = now;
        c->timeout[s] = c->initial;
        if (arm(c, s, now, k) < 0 || emit(c, s, 1, k) < 0)
            return -1;
    }
    c->has_last = 0;
    return close_acts(c, k);
}
