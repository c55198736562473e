/* The protocol core of one call, in C: the state machine of host/protocol/call.py,
   dense.py and sparse.py, event for event and action for action (the Python core stays
   the specification; tests/host/test_native_core.py feeds both the same event traces and
   requires identical actions, and drives this one through the independent switch model).

   A call's per-call set-up (block exponents, the non-zero bitmap, sparse's next-block
   tables, the payloads of int32 calls) is vectorised numpy work done once by the Python
   call object (host/protocol/native.py), which hands the arrays in; this object keeps
   references to them. Per event it does what the Python core does per packet: parse and
   filter the result, store its lanes, quantize the next block with its agreed exponent
   (the same IEEE operations as quantize.quantize_row, so the same integers), build the
   next packet, and keep the per-slot timers in a heap ordered by (deadline, slot,
   version) exactly as heapq orders the Python core's tuples.

   Actions come back as a list of tuples: ("send", bytes, slot, retransmit),
   ("timer", deadline or None), ("done",), ("timeout", stuck, in_flight) with slot
   descriptions (slot, set, block, priming, attempts, first), ("protocol", message).
   Built with -ffp-contract=off (no fused multiply-add), never -ffast-math. */

#if defined(__FAST_MATH__)
#error "_engine_c must not be built with -ffast-math: its results must be numpy's, bit for bit"
#endif

#define _GNU_SOURCE /* sendmmsg, recvmmsg */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>

#define HEADER_BYTES 24
#define MSG_DENSE 1
#define MSG_SPARSE 2
#define FLAG_RESULT 0x1
#define FLAG_NO_PAYLOAD 0x2
#define FLAG_RETRANSMIT 0x4
#define FLAG_END 0x8
#define NEXT_END 0xFFFFFFFFu
#define NF_MASK 0x7 /* the nonfinite byte's bits: NF_NAN | NF_POS_INF | NF_NEG_INF */

enum { ST_NEW, ST_RUNNING, ST_DONE, ST_FAILED, ST_BROKEN };
enum { Q_F32_MUL, Q_F64_MUL, Q_F64_DIV };  /* quantize._Tables.q_mode */

enum {
    S_PACKETS_SENT, S_RETRANSMISSIONS, S_BYTES_SENT, S_PACKETS_RECEIVED, S_BYTES_RECEIVED,
    S_RESULTS, S_UNICAST_RESULTS, S_DUPLICATES, S_STALE, S_FOREIGN, S_MALFORMED, S_LATE,
    S_CLAMPED_BLOCKS, S_COUNT
};

typedef struct {
    double deadline;
    Py_ssize_t slot;
    uint64_t version;
} TimerEntry;

typedef struct {
    PyObject_HEAD
    /* the job and the call */
    int sparse, is_float, msg_type, rank, job_id, n;
    uint32_t call_id, job_key;
    Py_ssize_t k, nslots, nblocks, active, pkt_cap;
    double initial, multiplier, max_timeout, give_up;
    long long max_attempts; /* < 0: unlimited */
    /* the Python call's arrays (kept alive by refs) */
    PyObject *refs;
    uint8_t *sets;              /* the session's per-slot sets (S), flipped per use */
    const float *blocks;        /* float: (B, K) */
    const uint8_t *be;          /* int32: (B, K) big-endian payloads */
    const uint8_t *own;         /* float: B own exponents */
    const uint8_t *nonzero;     /* B: the block has a payload */
    const uint8_t *nf;          /* float: B, the NF_* bits each block sends (NULL: none) */
    uint8_t *nf_out;            /* float: B, the NF_* bits its result brought (NULL: none) */
    uint8_t *agreed;            /* dense float: B agreed exponents; sparse: S class ones */
    const int64_t *after;       /* sparse: B, next non-zero block of the class after b */
    const int64_t *first_nz;    /* sparse: S */
    const uint8_t *class_own;   /* sparse: S */
    int32_t *sums;              /* (B, K) */
    int q_mode, regular_from;
    const void *q_table;        /* 256 float32 (Q_F32_MUL) or float64 */
    /* per active slot */
    uint8_t *pkt;               /* active × pkt_cap bytes */
    Py_ssize_t *pkt_len;        /* 0: nothing outstanding */
    uint8_t *set_, *priming;
    uint32_t *block_;
    long long *attempts;
    double *first, *timeout;
    uint64_t *version;
    uint8_t *stuck;             /* per slot: stuck when the call failed */
    Py_ssize_t *due;            /* on_timer's scratch: the slots due */
    TimerEntry *heap;
    Py_ssize_t heap_len, heap_cap;
    /* the native driver's send queue: packets in order, from q_head */
    uint8_t *q_buf;
    Py_ssize_t *q_lens;
    Py_ssize_t q_head, q_len, q_cap;
    int q_waiting;              /* the queue waits for the socket to be writable */
    /* a protocol error, for its message: 1 dense exponent past the end, 2 sparse next */
    int perr_kind;
    Py_ssize_t perr_slot, perr_block;
    unsigned long perr_value;
    Py_ssize_t open;
    int has_last;               /* the last SetTimer sent: None (0) or last_deadline */
    double last_deadline;
    int state;
    long long stats[S_COUNT];
} Core;

