/* The queues of simple_switch's packet path (p4r_path.c) and the PRE's clone sessions.
 *
 * V1Switch.process (switch/interp/switch.py) runs one arriving packet and everything it
 * spawns from two FIFOs: an ingress queue (the packet, then its resubmits and recirculations)
 * and an egress queue (unicast, multicast copies, I2E and E2E clones); an ingress job always
 * runs before the next egress job, and at most P4R_MAX_PASSES jobs run. Here:
 *
 * - a job's slot array (the interpreter's S list) lives in a pool of arrays owned by the
 *   engine, with a reference count: the copies of one replication (multicast, a clone
 *   session's targets) share their base array until they run, and a copy that runs while
 *   another still shares it works on a private copy (the interpreter copies S per copy when
 *   it enqueues; the base is never written after the replication, so copying when the job
 *   runs gives the same slots);
 * - an egress job carries the packet context it continues (data, parser position, packet
 *   length register, truncate, meter colour), a job's bytes being the caller's frame or a
 *   recirculated packet's deparsed bytes, kept until the packet's processing ends;
 * - an egress job that could never run (more jobs ahead of it than passes left) is not
 *   queued, which bounds the queue at P4R_MAX_PASSES without changing what runs.
 *
 * Everything here belongs to the engine and is touched only under its mutex; the arrays grow
 * to the largest packet seen and are reused, so a packet allocates nothing in the steady
 * state (a recirculation allocates its bytes). */

#define P4R_MAX_PASSES 1000u /* V1Switch.MAX_PASSES: resubmit/recirculate loops are cut here */
#define P4R_NO_S UINT32_MAX

typedef struct p4r_ijob { /* an ingress job: V1Switch's _Ingress */
    uint32_t port;        /* the port the packet object arrived on (kept across passes) */
    uint32_t len;
    const uint8_t *data;
    uint32_t s; /* its slot array, metadata already set up for this pass */
} p4r_ijob;

typedef struct p4r_ejob { /* an egress job: V1Switch's _Egress and its PacketContext */
    uint32_t port, rid;
    uint32_t s;    /* its slot array (shared by the copies of one replication) */
    uint32_t copy; /* 1: a replica (egress_rid = rid); 0: the unicast packet itself */
    const uint8_t *data;
    uint32_t len, pos;
    int64_t length;
    uint64_t truncate, color;
    uint64_t cut; /* the clone session's truncation; 0: none */
} p4r_ejob;

typedef struct p4r_session { /* a mirroring session, its group resolved into replicas */
    uint64_t id, cut;
    uint32_t has_port, port, n;
    uint32_t *rep; /* n (port, rid) pairs: the group's replicas, in the PRE's order */
} p4r_session;

typedef struct p4r_passes {
    uint64_t **s;   /* slot arrays */
    uint32_t *ref;  /* references to each (jobs, plus the pass that made it) */
    uint32_t *free; /* indexes of the unreferenced ones */
    uint32_t ns, nfree, cap;
    p4r_ijob *iq;
    uint32_t ihead, itail, icap;
    p4r_ejob *eq;
    uint32_t ehead, etail, ecap;
    uint8_t **bufs; /* recirculated packets' bytes, freed when the packet's processing ends */
    uint32_t nbufs, bcap;
    uint32_t skipped; /* egress jobs not queued because they could never run */
    p4r_session *sess; /* sorted by id */
    uint32_t nsess;
} p4r_passes;

static void p4r_sessions_free(p4r_session *ss, uint32_t n) {
    for (uint32_t i = 0; i < n; i++) free(ss[i].rep);
    free(ss);
}

static void p4r_passes_free(p4r_passes *Q) {
    if (!Q) return;
    for (uint32_t i = 0; i < Q->ns; i++) free(Q->s[i]);
    for (uint32_t i = 0; i < Q->nbufs; i++) free(Q->bufs[i]);
    free(Q->s);
    free(Q->ref);
    free(Q->free);
    free(Q->iq);
    free(Q->eq);
    free(Q->bufs);
    p4r_sessions_free(Q->sess, Q->nsess);
    free(Q);
}

/* A free slot array with one reference, or P4R_NO_S when memory ran out. */
static uint32_t p4r_s_new(p4r_passes *Q) {
    if (!Q->nfree) {
        if (Q->ns == Q->cap) {
            uint32_t cap = Q->cap ? Q->cap * 2 : 8;
            uint64_t **s = realloc(Q->s, cap * sizeof *s);
            if (s) Q->s = s;
            uint32_t *ref = s ? realloc(Q->ref, cap * sizeof *ref) : NULL;
            if (ref) Q->ref = ref;
            uint32_t *fr = ref ? realloc(Q->free, cap * sizeof *fr) : NULL;
            if (!fr) return P4R_NO_S;
            Q->free = fr;
            Q->cap = cap;
        }
        uint64_t *a = malloc(sizeof(uint64_t) * (P4R_NSLOTS + 1));
        if (!a) return P4R_NO_S;
        Q->s[Q->ns] = a;
        Q->free[Q->nfree++] = Q->ns++;
    }
    uint32_t i = Q->free[--Q->nfree];
    Q->ref[i] = 1;
    return i;
}

