/* The packet path of simple_switch around the generated stages, as V1Switch.process
 * (switch/interp/switch.py) runs it: one arriving packet and everything it spawns (I2E and
 * E2E clones through the PRE's mirroring sessions, resubmits, multicast copies,
 * recirculations) from an ingress and an egress queue (p4r_queues.c), an ingress job before
 * the next egress job, at most P4R_MAX_PASSES jobs. End of ingress, in order: I2E clone,
 * digests, resubmit, multicast, drop, unicast. End of egress: E2E clone, drop, deparse,
 * recirculate, send (cut to the smallest truncation asked for). docs/interpreter.md,
 * "Semantics", and docs/native.md, "The packet path", say why each step is where it is. */

typedef struct p4r_sink {
    p4r_emit_fn emit;
    void *ctx;
} p4r_sink;

static void p4r_pkt_init(p4r_pkt *P, p4r_engine *E, const uint8_t *data, uint32_t len,
                         uint64_t now) {
    P->E = E;
    P->data = data;
    P->len = len;
    P->pos = 0;
    P->length = len;
    P->perr = 0;
    P->now = now;
    P->color = 0;
    P->truncate = UINT64_MAX;
    P->clone.set = P->resubmit.set = P->recirc.set = 0;
    P->outlen = 0;
}

/* V1Switch.parse: the parser (a parser error sets parser_error and ends parsing), then the
 * verify control. 0, or -1 when the packet faulted. */
static int p4r_parse(uint64_t *S, p4r_pkt *P) {
    int rc = P4R_STAGE_parser(S, P);
    if (rc == P4R_PARSER_ERR) {
        if (P->perr >= 0) S[P4R_STD_parser_error] = (uint64_t)P->perr;
    } else if (rc != P4R_OK) {
        return -1;
    }
    rc = P4R_STAGE_verify(S, P);
    return rc == P4R_OK || rc == P4R_EXIT ? 0 : -1;
}

/* V1Switch.preserved, written into dst: the request's explicit slots, then its field list's,
 * read from src (the state at the end of the control that asked). */
static void p4r_preserve(uint64_t *dst, const uint64_t *src, const p4r_req *r) {
    const uint32_t *sl;
    uint32_t n = p4r_xfl(r->xfl, &sl);
    for (uint32_t i = 0; i < n; i++) dst[sl[i]] = src[sl[i]];
    if (r->has_fl) {
        n = p4r_field_list(r->fl, &sl);
        for (uint32_t i = 0; i < n; i++) dst[sl[i]] = src[sl[i]];
    }
}

static void p4r_reset_metadata(uint64_t *S) {
    for (uint32_t i = 0; i < P4R_NMETA; i++) S[P4R_META[i]] = P4R_INIT[P4R_META[i]];
}

/* An egress job continuing packet context P, on slot array s. */
static int p4r_enqueue(p4r_passes *Q, uint32_t passes, uint32_t port, uint32_t rid,
                       uint32_t copy, uint32_t s, const p4r_pkt *P, uint64_t color,
                       uint64_t cut) {
    p4r_ejob job = {port, rid, s, copy, P->data, P->len, P->pos, P->length, P->truncate,
                    color, cut};
    return p4r_push_egress(Q, &job, passes);
}

/* V1Switch.replicate of a clone: one copy of slot array s and context P per target of the
 * session (its group's replicas, then its port with the last replica's rid, else rid). */
static int p4r_clone_copies(p4r_passes *Q, uint32_t passes, const p4r_session *ss, uint32_t s,
                            const p4r_pkt *P, uint64_t rid) {
    for (uint32_t i = 0; i < ss->n; i++)
        if (p4r_enqueue(Q, passes, ss->rep[2 * i], ss->rep[2 * i + 1], 1, s, P, 0, ss->cut) < 0)
            return -1;
    if (ss->has_port) {
        uint32_t r = ss->n ? ss->rep[2 * ss->n - 1] : (uint32_t)rid;
        if (p4r_enqueue(Q, passes, ss->port, r, 1, s, P, 0, ss->cut) < 0) return -1;
    }
    return 0;
}