/* ------------------------------------------------------------------ actions

   The internal functions hand their actions to a Sink. Called from Python (the event
   methods), the sink builds the action tuples (the GIL is held); in the native driver
   (Core.run, the GIL released) sends go into the core's send queue and the end of the
   call is only marked, to be turned into its action once the GIL is back. */

typedef struct {
    PyObject *list;  /* Python mode: the action tuples; NULL in the driver */
    int ended;       /* the driver: 1 done, 2 timeout, 3 protocol error */
    int oom;
} Sink;

enum { END_NONE, END_DONE, END_TIMEOUT, END_PROTOCOL };

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

static int append_steal(PyObject *acts, PyObject *item)
{
    if (!item)
        return -1;
    int rc = PyList_Append(acts, item);
    Py_DECREF(item);
    return rc;
}

/* ------------------------------------------------------------------ lanes

   The per-packet loops over K lanes: quantizing a block into big-endian int32 lanes
   (quantize.quantize_row) and storing a result's big-endian lanes into the int32 sums.
   Written once as inline functions with a flag `vrint` that is constant where they are
   inlined, and compiled twice, as host/_quantize_c.c does: an AVX2 copy (vrint = 1:
   rint/rintf, i.e. vroundps/vroundpd, the byte swaps as vpshufb), chosen when the module
   loads on a CPU with AVX2 (`use_avx2`), and a baseline copy (vrint = 0: the float64
   rounding trick below, which SSE2 vectorises, where rint would be a libm call per lane).
   Both copies give the same integers as numpy (tests/host/test_native_lanes.py). */

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define X86 1
#define INLINE static inline __attribute__((always_inline))
#define AVX2 __attribute__((target("avx2")))
#else
#define X86 0
#define INLINE static inline
#endif

/* np.rint, then the cast to int32, of a y with |y| < 2^31 (the clamp argument of
   docs/protocol.md: the agreed exponent is at least the block's own on these paths).
   Without vector rounding: y + 1.5 * 2^52 lies in [2^52, 2^53), where consecutive
   float64s are 1 apart, so the addition rounds y to an integer, half to even, and the
   subtraction is exact: the same integer as rint(y) (host/_quantize_c.c's rint_int32). */
INLINE int32_t rint_int32(double y, int vrint)
{
    return vrint ? (int32_t)rint(y) : (int32_t)((y + 0x1.8p52) - 0x1.8p52);
}

INLINE void put_lane(uint8_t *out, Py_ssize_t i, int32_t v)
{
    uint32_t u = __builtin_bswap32((uint32_t)v);
    memcpy(out + 4 * i, &u, 4);
}

/* quantize.quantize_row: K float32 values with agreed exponent e and own exponent own,
   big-endian int32 into out. The same operations as the numpy code and the kernel. */
