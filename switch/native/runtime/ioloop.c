/* The native I/O loop of p4reduce-switch; the API and its contract are in ioloop.h, the port
 * semantics it reproduces in docs/ports.md (switch/ports/ipudp.py, udp.py, raw.py). */
#define _GNU_SOURCE
#include "ioloop.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define BATCH 64             /* frames per recvmmsg */
#define TX_SLOTS 1024        /* frames per sendmmsg (a batch of 64 multicast to 16) */
#define TX_ARENA (2u << 20)  /* bytes of frames waiting in one send batch */
#define MAX_PAYLOAD (P4R_MAX_FRAME - P4R_UDP_OVERHEAD)
#define MAX_PEERS (P4R_MAX_PORT + 1)
#define MAX_RAW 64
#define GSO_SEGS 64          /* datagrams per segmented send (the kernel allows 64 or more) */
#define GSO_PAYLOAD 65507    /* bytes per segmented send: 65535 less the IPv4 and UDP headers */
#define GRO_MSGS 8           /* super-datagrams per recvmmsg */
#define GRO_BYTES 65536      /* the largest UDP datagram, whole */

/* Single writer (the loop thread), concurrent readers: relaxed atomics, no lock prefix. */
#define BUMP(x) __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED)
#define BUMPN(x, n) \
    __atomic_store_n(&(x), __atomic_load_n(&(x), __ATOMIC_RELAXED) + (n), __ATOMIC_RELAXED)
#define LOAD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

static const char *const reason_names[P4R_REASONS] = {
    "runt",       "oversize", "mtu_exceeded", "buffer_full",  "send_error",
    "closed",     "not_ipv4", "not_udp",      "ip_fragment",  "malformed",
    "port_closed", "backlog_full", "unknown_sender",
};

enum { KIND_UDP = 1, KIND_RAW = 2 };
enum { SRC_STOP = 1, SRC_WAKE, SRC_ADAPTER, SRC_RAW };

struct port;

/* One socket's pending sends: copies of the frames (or UDP payloads) and their sendmmsg
 * headers, flushed at the end of every receive batch or when full. */
struct txq {
    int fd;
    int is_udp;
    uint32_t n;
    size_t used;
    uint8_t *arena;
    struct mmsghdr msgs[TX_SLOTS];
    struct iovec iov[TX_SLOTS];
    struct sockaddr_in dst[TX_SLOTS];
    struct port *owner[TX_SLOTS];
};

/* The adapter's segmented sends (p4r_ioloop_udp_offload): the queue regrouped by peer, each
 * peer's datagrams in their order, cut into runs of one length (a shorter last one ends a
 * run), one message each. */
struct gso_tx {
    uint32_t order[TX_SLOTS]; /* queue indexes, grouped by peer */
    uint32_t next[TX_SLOTS];  /* a peer's next queued datagram: index + 1, 0 after its last */
    struct port *peers[TX_SLOTS]; /* the queue's peers, in the order they first appear */
    struct mmsghdr msgs[TX_SLOTS];
    struct iovec iov[TX_SLOTS];
    uint32_t first[TX_SLOTS], count[TX_SLOTS]; /* a message's datagrams: order[first ..] */
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl[TX_SLOTS];
};

struct port {
    uint32_t number;
    int kind;
    p4r_port_counters c;
    struct sockaddr_in peer; /* UDP */
    int fd;                  /* raw */
    struct txq *tx;          /* the adapter's (shared) or the raw port's own */
    uint32_t gso_head, gso_tail; /* txq_flush_gso: its datagrams' chain (index + 1, 0: none) */
};

struct peer_entry {
    uint64_t key; /* ip << 16 | port, host order */
    struct port *port;
};

struct adapter {
    int fd;
    uint32_t listen_ip;
    uint16_t listen_port;
    int pktinfo;
    uint8_t mac[6];
    uint16_t ip_id;
    p4r_port_counters c;
    uint32_t npeers;
    struct peer_entry peers[MAX_PEERS]; /* sorted by key when the loop starts */
    struct txq tx;
    int gso, gro;            /* p4r_ioloop_udp_offload */
    struct gso_tx *gtx;      /* with gso */
    uint8_t *grobuf;         /* with gro: GRO_MSGS buffers of GRO_BYTES */
};

struct source {
    int kind;
    struct port *raw;
};

struct qitem {
    uint32_t port;
    uint32_t len;
    int transmit; /* inject queue only: send out of port rather than run the handler */
    uint8_t *data;
};

/* A bounded FIFO of frames between the loop thread and Python. */
struct fifo {
    pthread_mutex_t mu;
    struct qitem *items;
    uint32_t cap, head, count;
};

struct p4r_ioloop {
    int32_t cpu_port;
    int started, stopped;
    pthread_t thread;
    int epfd, stop_fd, wake_fd, cpu_fd;

    pthread_mutex_t handler_mu;
    p4r_handler_fn fn;
    void *ctx;

    struct port *by_number[P4R_MAX_PORT + 1];
    struct adapter *adapter;
    struct port *raws[MAX_RAW];
    uint32_t nraw;
    struct source src_stop, src_wake, src_adapter, src_raw[MAX_RAW];

    struct fifo cpu, inject;
    p4r_loop_stats stats;

    /* receive batch, shared by every source (the loop thread only) */
    uint8_t *rxbuf;
    struct mmsghdr rmsgs[BATCH];
    struct iovec riov[BATCH];
    struct sockaddr_storage rname[BATCH];
    uint8_t rctl[BATCH][64];
};

/* ------------------------------------------------------------------------------------------ */
/* Framing (switch/ports/ipudp.py)                                                             */

