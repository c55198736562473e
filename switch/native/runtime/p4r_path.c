/* The packet path of simple_switch around the generated stages; it mirrors
 * switch/interp/switch.py (V1Switch.process) for the programs the generator accepts: no
 * clone, resubmit, recirculate, digest or truncate (those are refused at load for now). */

typedef struct p4r_sink {
    p4r_emit_fn emit;
    void *ctx;
} p4r_sink;

/* 0, or -1 when the packet faulted (the interpreter's exception: nothing more of it runs) */
static int p4r_run_egress(p4r_engine *E, uint64_t *S, p4r_pkt *P, uint32_t port,
                          const p4r_sink *out) {
    int rc;
    E->ev_egress = 1;
    S[P4R_STD_egress_port] = port;
    S[P4R_STD_egress_spec] = 0; /* simple_switch writes 512, which 9 bits hold as 0 */
    S[P4R_STD_packet_length] = (uint64_t)P->length & P4R_MASK_packet_length;
#ifdef P4R_STD_egress_global_timestamp
    S[P4R_STD_egress_global_timestamp] = P->now & P4R_MASK_egress_global_timestamp;
#endif
    rc = P4R_STAGE_egress(S, P);
    if (rc != P4R_OK && rc != P4R_EXIT) {
        E->faults++;
        return -1;
    }
    if (S[P4R_STD_egress_spec] == P4R_DROP_PORT) return 0;
    P->outlen = 0;
    memset(P->out, 0, sizeof P->out);
    rc = P4R_STAGE_compute(S, P);
    if (rc == P4R_OK) rc = P4R_STAGE_deparser(S, P);
    if (rc != P4R_OK) {
        E->faults++;
        return -1;
    }
    uint32_t rest = P->len - P->pos;
    uint32_t total = P->outlen + rest;
    /* truncate(n): the deparsed packet cut to n bytes as it leaves (0: not cut) */
    uint64_t cut = P->truncate != UINT64_MAX ? P->truncate : 0;
    if (cut && cut < total) {
        if (cut <= P->outlen) {
            P->outlen = (uint32_t)cut;
            rest = 0;
        } else {
            rest = (uint32_t)cut - P->outlen;
        }
        total = (uint32_t)cut;
    }
    if (rest == 0) { /* the deparsed headers are the whole frame: no copy */
        out->emit(out->ctx, port, P->out, total);
        return 0;
    }
    uint8_t stackbuf[4096 + P4R_OUT_MAX];
    uint8_t *frame = total <= sizeof stackbuf ? stackbuf : malloc(total);
    if (!frame) {
        E->faults++;
        return -1;
    }
    memcpy(frame, P->out, P->outlen);
    if (rest) memcpy(frame + P->outlen, P->data + P->pos, rest);
    out->emit(out->ctx, port, frame, total);
    if (frame != stackbuf) free(frame);
    return 0;
}