INLINE void quantize_lanes(const float *x, Py_ssize_t k, int n, int e, int own, int q_mode,
                           int regular_from, const void *q_table, uint8_t *out, int vrint)
{
    if (own > e || e < regular_from) {
        /* quantize._quantize_rows64: exact scale in float64, one division by n, rint,
           clip to +-floor((2^31 - 1) / n). Rare: left scalar, with libm's rint. */
        const double p = ldexp(1.0, 158 - e), lim = (double)(INT32_MAX / n);
        for (Py_ssize_t i = 0; i < k; i++) {
            double y = (double)x[i] * p;
            y /= n;
            double r = rint(y);
            r = r > lim ? lim : r < -lim ? -lim : r;
            put_lane(out, i, (int32_t)r);
        }
    } else if (q_mode == Q_F32_MUL) {
        /* power-of-two n: float32 multiply by f = 2^s (exact), rint, cast */
        const float f = ((const float *)q_table)[e];
        for (Py_ssize_t i = 0; i < k; i++) {
            float y = x[i] * f;
            put_lane(out, i, vrint ? (int32_t)rintf(y) : rint_int32(y, 0)); /* y widens exactly */
        }
    } else if (q_mode == Q_F64_MUL) {
        const double m = ((const double *)q_table)[e];
        for (Py_ssize_t i = 0; i < k; i++)
            put_lane(out, i, rint_int32((double)x[i] * m, vrint));
    } else {
        const double d = ((const double *)q_table)[e];
        for (Py_ssize_t i = 0; i < k; i++)
            put_lane(out, i, rint_int32((double)x[i] / d, vrint));
    }
}

/* A result's K big-endian lanes into the int32 sums. */
INLINE void store_lanes(int32_t *row, const uint8_t *data, Py_ssize_t k)
{
    for (Py_ssize_t i = 0; i < k; i++) {
        uint32_t u;
        memcpy(&u, data + 4 * i, 4);
        row[i] = (int32_t)__builtin_bswap32(u);
    }
}

typedef void (*quantize_fn)(const float *, Py_ssize_t, int, int, int, int, int, const void *,
                            uint8_t *);
typedef void (*store_fn)(int32_t *, const uint8_t *, Py_ssize_t);

static void quantize_base(const float *x, Py_ssize_t k, int n, int e, int own, int q_mode,
                          int regular_from, const void *q_table, uint8_t *out)
{
    quantize_lanes(x, k, n, e, own, q_mode, regular_from, q_table, out, !X86);
}
static void store_base(int32_t *row, const uint8_t *data, Py_ssize_t k)
{
    store_lanes(row, data, k);
}
#if X86
AVX2 static void quantize_avx2(const float *x, Py_ssize_t k, int n, int e, int own,
                               int q_mode, int regular_from, const void *q_table, uint8_t *out)
{
    quantize_lanes(x, k, n, e, own, q_mode, regular_from, q_table, out, 1);
}
AVX2 static void store_avx2(int32_t *row, const uint8_t *data, Py_ssize_t k)
{
    store_lanes(row, data, k);
}
#endif

static quantize_fn quantize_impl = quantize_base;
static store_fn store_impl = store_base;

static void quantize_row(const Core *c, const float *x, int e, int own, uint8_t *out)
{
    quantize_impl(x, c->k, c->n, e, own, c->q_mode, c->regular_from, c->q_table, out);
}

/* use_avx2(on) -> bool: run the AVX2 copy of the lane loops when `on` and the CPU has
   AVX2, else the baseline copy (tests run both). The module starts with on=True. */
static PyObject *use_avx2(PyObject *Py_UNUSED(self), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    quantize_impl = quantize_base;
    store_impl = store_base;
#if X86
    __builtin_cpu_init();
    on = on && __builtin_cpu_supports("avx2");
    if (on) {
        quantize_impl = quantize_avx2;
        store_impl = store_avx2;
    }
#else
    on = 0;
#endif
    return PyBool_FromLong(on);
}

/* quantize_lanes(x, exponent, n, own, q_mode, q_table, regular_from) -> bytes: one
   block's big-endian lanes as the core quantizes them (for the tests that compare them
   with quantize.quantize_row). */