static inline uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static inline void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void put32(uint8_t *p, uint32_t v) {
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

/* The ones' complement sum of native-order 16-bit words, unfolded: RFC 1071 shows the sum is
 * byte-order independent, so summing native words and swapping the folded result once is the
 * same as summing big-endian words. Every piece but the last must have an even length. */
static uint64_t csum_add(uint64_t acc, const uint8_t *p, size_t n) {
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        acc += (w & 0xFFFFFFFFu) + (w >> 32);
        p += 8;
        n -= 8;
    }
    if (n >= 4) {
        uint32_t w;
        memcpy(&w, p, 4);
        acc += w;
        p += 4;
        n -= 4;
    }
    if (n >= 2) {
        uint16_t w;
        memcpy(&w, p, 2);
        acc += w;
        p += 2;
        n -= 2;
    }
    if (n) {
        uint8_t last[2] = {p[0], 0};
        uint16_t w;
        memcpy(&w, last, 2);
        acc += w;
    }
    return acc;
}

static uint16_t csum_finish(uint64_t acc) {
    while (acc >> 16) acc = (acc & 0xFFFF) + (acc >> 16);
    uint16_t native = (uint16_t)acc;
    uint8_t b[2];
    memcpy(b, &native, 2);
    return (uint16_t)~((uint16_t)(b[0] << 8 | b[1])); /* back to the big-endian value */
}

void p4r_port_mac(uint32_t number, uint8_t out[6]) {
    out[0] = 0x02;
    out[1] = out[2] = out[3] = 0;
    put16(out + 4, (uint16_t)(0x0100 + number));
}

int p4r_udp_build_frame(uint8_t *out, const uint8_t *payload, uint32_t payload_len,
                        const uint8_t eth_dst[6], const uint8_t eth_src[6], uint32_t ip_src,
                        uint32_t ip_dst, uint16_t udp_src, uint16_t udp_dst, uint16_t ip_id) {
    if (payload_len > 65507) return -1;
    uint8_t *data = out + P4R_UDP_OVERHEAD;
    if (payload != data) memmove(data, payload, payload_len);
    uint32_t udp_len = 8 + payload_len;
    memcpy(out, eth_dst, 6);
    memcpy(out + 6, eth_src, 6);
    put16(out + 12, 0x0800);
    uint8_t *ip = out + 14;
    ip[0] = 0x45;
    ip[1] = 0;
    put16(ip + 2, (uint16_t)(20 + udp_len));
    put16(ip + 4, ip_id);
    put16(ip + 6, 0x4000); /* DF */
    ip[8] = 64;
    ip[9] = 17;
    put16(ip + 10, 0);
    put32(ip + 12, ip_src);
    put32(ip + 16, ip_dst);
    put16(ip + 10, csum_finish(csum_add(0, ip, 20)));
    uint8_t *udp = ip + 20;
    put16(udp, udp_src);
    put16(udp + 2, udp_dst);
    put16(udp + 4, (uint16_t)udp_len);
    put16(udp + 6, 0);
    uint8_t pseudo[12];
    memcpy(pseudo, ip + 12, 8);
    pseudo[8] = 0;
    pseudo[9] = 17;
    put16(pseudo + 10, (uint16_t)udp_len);
    uint64_t acc = csum_add(0, pseudo, 12);
    acc = csum_add(acc, udp, 8);
    acc = csum_add(acc, data, payload_len);
    uint16_t sum = csum_finish(acc);
    put16(udp + 6, sum ? sum : 0xFFFF); /* 0 on the wire means "no checksum" (RFC 768) */
    return (int)(P4R_UDP_OVERHEAD + payload_len);
}

int p4r_udp_payload(const uint8_t *frame, uint32_t len, uint32_t *offset) {
    if (len < 14) return -1 - P4R_RUNT;
    if (be16(frame + 12) != 0x0800) return -1 - P4R_NOT_IPV4;
    const uint8_t *ip = frame + 14;
    uint32_t ip_avail = len - 14;
    if (ip_avail < 20) return -1 - P4R_MALFORMED;
    if (ip[0] >> 4 != 4) return -1 - P4R_NOT_IPV4;
    uint32_t ihl = (uint32_t)(ip[0] & 0x0F) * 4;
    uint32_t total = be16(ip + 2);
    if (ihl < 20 || total < ihl || total > ip_avail) return -1 - P4R_MALFORMED;
    if (be16(ip + 6) & 0x3FFF) return -1 - P4R_IP_FRAGMENT; /* MF or an offset */
    if (ip[9] != 17) return -1 - P4R_NOT_UDP;
    const uint8_t *udp = ip + ihl;
    uint32_t udp_avail = total - ihl;
    if (udp_avail < 8) return -1 - P4R_MALFORMED;
    uint32_t udp_len = be16(udp + 4);
    if (udp_len < 8 || udp_len > udp_avail) return -1 - P4R_MALFORMED;
    *offset = 14 + ihl + 8;
    return (int)(udp_len - 8);
}

const char *p4r_reason_name(int reason) {
    return reason >= 0 && reason < P4R_REASONS ? reason_names[reason] : NULL;
}

int p4r_ioloop_abi(void) { return P4R_IOLOOP_ABI; }

/* ------------------------------------------------------------------------------------------ */
/* Counters                                                                                   */

static void count_errno(p4r_port_counters *c, int e) {
    for (int i = 0; i < P4R_ERRNO_SLOTS; i++) {
        int32_t v = LOAD(c->errno_value[i]);
        if (v == 0) {
            __atomic_store_n(&c->errno_value[i], (int32_t)e, __ATOMIC_RELAXED);
            v = e;
        }
        if (v == e) {
            BUMP(c->errno_count[i]);
            return;
        }
    }
    BUMP(c->errno_other);
}