/* One ingress pass (V1Switch.run_ingress); its slot array's reference is released by the
 * caller. 0, or -1 when the packet faulted. */
static int p4r_run_ingress(p4r_engine *E, const p4r_ijob *job, uint32_t passes, uint64_t now) {
    p4r_passes *Q = E->q;
    uint64_t *S = Q->s[job->s];
    p4r_pkt P;
    int rc;
    E->ev_egress = 0;
    p4r_pkt_init(&P, E, job->data, job->len, now);
    if (p4r_parse(S, &P) < 0) return -1;
    rc = P4R_STAGE_ingress(S, &P);
    if (rc != P4R_OK && rc != P4R_EXIT) return -1;
    /* 1. I2E clone: the original packet parsed again (the parser may branch on the ingress
     * port), then metadata reset but for the preserved fields */
    const p4r_session *ss;
    if (P.clone.set && P.clone.kind == 0 && (ss = p4r_session_find(Q, P.clone.session))) {
        uint32_t s2 = p4r_s_new(Q);
        if (s2 == P4R_NO_S) return -1;
        uint64_t *S2 = Q->s[s2];
        memcpy(S2, P4R_INIT, sizeof(uint64_t) * P4R_NSLOTS);
        S2[P4R_STD_ingress_port] = job->port & P4R_MASK_ingress_port;
        p4r_pkt P2;
        p4r_pkt_init(&P2, E, job->data, job->len, now);
        if (p4r_parse(S2, &P2) < 0) return -1;
        p4r_reset_metadata(S2);
        p4r_preserve(S2, S, &P.clone);
        S2[P4R_STD_instance_type] = 1;
        P2.length = job->len;
        if (p4r_clone_copies(Q, passes, ss, s2, &P2, 0) < 0) return -1;
        p4r_s_release(Q, s2);
    }
#ifdef P4R_HAS_DIGESTS
    p4r_event(E, P4R_EV_COMMIT, 0, 0, NULL); /* 2. the end-of-ingress digest delivery */
#endif
    /* 3. resubmit: the original packet, metadata reset but for the preserved fields */
    if (P.resubmit.set) {
        uint32_t s2 = p4r_s_new(Q);
        if (s2 == P4R_NO_S) return -1;
        uint64_t *S2 = Q->s[s2];
        memcpy(S2, P4R_INIT, sizeof(uint64_t) * P4R_NSLOTS);
        p4r_preserve(S2, S, &P.resubmit);
        S2[P4R_STD_instance_type] = 6;
        S2[P4R_STD_packet_length] = job->len & P4R_MASK_packet_length;
        p4r_ijob next = {job->port, job->len, job->data, s2};
        return p4r_push_ingress(Q, &next);
    }
    /* 4. multicast: copies of the whole state, the original is discarded */
    uint64_t grp = S[P4R_STD_mcast_grp];
    if (grp) {
        S[P4R_STD_instance_type] = 5;
        const p4r_group *G = grp < P4R_MAX_GROUP ? E->groups[grp] : NULL;
        for (uint32_t i = 0; G && i < G->n; i++)
            if (p4r_enqueue(Q, passes, G->port[i], G->rid[i], 1, job->s, &P, 0, 0) < 0)
                return -1;
        return 0;
    }
    /* 5. drop, 6. unicast (the same context goes on: its meter colour too) */
    uint64_t spec = S[P4R_STD_egress_spec];
    if (spec == P4R_DROP_PORT) return 0;
    S[P4R_STD_instance_type] = 0;
    return p4r_enqueue(Q, passes, (uint32_t)spec, 0, 0, job->s, &P, P.color, 0);
}

/* One egress pass (V1Switch.run_egress); releases the job's slot array. 0, or -1 when the
 * packet faulted. */