static void p4r_s_release(p4r_passes *Q, uint32_t i) {
    if (--Q->ref[i] == 0) Q->free[Q->nfree++] = i;
}

static int p4r_push_ingress(p4r_passes *Q, const p4r_ijob *job) {
    if (Q->itail == Q->icap) {
        if (Q->ihead) { /* the consumed head makes room */
            memmove(Q->iq, Q->iq + Q->ihead, (Q->itail - Q->ihead) * sizeof *Q->iq);
            Q->itail -= Q->ihead;
            Q->ihead = 0;
        } else {
            uint32_t cap = Q->icap ? Q->icap * 2 : 4;
            p4r_ijob *q = realloc(Q->iq, cap * sizeof *q);
            if (!q) return -1;
            Q->iq = q;
            Q->icap = cap;
        }
    }
    Q->iq[Q->itail++] = *job;
    return 0;
}

/* Queue an egress job that holds a reference to job->s; passes: jobs run so far (the current
 * one included). A job with P4R_MAX_PASSES - passes jobs ahead of it would never run. */
static int p4r_push_egress(p4r_passes *Q, const p4r_ejob *job, uint32_t passes) {
    if (passes + (Q->etail - Q->ehead) >= P4R_MAX_PASSES) {
        Q->skipped++;
        return 0;
    }
    if (Q->etail == Q->ecap) {
        if (Q->ehead) {
            memmove(Q->eq, Q->eq + Q->ehead, (Q->etail - Q->ehead) * sizeof *Q->eq);
            Q->etail -= Q->ehead;
            Q->ehead = 0;
        } else {
            uint32_t cap = Q->ecap ? Q->ecap * 2 : 16;
            p4r_ejob *q = realloc(Q->eq, cap * sizeof *q);
            if (!q) return -1;
            Q->eq = q;
            Q->ecap = cap;
        }
    }
    Q->eq[Q->etail++] = *job;
    Q->ref[job->s]++;
    return 0;
}

/* Keep bytes (a recirculated packet) until the packet's processing ends; NULL: no memory. */
static uint8_t *p4r_keep_bytes(p4r_passes *Q, const uint8_t *a, uint32_t na, const uint8_t *b,
                               uint32_t nb) {
    if (Q->nbufs == Q->bcap) {
        uint32_t cap = Q->bcap ? Q->bcap * 2 : 4;
        uint8_t **bufs = realloc(Q->bufs, cap * sizeof *bufs);
        if (!bufs) return NULL;
        Q->bufs = bufs;
        Q->bcap = cap;
    }
    uint8_t *buf = malloc((size_t)na + nb + 1);
    if (!buf) return NULL;
    memcpy(buf, a, na);
    if (nb) memcpy(buf + na, b, nb);
    Q->bufs[Q->nbufs++] = buf;
    return buf;
}

/* The end of one arriving packet's processing (or its fault): every queue empty, every slot
 * array free, the recirculated bytes released. */
static void p4r_passes_reset(p4r_passes *Q) {
    Q->ihead = Q->itail = Q->ehead = Q->etail = 0;
    Q->skipped = 0;
    if (Q->nfree != Q->ns) {
        Q->nfree = 0;
        for (uint32_t i = 0; i < Q->ns; i++) Q->free[Q->nfree++] = i;
    }
    for (uint32_t i = 0; i < Q->nbufs; i++) free(Q->bufs[i]);
    Q->nbufs = 0;
}

static const p4r_session *p4r_session_find(const p4r_passes *Q, uint64_t id) {
    uint32_t lo = 0, hi = Q->nsess;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (Q->sess[mid].id == id) return &Q->sess[mid];
        if (Q->sess[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* Replace every clone session (mirror.py pushes them all after each PRE change). flat holds,
 * per session in increasing id order: id, truncation, has_port, port, n, then n (port, rid)
 * pairs (its group's replicas). Returns 0, or -1 (no memory, or words malformed: nothing
 * changed). */
int p4r_sessions_set(p4r_engine *E, uint32_t n, const uint64_t *flat, uint64_t nwords) {
    p4r_session *ss = calloc(n + 1, sizeof *ss);
    if (!ss) return -1;
    uint64_t w = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (w + 5 > nwords) goto bad;
        p4r_session *s = &ss[i];
        s->id = flat[w];
        s->cut = flat[w + 1];
        s->has_port = (uint32_t)flat[w + 2];
        s->port = (uint32_t)flat[w + 3];
        uint64_t reps = flat[w + 4];
        w += 5;
        if (reps > (nwords - w) / 2 || (i && s->id <= ss[i - 1].id)) goto bad;
        s->n = (uint32_t)reps;
        s->rep = malloc(sizeof(uint32_t) * 2 * (reps + 1));
        if (!s->rep) goto bad;
        for (uint64_t j = 0; j < 2 * reps; j++) s->rep[j] = (uint32_t)flat[w + j];
        w += 2 * reps;
    }
    pthread_mutex_lock(&E->mu);
    p4r_session *old = E->q->sess;
    uint32_t nold = E->q->nsess;
    E->q->sess = ss;
    E->q->nsess = n;
    pthread_mutex_unlock(&E->mu);
    p4r_sessions_free(old, nold);
    return 0;
bad:
    p4r_sessions_free(ss, n);
    return -1;
}