static void copy_counters(const p4r_port_counters *c, p4r_port_counters *out) {
    out->rx_frames = LOAD(c->rx_frames);
    out->tx_frames = LOAD(c->tx_frames);
    for (int i = 0; i < P4R_REASONS; i++) {
        out->rx_dropped[i] = LOAD(c->rx_dropped[i]);
        out->tx_dropped[i] = LOAD(c->tx_dropped[i]);
    }
    for (int i = 0; i < P4R_ERRNO_SLOTS; i++) {
        out->errno_value[i] = LOAD(c->errno_value[i]);
        out->errno_count[i] = LOAD(c->errno_count[i]);
    }
    out->errno_other = LOAD(c->errno_other);
}

static int unreachable(int e) {
    return e == ECONNREFUSED || e == EHOSTUNREACH || e == ENETUNREACH || e == EHOSTDOWN ||
           e == ENETDOWN;
}

/* ------------------------------------------------------------------------------------------ */
/* Queues                                                                                     */

static int fifo_init(struct fifo *q, uint32_t cap) {
    q->items = calloc(cap, sizeof *q->items);
    if (!q->items) return -1;
    q->cap = cap;
    q->head = q->count = 0;
    pthread_mutex_init(&q->mu, NULL);
    return 0;
}

static int fifo_push(struct fifo *q, uint32_t port, const uint8_t *frame, uint32_t len,
                     int transmit) {
    uint8_t *copy = malloc(len ? len : 1);
    if (!copy) return -1;
    memcpy(copy, frame, len);
    pthread_mutex_lock(&q->mu);
    if (q->count == q->cap) {
        pthread_mutex_unlock(&q->mu);
        free(copy);
        return -1;
    }
    struct qitem *it = &q->items[(q->head + q->count) % q->cap];
    it->port = port;
    it->len = len;
    it->transmit = transmit;
    it->data = copy;
    q->count++;
    pthread_mutex_unlock(&q->mu);
    return 0;
}

static int fifo_pop(struct fifo *q, struct qitem *out) {
    pthread_mutex_lock(&q->mu);
    if (q->count == 0) {
        pthread_mutex_unlock(&q->mu);
        return -1;
    }
    *out = q->items[q->head];
    q->head = (q->head + 1) % q->cap;
    q->count--;
    pthread_mutex_unlock(&q->mu);
    return 0;
}

static void fifo_free(struct fifo *q) {
    struct qitem it;
    if (!q->items) return;
    while (fifo_pop(q, &it) == 0) free(it.data);
    free(q->items);
    pthread_mutex_destroy(&q->mu);
}

static void poke(int fd) {
    uint64_t one = 1;
    ssize_t r = write(fd, &one, sizeof one);
    (void)r; /* an eventfd only fails when its counter would overflow: it is readable then */
}

static void drain_fd(int fd) {
    uint64_t v;
    ssize_t r = read(fd, &v, sizeof v);
    (void)r;
}

/* ------------------------------------------------------------------------------------------ */
/* Sending                                                                                    */

static int txq_init(struct txq *q, int fd, int is_udp) {
    memset(q, 0, sizeof *q);
    q->fd = fd;
    q->is_udp = is_udp;
    q->arena = malloc(TX_ARENA);
    return q->arena ? 0 : -1;
}

static void txq_flush_gso(struct p4r_ioloop *loop, struct txq *q);

/* sendmmsg everything queued, counting as switch/ports/udp.py and raw.py count one send. */
static void txq_flush(struct p4r_ioloop *loop, struct txq *q) {
    if (q->is_udp && loop->adapter->gso) {
        txq_flush_gso(loop, q);
        return;
    }
    uint32_t i = 0;
    int64_t retried = -1; /* a UDP send that met a stale ICMP error is retried once */
    while (i < q->n) {
        int r = sendmmsg(q->fd, q->msgs + i, q->n - i, MSG_DONTWAIT);
        if (r > 0) {
            for (uint32_t k = i; k < i + (uint32_t)r; k++) BUMP(q->owner[k]->c.tx_frames);
            i += (uint32_t)r;
            continue;
        }
        int e = r == 0 ? EAGAIN : errno;
        if (e == EINTR) continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            for (; i < q->n; i++) BUMP(q->owner[i]->c.tx_dropped[P4R_BUFFER_FULL]);
            break;
        }
        struct port *p = q->owner[i];
        if (q->is_udp && unreachable(e) && retried != (int64_t)i) {
            /* An ICMP error for an earlier datagram surfaced here; not this frame's fault. */
            count_errno(&loop->adapter->c, e);
            retried = i;
            continue;
        }
        BUMP(p->c.tx_dropped[!q->is_udp && e == EMSGSIZE ? P4R_MTU_EXCEEDED : P4R_SEND_ERROR]);
        count_errno(&p->c, e);
        i++;
    }
    q->n = 0;
    q->used = 0;
}

/* One queued datagram on its own (after a refused segmented send), counted as txq_flush
 * counts it. */
static void txq_send_one(struct txq *q, uint32_t e) {
    struct port *p = q->owner[e];
    for (;;) {
        if (sendmsg(q->fd, &q->msgs[e].msg_hdr, MSG_DONTWAIT) >= 0) {
            BUMP(p->c.tx_frames);
            return;
        }
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) {
            BUMP(p->c.tx_dropped[P4R_BUFFER_FULL]);
        } else {
            BUMP(p->c.tx_dropped[P4R_SEND_ERROR]);
            count_errno(&p->c, errno);
        }
        return;
    }
}

/* txq_flush with UDP_SEGMENT (struct gso_tx): the kernel cuts each message into the
 * datagrams the per-datagram path sends; only the order across peers differs (each peer's
 * own order is kept). Errors as there, per message; a message the kernel refuses to
 * segment (EINVAL, EIO, EOPNOTSUPP, EMSGSIZE: a route that cannot) turns GSO off and the
 * rest goes per datagram. */