static int p4r_run_egress(p4r_engine *E, const p4r_ejob *job, uint32_t passes, uint64_t now,
                          const p4r_sink *out) {
    p4r_passes *Q = E->q;
    uint32_t s = job->s;
    int rc;
    if (Q->ref[s] > 1) { /* another copy still shares the slots: work on a private copy */
        uint32_t s2 = p4r_s_new(Q);
        if (s2 == P4R_NO_S) return -1;
        memcpy(Q->s[s2], Q->s[s], sizeof(uint64_t) * P4R_NSLOTS);
        p4r_s_release(Q, s);
        s = s2;
    }
    uint64_t *S = Q->s[s];
    if (job->copy) S[P4R_STD_egress_rid] = job->rid & P4R_MASK_egress_rid;
#ifdef P4R_STD_enq_timestamp
    S[P4R_STD_enq_timestamp] = now & 0xFFFFFFFFu;
#endif
    p4r_pkt P;
    p4r_pkt_init(&P, E, job->data, job->len, now);
    P.pos = job->pos;
    P.length = job->length;
    P.truncate = job->truncate;
    P.color = job->color;
    E->ev_egress = 1;
    S[P4R_STD_egress_port] = job->port;
    S[P4R_STD_egress_spec] = 0; /* simple_switch writes 512, which 9 bits hold as 0 */
    S[P4R_STD_packet_length] = (uint64_t)P.length & P4R_MASK_packet_length;
#ifdef P4R_STD_egress_global_timestamp
    S[P4R_STD_egress_global_timestamp] = now & P4R_MASK_egress_global_timestamp;
#endif
    rc = P4R_STAGE_egress(S, &P);
    if (rc != P4R_OK && rc != P4R_EXIT) return -1;
    /* 1. E2E clone: the end-of-egress state, metadata reset but for the preserved fields */
    const p4r_session *ss;
    if (P.clone.set && P.clone.kind == 1 && (ss = p4r_session_find(Q, P.clone.session))) {
        uint32_t s2 = p4r_s_new(Q);
        if (s2 == P4R_NO_S) return -1;
        uint64_t *S2 = Q->s[s2];
        memcpy(S2, S, sizeof(uint64_t) * P4R_NSLOTS);
        p4r_reset_metadata(S2);
        p4r_preserve(S2, S, &P.clone);
        S2[P4R_STD_instance_type] = 2;
        if (p4r_clone_copies(Q, passes, ss, s2, &P, S[P4R_STD_egress_rid]) < 0) return -1;
        p4r_s_release(Q, s2);
    }
    /* 2. drop */
    if (S[P4R_STD_egress_spec] == P4R_DROP_PORT) {
        p4r_s_release(Q, s);
        return 0;
    }
    /* 3. deparse (the compute-checksum control first) */
    P.outlen = 0;
    memset(P.out, 0, sizeof P.out);
    rc = P4R_STAGE_compute(S, &P);
    if (rc == P4R_OK) rc = P4R_STAGE_deparser(S, &P);
    if (rc != P4R_OK) return -1;
    uint32_t rest = P.len - P.pos;
    /* 4. recirculate: the deparsed packet back to ingress, metadata reset but for the
     * preserved fields (read after the deparser) */
    if (P.recirc.set) {
        uint8_t *bytes = p4r_keep_bytes(Q, P.out, P.outlen, P.data + P.pos, rest);
        uint32_t s2 = bytes ? p4r_s_new(Q) : P4R_NO_S;
        if (s2 == P4R_NO_S) return -1;
        uint64_t *S2 = Q->s[s2];
        memcpy(S2, P4R_INIT, sizeof(uint64_t) * P4R_NSLOTS);
        p4r_preserve(S2, S, &P.recirc);
        S2[P4R_STD_instance_type] = 4;
        S2[P4R_STD_packet_length] = (uint64_t)(P.outlen + rest) & P4R_MASK_packet_length;
        p4r_s_release(Q, s);
        p4r_ijob next = {job->port, P.outlen + rest, bytes, s2};
        return p4r_push_ingress(Q, &next);
    }
    p4r_s_release(Q, s);
    /* 5. send, cut to the smallest of truncate(n) and the clone session's length (0: none) */
    uint32_t total = P.outlen + rest;
    uint64_t cut = P.truncate != UINT64_MAX ? P.truncate : 0;
    if (job->cut) cut = cut && cut < job->cut ? cut : job->cut;
    if (cut && cut < total) {
        if (cut <= P.outlen) {
            P.outlen = (uint32_t)cut;
            rest = 0;
        } else {
            rest = (uint32_t)cut - P.outlen;
        }
        total = (uint32_t)cut;
    }
    if (rest == 0) { /* the deparsed headers are the whole frame: no copy */
        out->emit(out->ctx, job->port, P.out, total);
        return 0;
    }
    uint8_t stackbuf[4096 + P4R_OUT_MAX];
    uint8_t *frame = total <= sizeof stackbuf ? stackbuf : malloc(total);
    if (!frame) return -1;
    memcpy(frame, P.out, P.outlen);
    memcpy(frame + P.outlen, P.data + P.pos, rest);
    out->emit(out->ctx, job->port, frame, total);
    if (frame != stackbuf) free(frame);
    return 0;
}