/* One packet and its copies, the engine mutex held by the caller. */
static int p4r_run_locked(p4r_engine *E, uint32_t in_port, const uint8_t *data, uint32_t len,
                          uint64_t now, const p4r_sink *out) {
    uint64_t S[P4R_NSLOTS + 1];
    p4r_pkt P;
    int rc;
    memcpy(S, P4R_INIT, sizeof(uint64_t) * P4R_NSLOTS);
    S[P4R_STD_ingress_port] = in_port & P4R_MASK_ingress_port;
    S[P4R_STD_packet_length] = len & P4R_MASK_packet_length;
    S[P4R_STD_instance_type] = 0;
#ifdef P4R_STD_ingress_global_timestamp
    S[P4R_STD_ingress_global_timestamp] = now & P4R_MASK_ingress_global_timestamp;
#endif
    P.E = E;
    P.data = data;
    P.len = len;
    P.pos = 0;
    P.length = len;
    P.perr = 0;
    P.now = now;
    P.color = 0;
    E->ev_egress = 0;
    P.truncate = UINT64_MAX;
    P.outlen = 0;
    rc = P4R_STAGE_parser(S, &P);
    if (rc == P4R_PARSER_ERR) {
        if (P.perr >= 0) S[P4R_STD_parser_error] = (uint64_t)P.perr;
    } else if (rc != P4R_OK) {
        E->faults++;
        return -1;
    }
    rc = P4R_STAGE_verify(S, &P);
    if (rc != P4R_OK && rc != P4R_EXIT) {
        E->faults++;
        return -1;
    }
    rc = P4R_STAGE_ingress(S, &P);
    if (rc != P4R_OK && rc != P4R_EXIT) {
        E->faults++;
        return -1;
    }
#ifdef P4R_HAS_DIGESTS
    p4r_event(E, P4R_EV_COMMIT, 0, 0, NULL); /* the end-of-ingress digest delivery */
#endif
    uint64_t grp = S[P4R_STD_mcast_grp];
    if (grp) {
        S[P4R_STD_instance_type] = 5;
        const p4r_group *G = grp < P4R_MAX_GROUP ? E->groups[grp] : NULL;
        if (!G) return 0;
        uint64_t S2[P4R_NSLOTS + 1];
        p4r_pkt P2s; /* on the stack: no allocation per packet */
        p4r_pkt *P2 = &P2s;
        for (uint32_t i = 0; i < G->n; i++) {
            memcpy(S2, S, sizeof(uint64_t) * P4R_NSLOTS);
            S2[P4R_STD_egress_rid] = G->rid[i] & P4R_MASK_egress_rid;
#ifdef P4R_STD_enq_timestamp
            S2[P4R_STD_enq_timestamp] = now & 0xFFFFFFFFu;
#endif
            memcpy(P2, &P, offsetof(p4r_pkt, out));
            P2->color = 0; /* a copy's context starts afresh (V1Switch.copy_context) */
            if (p4r_run_egress(E, S2, P2, G->port[i], out) < 0) return -1;
        }
        return 0;
    }
    uint64_t spec = S[P4R_STD_egress_spec];
    if (spec == P4R_DROP_PORT) return 0;
    S[P4R_STD_instance_type] = 0;
#ifdef P4R_STD_enq_timestamp
    S[P4R_STD_enq_timestamp] = now & 0xFFFFFFFFu;
#endif
    return p4r_run_egress(E, S, &P, (uint32_t)spec, out);
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

/* Frames collected for a Python caller: [u32 port][u32 len][bytes] records. */
typedef struct p4r_collect {
    uint8_t *buf;
    uint32_t cap, used, count;
    int overflow;
} p4r_collect;

static void p4r_collect_emit(void *ctx, uint32_t port, const uint8_t *frame, uint32_t len) {
    p4r_collect *c = ctx;
    if (c->used + 8 + (uint64_t)len > c->cap) {
        c->overflow = 1;
        return;
    }
    memcpy(c->buf + c->used, &port, 4);
    memcpy(c->buf + c->used + 4, &len, 4);
    memcpy(c->buf + c->used + 8, frame, len);
    c->used += 8 + len;
    c->count++;
}

/* Runs n packets (ports[i], data + offs[i], lens[i]) at time now; writes the frames that left
 * into out (records as above) and their total size into *used. Returns the number of frames,
 * -1 - i when packet i faulted (the packets before it ran), or -2^30 when out was too small. */
int64_t p4r_process_batch(p4r_engine *E, uint32_t n, const uint32_t *ports, const uint8_t *data,
                          const uint32_t *offs, const uint32_t *lens, uint64_t now, uint8_t *out,
                          uint32_t cap, uint32_t *used) {
    p4r_collect c = {out, cap, 0, 0, 0};
    p4r_sink sink = {p4r_collect_emit, &c};
    int64_t result = 0;
    pthread_mutex_lock(&E->mu);
    for (uint32_t i = 0; i < n; i++) {
        if (p4r_run_locked(E, ports[i], data + offs[i], lens[i], now, &sink) < 0) {
            result = -1 - (int64_t)i;
            break;
        }
        if (c.overflow) {
            result = -(INT64_C(1) << 30);
            break;
        }
    }
    pthread_mutex_unlock(&E->mu);
    *used = c.used;
    return result < 0 ? result : (int64_t)c.count;
}

p4r_engine *p4r_new(void) {
    p4r_engine *E = calloc(1, sizeof *E);
    if (!E) return NULL;
    pthread_mutex_init(&E->mu, NULL);
    E->mti = 625;
    E->epoch_us = p4r_now_us();
    if (p4r_alloc_state(E) != 0) {
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
    pthread_mutex_destroy(&E->mu);
    free(E);
}

uint64_t p4r_faults(p4r_engine *E) { return E->faults; }

/* Registers and counters: element access for the control plane (under the mutex). */
uint64_t p4r_reg_get(p4r_engine *E, uint32_t r, uint32_t i) {
    pthread_mutex_lock(&E->mu);
    uint64_t v = E->reg[r][i];
    pthread_mutex_unlock(&E->mu);
    return v;
}

void p4r_reg_set(p4r_engine *E, uint32_t r, uint32_t i, uint64_t v) {
    pthread_mutex_lock(&E->mu);
    E->reg[r][i] = v;
    pthread_mutex_unlock(&E->mu);
}

void p4r_reg_bulk(p4r_engine *E, uint32_t r, uint32_t n, uint64_t *dst, const uint64_t *src) {
    pthread_mutex_lock(&E->mu);
    if (src) memcpy(E->reg[r], src, n * sizeof(uint64_t));
    if (dst) memcpy(dst, E->reg[r], n * sizeof(uint64_t));
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
                        uint64_t now, uint8_t *out, uint32_t cap, uint32_t *used) {
    uint32_t off = 0;
    return p4r_process_batch(E, 1, &port, data, &off, &len, now, out, cap, used);
}