static void txq_flush_gso(struct p4r_ioloop *loop, struct txq *q) {
    struct adapter *a = loop->adapter;
    struct gso_tx *g = a->gtx;
    uint32_t no = 0, m = 0, np = 0;
    /* grouped in one pass: each peer chains its datagrams, then the chains in turn */
    for (uint32_t i = 0; i < q->n; i++) {
        struct port *p = q->owner[i];
        g->next[i] = 0;
        if (p->gso_tail)
            g->next[p->gso_tail - 1] = i + 1;
        else
            g->peers[np++] = p, p->gso_head = i + 1;
        p->gso_tail = i + 1;
    }
    for (uint32_t u = 0; u < np; u++) {
        struct port *p = g->peers[u];
        for (uint32_t e = p->gso_head; e; e = g->next[e - 1]) g->order[no++] = e - 1;
        p->gso_head = p->gso_tail = 0;
    }
    for (uint32_t k = 0; k < no; m++) {
        uint32_t e = g->order[k], n = 0;
        struct port *p = q->owner[e];
        size_t seg = q->iov[e].iov_len, bytes = 0;
        struct msghdr *h = &g->msgs[m].msg_hdr;
        memset(h, 0, sizeof *h);
        h->msg_iov = &g->iov[k];
        h->msg_name = &q->dst[e];
        h->msg_namelen = sizeof q->dst[e];
        g->first[m] = k;
        do {
            g->iov[k] = q->iov[g->order[k]];
            bytes += g->iov[k].iov_len;
            n++, k++;
        } while (seg > 0 && k < no && n < GSO_SEGS && q->owner[g->order[k]] == p &&
                 g->iov[k - 1].iov_len == seg && q->iov[g->order[k]].iov_len > 0 &&
                 q->iov[g->order[k]].iov_len <= seg &&
                 bytes + q->iov[g->order[k]].iov_len <= GSO_PAYLOAD);
        h->msg_iovlen = n;
        g->count[m] = n;
        if (n > 1) {
            uint16_t size = (uint16_t)seg;
            h->msg_control = g->ctl[m].buf;
            h->msg_controllen = sizeof g->ctl[m].buf;
            struct cmsghdr *cm = CMSG_FIRSTHDR(h);
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof size);
            memcpy(CMSG_DATA(cm), &size, sizeof size);
        }
    }
    uint32_t i = 0;
    int64_t retried = -1; /* a send that met a stale ICMP error is retried once */
    while (i < m) {
        int r = sendmmsg(q->fd, g->msgs + i, m - i, MSG_DONTWAIT);
        if (r > 0) {
            for (uint32_t j = i; j < i + (uint32_t)r; j++) {
                for (uint32_t k = g->first[j]; k < g->first[j] + g->count[j]; k++)
                    BUMP(q->owner[g->order[k]]->c.tx_frames);
                if (g->count[j] > 1) BUMP(loop->stats.gso_sends);
            }
            i += (uint32_t)r;
            continue;
        }
        int e = r == 0 ? EAGAIN : errno;
        if (e == EINTR) continue;
        if (e == EAGAIN || e == EWOULDBLOCK) {
            for (uint32_t k = g->first[i]; k < no; k++)
                BUMP(q->owner[g->order[k]]->c.tx_dropped[P4R_BUFFER_FULL]);
            break;
        }
        if (g->count[i] > 1 && (e == EINVAL || e == EIO || e == EOPNOTSUPP || e == EMSGSIZE)) {
            a->gso = 0;
            BUMP(loop->stats.gso_refused);
            for (uint32_t k = g->first[i]; k < no; k++) txq_send_one(q, g->order[k]);
            break;
        }
        if (unreachable(e) && retried != (int64_t)i) {
            count_errno(&a->c, e); /* an ICMP error for an earlier datagram surfaced here */
            retried = i;
            continue;
        }
        for (uint32_t k = g->first[i]; k < g->first[i] + g->count[i]; k++) {
            struct port *p = q->owner[g->order[k]];
            BUMP(p->c.tx_dropped[P4R_SEND_ERROR]);
            count_errno(&p->c, e);
        }
        i++;
    }
    q->n = 0;
    q->used = 0;
}

static void txq_add(struct p4r_ioloop *loop, struct txq *q, struct port *p, const uint8_t *data,
                    uint32_t len) {
    if (q->n == TX_SLOTS || q->used + len > TX_ARENA) txq_flush(loop, q);
    uint32_t i = q->n++;
    uint8_t *copy = q->arena + q->used;
    memcpy(copy, data, len);
    q->used += len;
    q->iov[i].iov_base = copy;
    q->iov[i].iov_len = len;
    memset(&q->msgs[i], 0, sizeof q->msgs[i]);
    q->msgs[i].msg_hdr.msg_iov = &q->iov[i];
    q->msgs[i].msg_hdr.msg_iovlen = 1;
    if (q->is_udp) {
        q->dst[i] = p->peer;
        q->msgs[i].msg_hdr.msg_name = &q->dst[i];
        q->msgs[i].msg_hdr.msg_namelen = sizeof q->dst[i];
    }
    q->owner[i] = p;
}