/* One packet and everything it spawns (V1Switch.process), the engine mutex held by the
 * caller. 0, or -1 when the packet faulted (nothing more of it runs). */
static int p4r_run_locked(p4r_engine *E, uint32_t in_port, const uint8_t *data, uint32_t len,
                          uint64_t now, const p4r_sink *out) {
    p4r_passes *Q = E->q;
    uint32_t s = p4r_s_new(Q);
    if (s == P4R_NO_S) {
        E->faults++;
        return -1;
    }
    uint64_t *S = Q->s[s];
    memcpy(S, P4R_INIT, sizeof(uint64_t) * P4R_NSLOTS);
    S[P4R_STD_ingress_port] = in_port & P4R_MASK_ingress_port;
    S[P4R_STD_packet_length] = len & P4R_MASK_packet_length;
    S[P4R_STD_instance_type] = 0;
#ifdef P4R_STD_ingress_global_timestamp
    S[P4R_STD_ingress_global_timestamp] = now & P4R_MASK_ingress_global_timestamp;
#endif
    p4r_ijob first = {in_port, len, data, s};
    int rc = p4r_push_ingress(Q, &first);
    uint32_t passes = 0;
    while (rc == 0 && (Q->ihead < Q->itail || Q->ehead < Q->etail)) {
        if (++passes > P4R_MAX_PASSES) break;
        if (Q->ihead < Q->itail) {
            p4r_ijob job = Q->iq[Q->ihead++];
            rc = p4r_run_ingress(E, &job, passes, now);
            if (rc == 0) p4r_s_release(Q, job.s);
        } else {
            p4r_ejob job = Q->eq[Q->ehead++];
            rc = p4r_run_egress(E, &job, passes, now, out);
        }
    }
    if (rc == 0 && passes >= P4R_MAX_PASSES &&
        (Q->ihead < Q->itail || Q->ehead < Q->etail || Q->skipped)) {
        /* V1Switch's warning: the packet looped more than P4R_MAX_PASSES times */
        const uint64_t v[2] = {in_port, P4R_MAX_PASSES};
        p4r_event(E, P4R_EV_LOOP, 0, 2, v);
    }
    p4r_passes_reset(Q);
    if (rc < 0) {
        E->faults++;
        return -1;
    }
    return 0;
}

static uint64_t p4r_now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ------------------------------------------------------------------ entry points */

/* The p4r_handler_fn of p4r_handler.h: ctx is the engine; timestamps are microseconds of
 * CLOCK_MONOTONIC since the engine was made. */
int p4r_handle(void *ctx, uint32_t in_port, const uint8_t *frame, uint32_t len,
               p4r_emit_fn emit, void *emit_ctx) {
    p4r_engine *E = ctx;
    p4r_sink out = {emit, emit_ctx};
    uint64_t now = p4r_now_us() - E->epoch_us;
    pthread_mutex_lock(&E->mu);
    int rc = p4r_run_locked(E, in_port, frame, len, now, &out);
    pthread_mutex_unlock(&E->mu);
    return rc;
}

p4r_handler_fn p4r_handler_address(void) { return p4r_handle; }