static PyObject *py_quantize_lanes(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer x, table;
    int e, n, own, q_mode, regular_from;
    if (!PyArg_ParseTuple(args, "y*iiiiy*i", &x, &e, &n, &own, &q_mode, &table, &regular_from))
        return NULL;
    PyObject *out = NULL;
    if (x.len % 4 || n < 1 || e < 0 || e > 255 || own < 0 || own > 255 || q_mode < 0 ||
        q_mode > 2 || table.len != (q_mode == Q_F32_MUL ? 256 * 4 : 256 * 8)) {
        PyErr_SetString(PyExc_ValueError, "quantize_lanes: arguments out of range");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, x.len);
    if (out)
        quantize_impl((const float *)x.buf, x.len / 4, n, e, own, q_mode, regular_from,
                      table.buf, (uint8_t *)PyBytes_AS_STRING(out));
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&table);
    return out;
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
static int next_deadline(Core *c, double *out)
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
    for (Py_ssize_t s = 0; s < c->active; s++) {
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

/* Call._store: the lanes, and (float) the result's non-finite bits. */
static void store(Core *c, Py_ssize_t b, int flags, const uint8_t *data)
{
    if (c->nf_out)
        c->nf_out[b] = data[7] & NF_MASK;
    if (flags & FLAG_NO_PAYLOAD)
        return;
    store_impl(c->sums + b * c->k, data + HEADER_BYTES, c->k);
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
        store(c, b, flags, data);
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
        store(c, m, flags, data);
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

static int ev_start(Core *c, double now, Sink *k)
{
    c->state = ST_RUNNING;
    if (c->active == 0)
        return finish(c, k);
    if (start_slots(c, now, k) < 0)
        return -1;
    return close_acts(c, k);
}

static int ev_packet(Core *c, const uint8_t *d, Py_ssize_t len, double now, Sink *k)
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
    if (c->state != ST_RUNNING) {
        st[S_LATE] += 1;
        return 0;
    }
    if (s >= c->active || c->pkt_len[s] == 0 || set != c->set_[s] || block != c->block_[s]) {
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

static int ev_timer(Core *c, double now, Sink *k)
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

static int ev_resume(Core *c, double now, Sink *k)
{
    c->state = ST_RUNNING;
    for (Py_ssize_t s = 0; s < c->active; s++) {
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

/* ------------------------------------------------------------------ to Python */

static PyObject *describe(Core *c, Py_ssize_t s)
{
    return Py_BuildValue("(nnkOLd)", s, (Py_ssize_t)c->set_[s], (unsigned long)c->block_[s],
                         c->priming[s] ? Py_True : Py_False, c->attempts[s], c->first[s]);
}

/* The action that ends the call, once the GIL is held: ("timeout", stuck, in_flight) or
   ("protocol", message). */
static PyObject *end_action(Core *c, int ended)
{
    if (ended == END_DONE)
        return Py_BuildValue("(s)", "done");
    if (ended == END_PROTOCOL) {
        PyObject *msg;
        if (c->perr_kind == 1) {
            Py_ssize_t b = c->perr_block;
            msg = PyUnicode_FromFormat(
                "the result of block %zd, the last of slot %zd, carries exponent %d for "
                "block %zd: the workers disagree on the tensor's size (%zd blocks here)",
                b, c->perr_slot, (int)c->perr_value, b + c->nslots, c->nblocks);
        } else {
            msg = PyUnicode_FromFormat(
                "the result for slot %zd names next block %lu, which is not a later block of "
                "the slot's class among %zd blocks: the workers disagree on the tensor's size "
                "or data layout",
                c->perr_slot, (unsigned long)c->perr_value, c->nblocks);
        }
        if (!msg)
            return NULL;
        return Py_BuildValue("(sN)", "protocol", msg);
    }
    PyObject *stuck = PyList_New(0), *flight = PyList_New(0);
    if (!stuck || !flight)
        goto fail;
    for (Py_ssize_t s = 0; s < c->active; s++) {
        if (c->stuck[s] && append_steal(stuck, describe(c, s)) < 0)
            goto fail;
        if (c->pkt_len[s] && append_steal(flight, describe(c, s)) < 0)
            goto fail;
    }
    return Py_BuildValue("(sNN)", "timeout", stuck, flight);
fail:
    Py_XDECREF(stuck);
    Py_XDECREF(flight);
    return NULL;
}

/* Run one event from Python: its actions as tuples. */
static PyObject *python_event(Core *c, int rc, Sink *k)
{
    if (rc < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_DECREF(k->list);
        return NULL;
    }
    if (k->ended == END_TIMEOUT || k->ended == END_PROTOCOL) {
        if (append_steal(k->list, end_action(c, k->ended)) < 0) {
            Py_DECREF(k->list);
            return NULL;
        }
    }
    return k->list;
}

static int parse_now(PyObject *arg, double *now)
{
    *now = PyFloat_AsDouble(arg);
    return (*now == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *Core_start(Core *c, PyObject *arg)
{
    double now;
    if (parse_now(arg, &now) < 0)
        return NULL;
    if (c->state != ST_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "the call already started");
        return NULL;
    }
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list)
        return NULL;
    return python_event(c, ev_start(c, now, &k), &k);
}

static PyObject *Core_on_packet(Core *c, PyObject *args)
{
    Py_buffer view;
    double now;
    if (!PyArg_ParseTuple(args, "y*d", &view, &now))
        return NULL;
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int rc = ev_packet(c, view.buf, view.len, now, &k);
    PyBuffer_Release(&view);
    return python_event(c, rc, &k);
}

static PyObject *Core_on_timer(Core *c, PyObject *arg)
{
    double now;
    if (parse_now(arg, &now) < 0)
        return NULL;
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list)
        return NULL;
    return python_event(c, ev_timer(c, now, &k), &k);
}

static PyObject *Core_resume(Core *c, PyObject *arg)
{
    double now;
    if (parse_now(arg, &now) < 0)
        return NULL;
    if (c->state != ST_FAILED) {
        PyErr_SetString(PyExc_RuntimeError, "only a failed call resumes");
        return NULL;
    }
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list)
        return NULL;
    return python_event(c, ev_resume(c, now, &k), &k);
}

/* ------------------------------------------------------------------ the native driver */

#define BATCH 64

static double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* time.monotonic()'s clock */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

typedef struct {
    long long sent, bytes_sent, received, bytes_received, queued, dropped;
    int err_codes[8];
    long long err_counts[8];
} IoCounters;

static void count_error(IoCounters *io, int code)
{
    for (int i = 0; i < 8; i++) {
        if (io->err_counts[i] == 0 || io->err_codes[i] == code) {
            io->err_codes[i] = code;
            io->err_counts[i] += 1;
            return;
        }
    }
    io->err_counts[7] += 1; /* more than 8 kinds of error: lumped with the last */
}

/* Send the queue in order with sendmmsg, as UdpTransport does: a full buffer (EAGAIN,
   ENOBUFS) leaves the rest queued, in order, for when the socket is writable; an ICMP
   refusal reported on this send is counted and the send retried once; any other error
   is counted and the packet dropped (the timer resends it). Returns whether packets
   are still queued. */
static int flush_queue(Core *c, int fd, IoCounters *io)
{
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    int refused_retry = 0;
    while (c->q_head < c->q_len) {
        int m = (int)(c->q_len - c->q_head < BATCH ? c->q_len - c->q_head : BATCH);
        for (int i = 0; i < m; i++) {
            Py_ssize_t j = c->q_head + i;
            iov[i].iov_base = c->q_buf + j * c->pkt_cap;
            iov[i].iov_len = (size_t)c->q_lens[j];
            memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
            msgs[i].msg_hdr.msg_iov = &iov[i];
            msgs[i].msg_hdr.msg_iovlen = 1;
        }
        int r = sendmmsg(fd, msgs, (unsigned)m, MSG_DONTWAIT);
        if (r > 0) {
            for (int i = 0; i < r; i++) {
                io->sent += 1;
                io->bytes_sent += c->q_lens[c->q_head + i];
            }
            c->q_head += r;
            refused_retry = 0;
            continue;
        }
        int e = r < 0 ? errno : EAGAIN;
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EWOULDBLOCK || e == ENOBUFS) {
            if (!c->q_waiting) {
                io->queued += c->q_len - c->q_head;
                c->q_waiting = 1;
            }
            return 1;
        }
        count_error(io, e);
        if (e == ECONNREFUSED && !refused_retry) {
            refused_retry = 1; /* the error was an earlier datagram's: this one retries */
            continue;
        }
        refused_retry = 0;
        io->dropped += 1;
        c->q_head += 1;
    }
    c->q_head = c->q_len = 0;
    c->q_waiting = 0;
    return 0;
}

/* Core.run(fd, mode, budget) -> (ended, end_action or None, io counters). mode 0: start,
   1: resume, 2: go on. Runs the call with the GIL released for at most `budget` seconds
   (then returns ended False, the call still running: the caller looks at its cancel flag
   and calls again with mode 2). */
static PyObject *Core_run(Core *c, PyObject *args)
{
    int fd, mode;
    double budget;
    if (!PyArg_ParseTuple(args, "iid", &fd, &mode, &budget))
        return NULL;
    if ((mode == 0 && c->state != ST_NEW) || (mode == 1 && c->state != ST_FAILED) ||
        (mode == 2 && c->state != ST_RUNNING) || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_RuntimeError, "Core.run: the call is not in that state");
        return NULL;
    }
    const Py_ssize_t cap = c->pkt_cap + 1; /* a longer datagram comes back truncated */
    uint8_t *rbuf = PyMem_RawMalloc((size_t)(BATCH * cap));
    if (!rbuf)
        return PyErr_NoMemory();
    IoCounters io;
    memset(&io, 0, sizeof io);
    Sink k = {NULL, 0, 0};
    int rc = 0, os_error = 0;
    Py_BEGIN_ALLOW_THREADS
    double now = mono(), until = now + budget;
    if (mode == 0)
        rc = ev_start(c, now, &k);
    else if (mode == 1)
        rc = ev_resume(c, now, &k);
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    while (rc == 0 && !k.ended) {
        int waiting = flush_queue(c, fd, &io);
        now = mono();
        if (now >= until)
            break;
        double wait = until - now;
        if (c->has_last && c->last_deadline - now < wait)
            wait = c->last_deadline - now;
        struct pollfd p = {fd, (short)(POLLIN | (waiting ? POLLOUT : 0)), 0};
        int ms = wait <= 0 ? 0 : (int)ceil(wait * 1000.0);
        int pr = poll(&p, 1, ms);
        if (pr < 0 && errno != EINTR) {
            os_error = errno;
            break;
        }
        if (pr > 0 && (p.revents & POLLIN)) {
            for (int i = 0; i < BATCH; i++) {
                iov[i].iov_base = rbuf + i * cap;
                iov[i].iov_len = (size_t)cap;
                memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
                msgs[i].msg_hdr.msg_iov = &iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            int r = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
            if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                count_error(&io, errno); /* e.g. ECONNREFUSED from an ICMP error */
            if (r > 0) {
                now = mono();
                for (int i = 0; i < r && rc == 0 && !k.ended; i++) {
                    Py_ssize_t len = msgs[i].msg_len;
                    io.received += 1;
                    io.bytes_received += len;
                    rc = ev_packet(c, rbuf + i * cap, len, now, &k);
                }
            }
        }
        if (rc == 0 && !k.ended && c->has_last) {
            now = mono();
            if (now >= c->last_deadline)
                rc = ev_timer(c, now, &k);
        }
    }
    if (rc == 0)
        flush_queue(c, fd, &io); /* best effort, as the Python runner */
    Py_END_ALLOW_THREADS
    PyMem_RawFree(rbuf);
    if (rc < 0)
        return PyErr_NoMemory();
    if (os_error) {
        errno = os_error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *end = Py_None;
    Py_INCREF(end);
    if (k.ended) {
        Py_DECREF(end);
        end = end_action(c, k.ended);
        if (!end)
            return NULL;
    }
    PyObject *errs = PyList_New(0);
    if (!errs) {
        Py_DECREF(end);
        return NULL;
    }
    for (int i = 0; i < 8 && io.err_counts[i]; i++)
        if (append_steal(errs, Py_BuildValue("(iL)", io.err_codes[i], io.err_counts[i])) < 0) {
            Py_DECREF(errs);
            Py_DECREF(end);
            return NULL;
        }
    return Py_BuildValue("(ON(LLLLLLN))", k.ended ? Py_True : Py_False, end, io.sent,
                         io.bytes_sent, io.received, io.bytes_received, io.queued, io.dropped,
                         errs);
}

static PyObject *Core_next_deadline(Core *c, PyObject *Py_UNUSED(ignored))
{
    double dl;
    if (next_deadline(c, &dl))
        return PyFloat_FromDouble(dl);
    Py_RETURN_NONE;
}

static PyObject *Core_outstanding(Core *c, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (Py_ssize_t s = 0; s < c->active; s++)
        if (c->pkt_len[s] && append_steal(out, describe(c, s)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    return out;
}

static PyObject *Core_stats(Core *c, PyObject *Py_UNUSED(ignored))
{
    PyObject *t = PyTuple_New(S_COUNT);
    if (!t)
        return NULL;
    for (int i = 0; i < S_COUNT; i++) {
        PyObject *v = PyLong_FromLongLong(c->stats[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *Core_get_state(Core *c, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(c->state);
}

/* ------------------------------------------------------------------ construction */

/* A C-contiguous, writable-if-asked buffer of exactly `bytes` bytes (or any length when
   bytes < 0), kept alive through c->refs. */
static void *take(PyObject *refs, Py_ssize_t i, PyObject *obj, Py_ssize_t bytes, int writable,
                  const char *name)
{
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return NULL;
    void *p = v.buf;
    Py_ssize_t len = v.len;
    PyBuffer_Release(&v);
    if (bytes >= 0 && len != bytes) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, %zd expected", name, len, bytes);
        return NULL;
    }
    Py_INCREF(obj);
    PyTuple_SET_ITEM(refs, i, obj);
    return p;
}

static int Core_init(Core *c, PyObject *args, PyObject *kw)
{
    static char *names[] = {
        "sparse", "is_float", "msg_type", "rank", "job_id", "job_key", "call_id", "n", "k", "slots",
        "blocks_count", "active", "initial", "multiplier", "max_timeout", "give_up",
        "max_attempts", "sets", "blocks", "be", "own", "nonzero", "agreed", "after",
        "first_nonzero", "class_own", "sums", "q_mode", "q_table", "regular_from", "nf",
        "nf_out", NULL};
    int sparse, is_float, msg_type, rank, job_id, n, q_mode, regular_from;
    unsigned long call_id, job_key;
    Py_ssize_t k, nslots, nblocks, active;
    double initial, multiplier, max_timeout, give_up;
    long long max_attempts;
    PyObject *sets, *blocks, *be, *own, *nonzero, *agreed, *after, *first_nz, *class_own,
        *sums, *q_table, *nf = NULL, *nf_out = NULL;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "ppiiikkinnnnddddLOOOOOOOOOOiOi|OO", names, &sparse, &is_float,
            &msg_type, &rank, &job_id, &job_key, &call_id, &n, &k, &nslots, &nblocks, &active, &initial,
            &multiplier, &max_timeout, &give_up, &max_attempts, &sets, &blocks, &be, &own,
            &nonzero, &agreed, &after, &first_nz, &class_own, &sums, &q_mode, &q_table,
            &regular_from, &nf, &nf_out))
        return -1;
    if (c->refs) {
        PyErr_SetString(PyExc_RuntimeError, "Core is initialised once");
        return -1;
    }
    if (n < 1 || k < 1 || nslots < 1 || nblocks < 0 || active < 0 || active > nslots ||
        active > nblocks || nslots > 0x8000 || (q_mode < 0 || q_mode > 2)) {
        PyErr_SetString(PyExc_ValueError, "Core: parameters out of range");
        return -1;
    }
    c->sparse = sparse;
    c->is_float = is_float;
    c->msg_type = msg_type;
    c->rank = rank;
    c->job_id = job_id;
    c->call_id = (uint32_t)call_id;
    c->job_key = (uint32_t)job_key;
    c->n = n;
    c->k = k;
    c->nslots = nslots;
    c->nblocks = nblocks;
    c->active = active;
    c->initial = initial;
    c->multiplier = multiplier;
    c->max_timeout = max_timeout;
    c->give_up = give_up;
    c->max_attempts = max_attempts;
    c->q_mode = q_mode;
    c->regular_from = regular_from;
    c->refs = PyTuple_New(12);
    if (!c->refs)
        return -1;
    PyObject *refs = c->refs;
    Py_ssize_t bk = nblocks * k;
#define TAKE(i, field, obj, bytes, w, name)                  \
    do {                                                     \
        c->field = take(refs, i, obj, bytes, w, name);       \
        if (!c->field)                                       \
            return -1;                                       \
    } while (0)
    TAKE(0, sets, sets, nslots, 1, "sets");
    TAKE(1, sums, sums, 4 * bk, 1, "sums");
    TAKE(2, nonzero, nonzero, nblocks, 0, "nonzero");
    if (is_float) {
        TAKE(3, blocks, blocks, 4 * bk, 0, "blocks");
        TAKE(4, own, own, nblocks, 0, "own");
        TAKE(5, agreed, agreed, sparse ? nslots : nblocks, 1, "agreed");
        TAKE(6, q_table, q_table, q_mode == Q_F32_MUL ? 256 * 4 : 256 * 8, 0, "q_table");
        /* the non-finite bits (docs/protocol.md, "Non-finite values"); absent: all 0 */
        if (nf && nf != Py_None)
            TAKE(10, nf, nf, nblocks, 0, "nf");
        if (nf_out && nf_out != Py_None)
            TAKE(11, nf_out, nf_out, nblocks, 1, "nf_out");
    } else {
        TAKE(3, be, be, 4 * bk, 0, "be");
        if (sparse)
            TAKE(5, agreed, agreed, nslots, 1, "agreed");
    }
    if (sparse) {
        TAKE(7, after, after, 8 * nblocks, 0, "after");
        TAKE(8, first_nz, first_nz, 8 * nslots, 0, "first_nonzero");
        TAKE(9, class_own, class_own, nslots, 0, "class_own");
    }
#undef TAKE
    for (Py_ssize_t i = 0; i < 12; i++)
        if (!PyTuple_GET_ITEM(refs, i)) {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(refs, i, Py_None);
        }
    Py_ssize_t na = active ? active : 1;
    c->pkt_cap = HEADER_BYTES + 4 * k;
    c->pkt = PyMem_Calloc((size_t)na, (size_t)c->pkt_cap);
    c->pkt_len = PyMem_Calloc((size_t)na, sizeof *c->pkt_len);
    c->set_ = PyMem_Calloc((size_t)na, 1);
    c->priming = PyMem_Calloc((size_t)na, 1);
    c->block_ = PyMem_Calloc((size_t)na, sizeof *c->block_);
    c->attempts = PyMem_Calloc((size_t)na, sizeof *c->attempts);
    c->first = PyMem_Calloc((size_t)na, sizeof *c->first);
    c->timeout = PyMem_Calloc((size_t)na, sizeof *c->timeout);
    c->version = PyMem_Calloc((size_t)na, sizeof *c->version);
    c->stuck = PyMem_Calloc((size_t)na, 1);
    c->due = PyMem_Calloc((size_t)na, sizeof *c->due);
    if (!c->pkt || !c->pkt_len || !c->set_ || !c->priming || !c->block_ || !c->attempts ||
        !c->first || !c->timeout || !c->version || !c->stuck || !c->due) {
        PyErr_NoMemory();
        return -1;
    }
    c->state = ST_NEW;
    return 0;
}

static void Core_dealloc(Core *c)
{
    Py_XDECREF(c->refs);
    PyMem_Free(c->pkt);
    PyMem_Free(c->pkt_len);
    PyMem_Free(c->set_);
    PyMem_Free(c->priming);
    PyMem_Free(c->block_);
    PyMem_Free(c->attempts);
    PyMem_Free(c->first);
    PyMem_Free(c->timeout);
    PyMem_Free(c->version);
    PyMem_Free(c->stuck);
    PyMem_Free(c->due);
    PyMem_RawFree(c->heap);
    PyMem_RawFree(c->q_buf);
    PyMem_RawFree(c->q_lens);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef Core_methods[] = {
    {"start", (PyCFunction)Core_start, METH_O, "start(now) -> actions"},
    {"on_packet", (PyCFunction)Core_on_packet, METH_VARARGS, "on_packet(data, now) -> actions"},
    {"on_timer", (PyCFunction)Core_on_timer, METH_O, "on_timer(now) -> actions"},
    {"resume", (PyCFunction)Core_resume, METH_O, "resume(now) -> actions"},
    {"next_deadline", (PyCFunction)Core_next_deadline, METH_NOARGS, "the next deadline or None"},
    {"outstanding", (PyCFunction)Core_outstanding, METH_NOARGS, "slot descriptions"},
    {"stats", (PyCFunction)Core_stats, METH_NOARGS, "the counters, in CallStats order"},
    {"run", (PyCFunction)Core_run, METH_VARARGS,
     "run(fd, mode, budget) -> (ended, end action or None, io counters): the native driver"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Core_getset[] = {
    {"state", (getter)Core_get_state, NULL, "0 new, 1 running, 2 done, 3 failed, 4 broken", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "p4reduce.host._engine_c.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The protocol core of one call (see host/protocol/native.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};

static PyMethodDef module_methods[] = {
    {"use_avx2", use_avx2, METH_O,
     "use_avx2(on) -> bool: the AVX2 copy of the lane loops when on and the CPU has it"},
    {"quantize_lanes", py_quantize_lanes, METH_VARARGS,
     "quantize_lanes(x, exponent, n, own, q_mode, q_table, regular_from) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_engine_c", "The native protocol core of one call.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__engine_c(void)
{
    if (PyType_Ready(&CoreType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    PyObject *r = use_avx2(m, Py_True); /* picks the copy of the lane loops */
    if (!r) {
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(r);
    Py_INCREF(&CoreType);
    if (PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