/* The handler's emit: one frame leaving the switch by out_port. */
static void emit(void *emit_ctx, uint32_t out_port, const uint8_t *frame, uint32_t len) {
    struct p4r_ioloop *loop = emit_ctx;
    if (loop->cpu_port >= 0 && out_port == (uint32_t)loop->cpu_port) {
        if (fifo_push(&loop->cpu, out_port, frame, len, 0) == 0) {
            BUMP(loop->stats.cpu_queued);
            poke(loop->cpu_fd);
        } else {
            BUMP(loop->stats.cpu_dropped);
        }
        return;
    }
    struct port *p = out_port <= P4R_MAX_PORT ? loop->by_number[out_port] : NULL;
    if (!p) {
        BUMP(loop->stats.no_such_port);
        return;
    }
    if (p->kind == KIND_RAW) {
        if (len < P4R_MIN_FRAME) {
            BUMP(p->c.tx_dropped[P4R_RUNT]);
        } else if (len > P4R_MAX_FRAME) {
            BUMP(p->c.tx_dropped[P4R_OVERSIZE]);
        } else {
            txq_add(loop, p->tx, p, frame, len);
        }
        return;
    }
    if (len > P4R_MAX_FRAME) {
        BUMP(p->c.tx_dropped[P4R_OVERSIZE]);
        return;
    }
    uint32_t offset = 0;
    int n = p4r_udp_payload(frame, len, &offset);
    if (n < 0) {
        BUMP(p->c.tx_dropped[-1 - n]);
        return;
    }
    /* The frame's own addresses are ignored: the port decides where the datagram goes. */
    txq_add(loop, p->tx, p, frame + offset, (uint32_t)n);
}

static void flush_all(struct p4r_ioloop *loop) {
    if (loop->adapter && loop->adapter->tx.n) txq_flush(loop, &loop->adapter->tx);
    for (uint32_t i = 0; i < loop->nraw; i++)
        if (loop->raws[i]->tx->n) txq_flush(loop, loop->raws[i]->tx);
}

/* ------------------------------------------------------------------------------------------ */
/* Receiving                                                                                  */

static void run_frame(struct p4r_ioloop *loop, uint32_t port, const uint8_t *frame, uint32_t len) {
    BUMP(loop->stats.handled);
    if (!loop->fn) {
        BUMP(loop->stats.no_handler);
        return;
    }
    if (loop->fn(loop->ctx, port, frame, len, emit, loop) < 0) BUMP(loop->stats.handler_failed);
}

/* The receive batch: n buffers of cap bytes, `stride` apart in buf from data_offset on. */
static void prepare_rx(struct p4r_ioloop *loop, uint8_t *buf, size_t stride, size_t data_offset,
                       size_t cap, int n, int want_ctl) {
    for (int i = 0; i < n; i++) {
        loop->riov[i].iov_base = buf + (size_t)i * stride + data_offset;
        loop->riov[i].iov_len = cap;
        struct msghdr *h = &loop->rmsgs[i].msg_hdr;
        memset(h, 0, sizeof *h);
        h->msg_iov = &loop->riov[i];
        h->msg_iovlen = 1;
        h->msg_name = &loop->rname[i];
        h->msg_namelen = sizeof loop->rname[i];
        if (want_ctl) {
            h->msg_control = loop->rctl[i];
            h->msg_controllen = sizeof loop->rctl[i];
        }
    }
}

static struct port *find_peer(struct adapter *a, uint32_t ip, uint16_t port) {
    uint64_t key = (uint64_t)ip << 16 | port;
    uint32_t lo = 0, hi = a->npeers;
    while (lo < hi) {
        uint32_t mid = (lo + hi) / 2;
        if (a->peers[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < a->npeers && a->peers[lo].key == key ? a->peers[lo].port : NULL;
}

/* recvmmsg into the loop's prepared batch: the count, or -1 when nothing came (an error
 * other than EAGAIN counted on c: e.g. ENETDOWN when an interface goes down, an event, not
 * a frame). */
static int recv_batch(struct p4r_ioloop *loop, int fd, unsigned n, int flags,
                      p4r_port_counters *c) {
    for (;;) {
        int got = recvmmsg(fd, loop->rmsgs, n, MSG_DONTWAIT | flags, NULL);
        if (got >= 0) return got;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) count_errno(c, errno);
        return -1;
    }
}

/* The port of a received datagram's sender, or NULL (an unknown sender). */
static struct port *sender(struct adapter *a, const struct msghdr *h) {
    const struct sockaddr_in *from = h->msg_name;
    if (h->msg_namelen < sizeof *from || from->sin_family != AF_INET) return NULL;
    return find_peer(a, ntohl(from->sin_addr.s_addr), ntohs(from->sin_port));
}

/* What a received message's control data says: the datagram's IP destination (IP_PKTINFO
 * when the adapter asked for it, else the listen address) and, with gro_size non-NULL, the
 * UDP_GRO segment size (left as it is when absent). One pass per message, not per datagram. */
static uint32_t read_ctl(const struct adapter *a, struct msghdr *h, uint32_t *gro_size) {
    uint32_t dst_ip = a->listen_ip;
    if (!a->pktinfo && !gro_size) return dst_ip;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm)) {
        if (cm->cmsg_level == IPPROTO_IP && cm->cmsg_type == IP_PKTINFO && a->pktinfo) {
            struct in_pktinfo info;
            memcpy(&info, CMSG_DATA(cm), sizeof info);
            dst_ip = ntohl(info.ipi_addr.s_addr); /* the datagram's IP destination */
        } else if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO && gro_size) {
            int size;
            memcpy(&size, CMSG_DATA(cm), sizeof size);
            if (size > 0 && (uint32_t)size < *gro_size) *gro_size = (uint32_t)size;
        }
    }
    return dst_ip;
}

/* One datagram of `size` bytes from port p (its address in h's name, sent to dst_ip), its
 * payload already at frame + P4R_UDP_OVERHEAD (unless oversize): the frame
 * switch/ports/udp.py builds, through the handler. */