/* Many packets under one lock, at time now: packet i arrived on ports[i] with frames[i]
 * (lens[i] bytes); every frame that leaves goes to emit, in order. Returns n, or -1 - i when
 * packet i faulted (the packets before it ran, the ones after it did not). The in-process
 * batch path (switch/native/_batch.c) calls it with the GIL released: no allocation per
 * packet and no copy of the input (the frames are read where Python keeps them). */
int64_t p4r_run_vec(p4r_engine *E, uint32_t n, const uint32_t *ports,
                    const uint8_t *const *frames, const uint32_t *lens, uint64_t now,
                    p4r_emit_fn emit, void *emit_ctx) {
    p4r_sink out = {emit, emit_ctx};
    int64_t result = n;
    pthread_mutex_lock(&E->mu);
    for (uint32_t i = 0; i < n; i++) {
        if (p4r_run_locked(E, ports[i], frames[i], lens[i], now, &out) < 0) {
            result = -1 - (int64_t)i;
            break;
        }
    }
    pthread_mutex_unlock(&E->mu);
    return result;
}

/* Frames collected for a Python caller: [u32 port][u32 len][bytes] records, in the caller's
 * buffer, and once that is full in a growing one of ours (a packet may send any number of
 * clones and copies). */
typedef struct p4r_collect {
    uint8_t *buf, *own;
    uint64_t cap, used;
    uint32_t count;
    int oom;
} p4r_collect;

static void p4r_collect_emit(void *ctx, uint32_t port, const uint8_t *frame, uint32_t len) {
    p4r_collect *c = ctx;
    uint64_t need = c->used + 8 + (uint64_t)len;
    if (c->oom) return;
    if (need > c->cap) {
        uint64_t cap = c->cap ? c->cap * 2 : 4096;
        while (cap < need) cap *= 2;
        uint8_t *nb = cap <= UINT32_MAX ? malloc(cap) : NULL;
        if (!nb) {
            c->oom = 1;
            return;
        }
        memcpy(nb, c->buf, c->used);
        free(c->own);
        c->buf = c->own = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->used, &port, 4);
    memcpy(c->buf + c->used + 4, &len, 4);
    memcpy(c->buf + c->used + 8, frame, len);
    c->used = need;
    c->count++;
}

void p4r_buf_free(void *buf) { free(buf); }

/* Runs n packets (ports[i], data + offs[i], lens[i]) at time now; writes the frames that left
 * into out (records as above; when they do not fit in cap bytes, all of them into a buffer
 * returned in *spill, which the caller frees with p4r_buf_free) and their total size into
 * *used. Returns the number of frames, -1 - i when packet i faulted (the packets before it
 * ran), or -2^30 when the frames did not fit in memory. */
int64_t p4r_process_batch(p4r_engine *E, uint32_t n, const uint32_t *ports, const uint8_t *data,
                          const uint32_t *offs, const uint32_t *lens, uint64_t now, uint8_t *out,
                          uint32_t cap, uint32_t *used, uint8_t **spill) {
    p4r_collect c = {out, NULL, cap, 0, 0, 0};
    p4r_sink sink = {p4r_collect_emit, &c};
    int64_t result = 0;
    pthread_mutex_lock(&E->mu);
    for (uint32_t i = 0; i < n; i++) {
        if (p4r_run_locked(E, ports[i], data + offs[i], lens[i], now, &sink) < 0) {
            result = -1 - (int64_t)i;
            break;
        }
    }
    pthread_mutex_unlock(&E->mu);
    if (c.oom && result >= 0) result = -(INT64_C(1) << 30);
    *used = (uint32_t)c.used;
    *spill = c.own;
    return result < 0 ? result : (int64_t)c.count;
}

p4r_engine *p4r_new(void) {
    p4r_engine *E = calloc(1, sizeof *E);
    if (!E) return NULL;
    pthread_mutex_init(&E->mu, NULL);
    E->mti = 625;
    E->epoch_us = p4r_now_us();
    E->q = calloc(1, sizeof *E->q);
    if (!E->q || p4r_alloc_state(E) != 0) {
        p4r_passes_free(E->q);
        p4r_free_state(E);
        free(E);
        return NULL;
    }
    p4r_init_tables(E);
    return E;
}