static void adapter_frame(struct p4r_ioloop *loop, struct port *p, const struct msghdr *h,
                          uint32_t dst_ip, uint8_t *frame, uint32_t size) {
    struct adapter *a = loop->adapter;
    if (size > MAX_PAYLOAD) {
        BUMP(p->c.rx_dropped[P4R_OVERSIZE]);
        return;
    }
    const struct sockaddr_in *from = h->msg_name;
    uint8_t src_mac[6];
    p4r_port_mac(p->number, src_mac);
    int len = p4r_udp_build_frame(frame, frame + P4R_UDP_OVERHEAD, size, a->mac, src_mac,
                                  ntohl(from->sin_addr.s_addr), dst_ip, ntohs(from->sin_port),
                                  a->listen_port, a->ip_id);
    a->ip_id++;
    BUMP(p->c.rx_frames);
    run_frame(loop, p->number, frame, (uint32_t)len);
}

static void rx_adapter_gro(struct p4r_ioloop *loop);

static void rx_adapter(struct p4r_ioloop *loop) {
    struct adapter *a = loop->adapter;
    if (a->gro) {
        rx_adapter_gro(loop);
        return;
    }
    /* The payload lands where the frame will carry it, so the frame is built in place. */
    prepare_rx(loop, loop->rxbuf, P4R_MAX_FRAME, P4R_UDP_OVERHEAD, MAX_PAYLOAD, BATCH,
               a->pktinfo);
    /* MSG_TRUNC: the real length of a datagram larger than the buffer, to count it. */
    int n = recv_batch(loop, a->fd, BATCH, MSG_TRUNC, &a->c);
    if (n < 0) return;
    pthread_mutex_lock(&loop->handler_mu);
    for (int i = 0; i < n; i++) {
        struct msghdr *h = &loop->rmsgs[i].msg_hdr;
        struct port *p = sender(a, h);
        if (!p) {
            BUMP(a->c.rx_dropped[P4R_UNKNOWN_SENDER]);
            continue;
        }
        uint8_t *frame = loop->rxbuf + (size_t)i * P4R_MAX_FRAME;
        adapter_frame(loop, p, h, read_ctl(a, h, NULL), frame, loop->rmsgs[i].msg_len);
    }
    pthread_mutex_unlock(&loop->handler_mu);
}

/* rx_adapter with UDP_GRO: each message may hold several datagrams of one sender, all of
 * the UDP_GRO size but a shorter last one; each is copied into a frame buffer and goes on
 * as rx_adapter's datagrams do (counted alike: unknown senders and oversize per datagram). */
static void rx_adapter_gro(struct p4r_ioloop *loop) {
    struct adapter *a = loop->adapter;
    prepare_rx(loop, a->grobuf, GRO_BYTES, 0, GRO_BYTES, GRO_MSGS, 1);
    int n = recv_batch(loop, a->fd, GRO_MSGS, 0, &a->c);
    if (n < 0) return;
    uint8_t *frame = loop->rxbuf; /* one frame at a time: the handler copies what it emits */
    pthread_mutex_lock(&loop->handler_mu);
    for (int i = 0; i < n; i++) {
        struct msghdr *h = &loop->rmsgs[i].msg_hdr;
        uint32_t total = loop->rmsgs[i].msg_len, seg = total ? total : 1;
        uint32_t dst_ip = read_ctl(a, h, &seg);
        if (total > seg) BUMP(loop->stats.gro_receives);
        struct port *p = sender(a, h);
        const uint8_t *data = loop->riov[i].iov_base;
        uint32_t at = 0;
        do {
            uint32_t size = total - at < seg ? total - at : seg;
            if (!p) {
                BUMP(a->c.rx_dropped[P4R_UNKNOWN_SENDER]);
            } else {
                if (size <= MAX_PAYLOAD) memcpy(frame + P4R_UDP_OVERHEAD, data + at, size);
                adapter_frame(loop, p, h, dst_ip, frame, size);
            }
            at += seg;
        } while (at < total);
    }
    pthread_mutex_unlock(&loop->handler_mu);
}

static void rx_raw(struct p4r_ioloop *loop, struct port *p) {
    prepare_rx(loop, loop->rxbuf, P4R_MAX_FRAME, 0, P4R_MAX_FRAME, BATCH, 0);
    int n = recv_batch(loop, p->fd, BATCH, MSG_TRUNC, &p->c);
    if (n < 0) return;
    pthread_mutex_lock(&loop->handler_mu);
    for (int i = 0; i < n; i++) {
        const struct sockaddr_ll *ll = (const struct sockaddr_ll *)&loop->rname[i];
        /* Copies of frames leaving the interface are skipped, not counted (raw.py). */
        if (ll->sll_pkttype == PACKET_OUTGOING) continue;
        uint32_t size = loop->rmsgs[i].msg_len;
        if (size > P4R_MAX_FRAME) {
            BUMP(p->c.rx_dropped[P4R_OVERSIZE]);
            continue;
        }
        if (size < P4R_MIN_FRAME) {
            BUMP(p->c.rx_dropped[P4R_RUNT]);
            continue;
        }
        BUMP(p->c.rx_frames);
        run_frame(loop, p->number, loop->rxbuf + (size_t)i * P4R_MAX_FRAME, size);
    }
    pthread_mutex_unlock(&loop->handler_mu);
}

static void run_queued(struct p4r_ioloop *loop) {
    struct qitem it;
    /* Bounded, so a flood of injections cannot starve the sockets. */
    for (int k = 0; k < BATCH && fifo_pop(&loop->inject, &it) == 0; k++) {
        if (it.transmit) {
            emit(loop, it.port, it.data, it.len);
        } else {
            pthread_mutex_lock(&loop->handler_mu);
            run_frame(loop, it.port, it.data, it.len);
            pthread_mutex_unlock(&loop->handler_mu);
        }
        free(it.data);
    }
    pthread_mutex_lock(&loop->inject.mu);
    int more = loop->inject.count > 0;
    pthread_mutex_unlock(&loop->inject.mu);
    if (more) poke(loop->wake_fd);
}

static void *loop_main(void *arg) {
    struct p4r_ioloop *loop = arg;
    struct epoll_event ev[16];
    for (;;) {
        int n = epoll_wait(loop->epfd, ev, 16, -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < n; i++) {
            struct source *s = ev[i].data.ptr;
            switch (s->kind) {
            case SRC_STOP:
                flush_all(loop);
                return NULL;
            case SRC_WAKE:
                drain_fd(loop->wake_fd);
                run_queued(loop);
                break;
            case SRC_ADAPTER:
                rx_adapter(loop);
                break;
            case SRC_RAW:
                rx_raw(loop, s->raw);
                break;
            }
        }
        BUMP(loop->stats.batches);
        flush_all(loop);
    }
    return NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* Life cycle and configuration                                                               */

p4r_ioloop *p4r_ioloop_new(int32_t cpu_port, uint32_t queue_frames) {
    if (cpu_port > P4R_MAX_PORT || queue_frames == 0) {
        errno = EINVAL;
        return NULL;
    }
    struct p4r_ioloop *loop = calloc(1, sizeof *loop);
    if (!loop) return NULL;
    loop->cpu_port = cpu_port < 0 ? -1 : cpu_port;
    loop->epfd = loop->stop_fd = loop->wake_fd = loop->cpu_fd = -1;
    pthread_mutex_init(&loop->handler_mu, NULL);
    loop->rxbuf = malloc((size_t)BATCH * P4R_MAX_FRAME);
    loop->epfd = epoll_create1(EPOLL_CLOEXEC);
    loop->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    loop->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    loop->cpu_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (!loop->rxbuf || loop->epfd < 0 || loop->stop_fd < 0 || loop->wake_fd < 0 ||
        loop->cpu_fd < 0 || fifo_init(&loop->cpu, queue_frames) ||
        fifo_init(&loop->inject, queue_frames)) {
        int e = errno ? errno : ENOMEM;
        p4r_ioloop_free(loop);
        errno = e;
        return NULL;
    }
    loop->src_stop.kind = SRC_STOP;
    loop->src_wake.kind = SRC_WAKE;
    loop->src_adapter.kind = SRC_ADAPTER;
    return loop;
}

static int fail(int e) {
    errno = e;
    return -1;
}

int p4r_ioloop_add_udp_adapter(p4r_ioloop *loop, int fd, uint32_t listen_ip,
                               uint16_t listen_port, int pktinfo, const uint8_t switch_mac[6],
                               uint16_t first_ip_id) {
    if (loop->started || fd < 0) return fail(EINVAL);
    if (loop->adapter) return fail(ENOSPC);
    struct adapter *a = calloc(1, sizeof *a);
    if (!a) return -1;
    if (txq_init(&a->tx, fd, 1)) {
        free(a);
        return -1;
    }
    a->fd = fd;
    a->listen_ip = listen_ip;
    a->listen_port = listen_port;
    a->pktinfo = pktinfo != 0;
    memcpy(a->mac, switch_mac, 6);
    a->ip_id = first_ip_id;
    loop->adapter = a;
    return 0;
}

static void gro_off(struct adapter *a) {
    int zero = 0;
    if (a->gro) setsockopt(a->fd, SOL_UDP, UDP_GRO, &zero, sizeof zero);
    a->gro = 0;
}

int p4r_ioloop_udp_offload(p4r_ioloop *loop, int want) {
    struct adapter *a = loop->adapter;
    if (!a || loop->started) return fail(EINVAL);
    gro_off(a);
    a->gso = 0;
    if (!want) return 0;
    int v = 0, one = 1;
    socklen_t len = sizeof v;
    if (getsockopt(a->fd, SOL_UDP, UDP_SEGMENT, &v, &len) == 0 &&
        (a->gtx || (a->gtx = malloc(sizeof *a->gtx))))
        a->gso = 1;
    if ((a->grobuf || (a->grobuf = malloc((size_t)GRO_MSGS * GRO_BYTES))) &&
        setsockopt(a->fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0)
        a->gro = 1;
    return a->gso | a->gro << 1;
}

int p4r_ioloop_add_udp_port(p4r_ioloop *loop, uint32_t number, uint32_t peer_ip,
                            uint16_t peer_port) {
    struct adapter *a = loop->adapter;
    if (loop->started || !a || number > P4R_MAX_PORT) return fail(EINVAL);
    if (loop->by_number[number]) return fail(EEXIST);
    uint64_t key = (uint64_t)peer_ip << 16 | peer_port;
    for (uint32_t i = 0; i < a->npeers; i++)
        if (a->peers[i].key == key) return fail(EEXIST);
    if (a->npeers == MAX_PEERS) return fail(ENOSPC);
    struct port *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->number = number;
    p->kind = KIND_UDP;
    p->fd = -1;
    p->peer.sin_family = AF_INET;
    p->peer.sin_addr.s_addr = htonl(peer_ip);
    p->peer.sin_port = htons(peer_port);
    p->tx = &a->tx;
    /* insertion keeps the peers sorted for the binary search */
    uint32_t i = a->npeers++;
    while (i > 0 && a->peers[i - 1].key > key) {
        a->peers[i] = a->peers[i - 1];
        i--;
    }
    a->peers[i].key = key;
    a->peers[i].port = p;
    loop->by_number[number] = p;
    return 0;
}

int p4r_ioloop_add_raw_port(p4r_ioloop *loop, uint32_t number, int fd) {
    if (loop->started || fd < 0 || number > P4R_MAX_PORT) return fail(EINVAL);
    if (loop->by_number[number]) return fail(EEXIST);
    if (loop->nraw == MAX_RAW) return fail(ENOSPC);
    struct port *p = calloc(1, sizeof *p);
    if (!p) return -1;
    p->tx = malloc(sizeof *p->tx);
    if (!p->tx || txq_init(p->tx, fd, 0)) {
        free(p->tx);
        free(p);
        return fail(ENOMEM);
    }
    p->number = number;
    p->kind = KIND_RAW;
    p->fd = fd;
    loop->src_raw[loop->nraw].kind = SRC_RAW;
    loop->src_raw[loop->nraw].raw = p;
    loop->raws[loop->nraw++] = p;
    loop->by_number[number] = p;
    return 0;
}

void p4r_ioloop_set_handler(p4r_ioloop *loop, p4r_handler_fn fn, void *ctx) {
    pthread_mutex_lock(&loop->handler_mu);
    loop->fn = fn;
    loop->ctx = ctx;
    pthread_mutex_unlock(&loop->handler_mu);
}

static int watch(p4r_ioloop *loop, int fd, struct source *s) {
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = s};
    return epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int p4r_ioloop_start(p4r_ioloop *loop) {
    if (loop->started) return fail(EINVAL);
    if (watch(loop, loop->stop_fd, &loop->src_stop) || watch(loop, loop->wake_fd, &loop->src_wake))
        return -1;
    if (loop->adapter && watch(loop, loop->adapter->fd, &loop->src_adapter)) return -1;
    for (uint32_t i = 0; i < loop->nraw; i++)
        if (watch(loop, loop->raws[i]->fd, &loop->src_raw[i])) return -1;
    int e = pthread_create(&loop->thread, NULL, loop_main, loop);
    if (e) return fail(e);
    loop->started = 1;
    return 0;
}

int p4r_ioloop_stop(p4r_ioloop *loop) {
    if (!loop->started || loop->stopped) return 0;
    loop->stopped = 1;
    poke(loop->stop_fd);
    int rc = pthread_join(loop->thread, NULL) ? -1 : 0;
    if (loop->adapter) gro_off(loop->adapter); /* the socket's next reader expects datagrams */
    return rc;
}

void p4r_ioloop_free(p4r_ioloop *loop) {
    if (!loop) return;
    p4r_ioloop_stop(loop);
    for (uint32_t n = 0; n <= P4R_MAX_PORT; n++) {
        struct port *p = loop->by_number[n];
        if (!p) continue;
        if (p->kind == KIND_RAW) {
            free(p->tx->arena);
            free(p->tx);
        }
        free(p);
    }
    if (loop->adapter) {
        gro_off(loop->adapter); /* configured but never started */
        free(loop->adapter->tx.arena);
        free(loop->adapter->gtx);
        free(loop->adapter->grobuf);
        free(loop->adapter);
    }
    fifo_free(&loop->cpu);
    fifo_free(&loop->inject);
    int fds[] = {loop->epfd, loop->stop_fd, loop->wake_fd, loop->cpu_fd};
    for (int i = 0; i < 4; i++)
        if (fds[i] >= 0) close(fds[i]);
    pthread_mutex_destroy(&loop->handler_mu);
    free(loop->rxbuf);
    free(loop);
}

static int enqueue(p4r_ioloop *loop, uint32_t port, const uint8_t *frame, uint32_t len,
                   int transmit) {
    if (len > P4R_MAX_FRAME || port > P4R_MAX_PORT) return fail(EINVAL);
    if (fifo_push(&loop->inject, port, frame, len, transmit)) {
        __atomic_fetch_add(&loop->stats.inject_dropped, 1, __ATOMIC_RELAXED); /* any thread */
        return fail(EAGAIN);
    }
    poke(loop->wake_fd);
    return 0;
}

int p4r_ioloop_inject(p4r_ioloop *loop, uint32_t in_port, const uint8_t *frame, uint32_t len) {
    return enqueue(loop, in_port, frame, len, 0);
}

int p4r_ioloop_transmit(p4r_ioloop *loop, uint32_t out_port, const uint8_t *frame, uint32_t len) {
    return enqueue(loop, out_port, frame, len, 1);
}

int p4r_ioloop_cpu_fd(p4r_ioloop *loop) { return loop->cpu_fd; }

int p4r_ioloop_cpu_pop(p4r_ioloop *loop, uint32_t *port, uint8_t *buf) {
    struct qitem it;
    if (fifo_pop(&loop->cpu, &it)) return -1;
    uint32_t len = it.len <= P4R_MAX_FRAME ? it.len : P4R_MAX_FRAME;
    memcpy(buf, it.data, len);
    *port = it.port;
    free(it.data);
    return (int)len;
}

int p4r_ioloop_port_counters(p4r_ioloop *loop, uint32_t number, p4r_port_counters *out) {
    struct port *p = number <= P4R_MAX_PORT ? loop->by_number[number] : NULL;
    if (!p) return -1;
    copy_counters(&p->c, out);
    return 0;
}

int p4r_ioloop_adapter_counters(p4r_ioloop *loop, p4r_port_counters *out) {
    if (!loop->adapter) return -1;
    copy_counters(&loop->adapter->c, out);
    return 0;
}

void p4r_ioloop_stats(p4r_ioloop *loop, p4r_loop_stats *out) {
    out->batches = LOAD(loop->stats.batches);
    out->handled = LOAD(loop->stats.handled);
    out->handler_failed = LOAD(loop->stats.handler_failed);
    out->no_handler = LOAD(loop->stats.no_handler);
    out->no_such_port = LOAD(loop->stats.no_such_port);
    out->cpu_queued = LOAD(loop->stats.cpu_queued);
    out->cpu_dropped = LOAD(loop->stats.cpu_dropped);
    out->inject_dropped = LOAD(loop->stats.inject_dropped);
    out->gso_sends = LOAD(loop->stats.gso_sends);
    out->gro_receives = LOAD(loop->stats.gro_receives);
    out->gso_refused = LOAD(loop->stats.gso_refused);
}