void p4r_free(p4r_engine *E) {
    if (!E) return;
    for (uint32_t t = 0; t < P4R_NTABLES; t++) {
        free(E->tables[t].e);
        free(E->tables[t].hash);
        for (uint32_t g = 0; g < E->tables[t].ngroups; g++) free(E->tables[t].groups[g].hash);
        free(E->tables[t].groups);
    }
    for (uint32_t g = 0; g < P4R_MAX_GROUP; g++)
        if (E->groups[g]) {
            free(E->groups[g]->port);
            free(E->groups[g]->rid);
            free(E->groups[g]);
        }
    p4r_free_state(E);
    p4r_passes_free(E->q);
    pthread_mutex_destroy(&E->mu);
    free(E);
}

uint64_t p4r_faults(p4r_engine *E) { return E->faults; }

/* Registers and counters: element access for the control plane (under the mutex). A
 * register in a bank (cprogram.bank_registers) has its cells P4R_REG_STRIDE[r] words apart. */
uint64_t p4r_reg_get(p4r_engine *E, uint32_t r, uint32_t i) {
    pthread_mutex_lock(&E->mu);
    uint64_t v = E->reg[r][(size_t)i * P4R_REG_STRIDE[r]];
    pthread_mutex_unlock(&E->mu);
    return v;
}

void p4r_reg_set(p4r_engine *E, uint32_t r, uint32_t i, uint64_t v) {
    pthread_mutex_lock(&E->mu);
    E->reg[r][(size_t)i * P4R_REG_STRIDE[r]] = v;
    pthread_mutex_unlock(&E->mu);
}

/* n words of register r from cell 0 (a wide register, never banked: n = cells x words) */
void p4r_reg_bulk(p4r_engine *E, uint32_t r, uint32_t n, uint64_t *dst, const uint64_t *src) {
    size_t s = P4R_REG_STRIDE[r];
    uint64_t *cells = E->reg[r];
    pthread_mutex_lock(&E->mu);
    if (src)
        for (size_t i = 0; i < n; i++) cells[i * s] = src[i];
    if (dst)
        for (size_t i = 0; i < n; i++) dst[i] = cells[i * s];
    pthread_mutex_unlock(&E->mu);
}

void p4r_ctr_bulk(p4r_engine *E, uint32_t c, uint32_t n, uint64_t *pk, uint64_t *by,
                  const uint64_t *spk, const uint64_t *sby) {
    pthread_mutex_lock(&E->mu);
    if (spk) memcpy(E->ctr_pk[c], spk, n * sizeof(uint64_t));
    if (sby) memcpy(E->ctr_by[c], sby, n * sizeof(uint64_t));
    if (pk) memcpy(pk, E->ctr_pk[c], n * sizeof(uint64_t));
    if (by) memcpy(by, E->ctr_by[c], n * sizeof(uint64_t));
    pthread_mutex_unlock(&E->mu);
}

void p4r_ctr_get(p4r_engine *E, uint32_t c, uint32_t i, uint64_t *pk, uint64_t *by) {
    pthread_mutex_lock(&E->mu);
    *pk = E->ctr_pk[c][i];
    *by = E->ctr_by[c][i];
    pthread_mutex_unlock(&E->mu);
}

void p4r_ctr_set(p4r_engine *E, uint32_t c, uint32_t i, uint64_t pk, uint64_t by) {
    pthread_mutex_lock(&E->mu);
    E->ctr_pk[c][i] = pk;
    E->ctr_by[c][i] = by;
    pthread_mutex_unlock(&E->mu);
}

/* One packet (the common in-process call): as p4r_process_batch with n = 1. */
int64_t p4r_process_one(p4r_engine *E, uint32_t port, const uint8_t *data, uint32_t len,
                        uint64_t now, uint8_t *out, uint32_t cap, uint32_t *used,
                        uint8_t **spill) {
    uint32_t off = 0;
    return p4r_process_batch(E, 1, &port, data, &off, &len, now, out, cap, used, spill);
}
