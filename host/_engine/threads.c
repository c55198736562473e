/* The native driver with several threads over disjoint slot ranges of one call
   (engine.h; docs/host.md, "Several driver threads").

   The call is split into T cores (Core objects made by host/protocol/native.py), core t
   owning the slots [lo_t, hi_t) of the window (contiguous, ascending, together every
   active slot). A slot's blocks, its set, its result rows, its agreed exponents and its
   timers belong to its core alone, so the cores share the call's arrays without a lock:
   each writes only its own slots' elements. Each core is the one-call state machine of
   machine.c restricted to its range, run by its own thread, which sends its own packets
   on the rank's one socket (sendmmsg from several threads is safe; the order that the
   switch needs, one slot's packets in order, is a per-slot order and so a per-thread one).

   A rank registers one address, so every result arrives on that one socket. Its main
   reader is thread 0 (the caller's thread): it reads every ready datagram with recvmmsg,
   runs the core on its own slots' results, and hands each other result to its slot's
   thread through that thread's inbox (a mutex-guarded list of packets and an eventfd to
   wake it), whatever it is (a datagram too short to name a slot, or naming a slot no core
   owns, is thread 0's: core 0 counts it as the one core would). The other threads wait on
   their eventfd, and read the socket themselves (routing alike) only when one of their
   timers is due. The inbox is swapped out whole under the lock, so the lock is held for a
   memcpy per packet on one side and a pointer swap on the other.

   The call ends when every core is done, or when one fails (a stuck slot: timeout) or
   breaks (a protocol error): then every thread stops, as the one core stops all its
   slots at once, and the other cores stay as they were (running), to be resumed with the
   failed one. Each run is bounded by `budget` (the runner's cancel look), after which
   every thread returns and the next run starts them again (mode 2). */

#include "engine.h"
#include "udpio.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

typedef struct {
    uint8_t *buf;       /* len packets of `cap` bytes */
    Py_ssize_t *lens;
    Py_ssize_t len, cap_pkts;
} Packets;

typedef struct Group Group;

typedef struct {
    Group *g;
    int t;
    Core *c;
    Sink k;
    int counted_end;   /* this core's end was counted in g->open / g->stop */
    IoCounters io;
    int off;               /* this thread's UDP offloads (udpio.h): GSO may drop out */
    int rc, os_error;
    pthread_mutex_t lock;  /* guards inbox */
    Packets inbox, spare;  /* packets routed here by thread 0; spare: the one being read */
    int efd;               /* eventfd: wakes this thread */
    pthread_t th;
    int started;
} Worker;

struct Group {
    int fd, mode, nthreads;
    double until;
    Py_ssize_t cap;   /* bytes per received datagram buffer: pkt_cap + 1 */
    int off;          /* the socket's UDP offloads for this run (udpio.h) */
    Worker *w;
    int stop;         /* atomic: a core failed or broke, or out of memory */
    int open;         /* atomic: cores not done */
    double t0;        /* the clock at the start: every core's start or resume time */
    pthread_mutex_t fail_lock;  /* guards failed and fail_time */
    int failed;       /* a core's slot gave up, at fail_time */
    double fail_time;
};

static int load(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

static void wake(Worker *w)
{
    uint64_t one = 1;
    ssize_t r = write(w->efd, &one, sizeof one); /* only fails when the counter is full */
    (void)r;
}

static void stop_all(Group *g)
{
    __atomic_store_n(&g->stop, 1, __ATOMIC_RELEASE);
    for (int t = 0; t < g->nthreads; t++)
        wake(&g->w[t]);
}

/* After each event of worker w's core: count its end once. */
static void note_end(Worker *w)
{
    if (!w->k.ended || w->counted_end)
        return;
    w->counted_end = 1;
    if (w->k.ended == END_DONE) {
        if (__atomic_sub_fetch(&w->g->open, 1, __ATOMIC_ACQ_REL) == 0)
            stop_all(w->g); /* every core is done: wake everyone to return */
    } else {
        stop_all(w->g); /* a timeout or a protocol error ends the whole call */
    }
}

static int packets_push(Packets *p, const uint8_t *d, Py_ssize_t len, Py_ssize_t cap)
{
    if (p->len == p->cap_pkts) {
        Py_ssize_t n = p->cap_pkts ? 2 * p->cap_pkts : 128;
        uint8_t *b = PyMem_RawRealloc(p->buf, (size_t)(n * cap));
        if (!b)
            return -1;
        p->buf = b;
        Py_ssize_t *l = PyMem_RawRealloc(p->lens, (size_t)n * sizeof *l);
        if (!l)
            return -1;
        p->lens = l;
        p->cap_pkts = n;
    }
    memcpy(p->buf + p->len * cap, d, (size_t)len);
    p->lens[p->len++] = len;
    return 0;
}

/* Hand a datagram to worker w; returns 1 when w must be woken (its inbox was empty), 0,
   or -1 out of memory. A packet pushed after the owner swapped its inbox out finds it
   empty and wakes it again, so no packet waits without a wake-up pending. */
static int route(Worker *w, const uint8_t *d, Py_ssize_t len, Py_ssize_t cap)
{
    pthread_mutex_lock(&w->lock);
    int was_empty = w->inbox.len == 0;
    int rc = packets_push(&w->inbox, d, len, cap);
    pthread_mutex_unlock(&w->lock);
    return rc < 0 ? -1 : was_empty;
}

/* The worker owning slot field s (cores in ascending ranges); thread 0 for a slot no core
   owns. */
static int owner(const Group *g, Py_ssize_t s)
{
    for (int t = 0; t < g->nthreads; t++)
        if (s >= g->w[t].c->lo && s < g->w[t].c->hi)
            return t;
    return 0;
}

static int running(const Worker *w)
{
    return !load(&w->g->stop) && load(&w->g->open) > 0;
}

/* The packets thread 0 routed here since the last look, then the core on each. */
static int drain_inbox(Worker *w)
{
    uint64_t v;
    ssize_t r = read(w->efd, &v, sizeof v); /* clears the wake-up; EAGAIN when none */
    (void)r;
    pthread_mutex_lock(&w->lock);
    Packets tmp = w->inbox;
    w->inbox = w->spare;
    w->spare = tmp;
    pthread_mutex_unlock(&w->lock);
    Packets *p = &w->spare;
    int rc = 0;
    if (p->len) {
        double now = mono();
        for (Py_ssize_t i = 0; i < p->len && rc == 0 && running(w); i++) {
            rc = ev_packet(w->c, p->buf + i * w->g->cap, p->lens[i], now, &w->k);
            note_end(w);
        }
    }
    p->len = 0; /* what was left after the call ended is dropped, as the one core does */
    return rc;
}

/* Every ready datagram: this thread's slots' ones to its core, the others to their
   threads. Thread 0 does it whenever the socket is readable; another thread only before
   it runs its own due timers, so that a result already in the socket is never taken for
   a lost one because thread 0 was not on a CPU (the one-thread driver too reads what is
   ready before it runs its timers). */
static int receive(Worker *w, uint8_t *rbuf)
{
    Group *g = w->g;
    RxBatch b;
    if (rx_batch(g->fd, g->off, rbuf, g->cap, &b, &w->io) <= 0)
        return 0;
    uint8_t wake_mask[MAX_THREADS] = {0};
    double now = mono();
    int rc = 0;
    for (int i = 0; i < b.n && rc == 0 && running(w); i++) {
        const uint8_t *d;
        Py_ssize_t len;
        for (Py_ssize_t j = 0; rc == 0 && running(w) && (len = rx_datagram(&b, i, j, g->cap, &d)) >= 0;
             j++) {
            w->io.received += 1;
            w->io.bytes_received += len;
            int t = len >= HEADER_BYTES
                        ? owner(g, (Py_ssize_t)((((uint32_t)d[4] << 8) | d[5]) & 0x7FFF))
                        : 0;
            if (t == w->t) {
                rc = ev_packet(w->c, d, len, now, &w->k);
                note_end(w);
                continue;
            }
            int rr = route(&g->w[t], d, len, g->cap);
            if (rr < 0)
                rc = -1;
            else if (rr)
                wake_mask[t] = 1;
        }
    }
    for (int t = 0; t < g->nthreads; t++)
        if (wake_mask[t])
            wake(&g->w[t]);
    return rc;
}

static void *work(void *arg)
{
    Worker *w = arg;
    Group *g = w->g;
    Core *c = w->c;
    uint8_t *rbuf = NULL;
    int rc = 0;
    w->off = g->off;
    rbuf = PyMem_RawMalloc(rx_buffer_bytes(g->off, g->cap));
    if (!rbuf)
        rc = -1;
    /* one start time for every core, as one core starts every slot at one `now`: the
       slots' deadlines, and so the moment they give up, are the same in every thread */
    double now = g->t0;
    if (rc == 0 && g->mode == 0)
        rc = ev_start(c, now, &w->k);
    else if (rc == 0 && g->mode == 1 && (c->state == ST_FAILED || c->state == ST_RUNNING))
        rc = ev_resume(c, now, &w->k); /* every outstanding packet again, a fresh budget */
    note_end(w);
    while (rc == 0 && running(w)) {
        int waiting = flush_queue_off(c, g->fd, &w->io, &w->off);
        now = mono();
        if (now >= g->until)
            break;
        double wait = g->until - now;
        if (c->state == ST_RUNNING && c->has_last && c->last_deadline - now < wait)
            wait = c->last_deadline - now;
        struct pollfd p[2] = {{w->efd, POLLIN, 0}, {g->fd, 0, 0}};
        int np = 1;
        if (w->t == 0 || waiting) {
            p[1].events = (short)((w->t == 0 ? POLLIN : 0) | (waiting ? POLLOUT : 0));
            np = 2;
        }
        int ms = wait <= 0 ? 0 : (int)ceil(wait * 1000.0);
        int pr = poll(p, (nfds_t)np, ms);
        if (pr < 0 && errno != EINTR) {
            w->os_error = errno;
            stop_all(g);
            break;
        }
        if (pr > 0 && (p[0].revents & POLLIN))
            rc = drain_inbox(w);
        if (rc == 0 && pr > 0 && w->t == 0 && (p[1].revents & (POLLIN | POLLERR)))
            rc = receive(w, rbuf);
        if (rc == 0 && running(w) && c->state == ST_RUNNING && c->has_last &&
            mono() >= c->last_deadline) {
            if (w->t != 0) /* what is ready first: this thread's results, routed or not */
                rc = drain_inbox(w) < 0 || receive(w, rbuf) < 0 ? -1 : 0;
            now = mono();
            if (rc == 0 && running(w) && c->state == ST_RUNNING && c->has_last &&
                now >= c->last_deadline) {
                rc = ev_timer(c, now, &w->k);
                if (rc == 0 && w->k.ended == END_TIMEOUT) {
                    pthread_mutex_lock(&g->fail_lock);
                    if (!g->failed) {
                        g->failed = 1;
                        g->fail_time = now;
                    }
                    pthread_mutex_unlock(&g->fail_lock);
                }
                note_end(w);
            }
        }
    }
    if (rc == 0 && c->state == ST_RUNNING) {
        /* stopped by another core's timeout: fail too, with the slots stuck by then */
        pthread_mutex_lock(&g->fail_lock);
        int failed = g->failed;
        double when = g->fail_time;
        pthread_mutex_unlock(&g->fail_lock);
        if (failed)
            rc = ev_fail_check(c, when, &w->k);
    }
    if (rc == 0)
        flush_queue_off(c, g->fd, &w->io, &w->off); /* best effort, as the one-thread driver */
    else
        stop_all(g); /* out of memory: every thread returns, the caller raises */
    PyMem_RawFree(rbuf);
    w->rc = rc;
    return NULL;
}

/* After every thread returned: a run that ended on its budget (the call goes on in the
   next run) may have left results that thread 0 routed to a thread after that thread's
   last look at its inbox. They are run now, on the calling thread, in their order, and
   what they queue is sent, so that no result read from the socket is lost between runs
   (a lost one would cost its slot a retransmission). After a timeout or a protocol error
   they are dropped, as the one-thread driver drops the rest of its batch. */
static int leftovers(Group *g)
{
    for (int t = 0; t < g->nthreads; t++) {
        int st = g->w[t].c->state;
        if (st == ST_FAILED || st == ST_BROKEN)
            return 0;
    }
    for (int t = 0; t < g->nthreads; t++) {
        Worker *w = &g->w[t];
        if (w->rc < 0)
            return -1;
        Packets *p = &w->inbox;
        double now = mono();
        int rc = 0;
        for (Py_ssize_t i = 0; i < p->len && rc == 0; i++)
            rc = ev_packet(w->c, p->buf + i * g->cap, p->lens[i], now, &w->k);
        p->len = 0;
        if (rc < 0)
            return -1;
        flush_queue_off(w->c, g->fd, &w->io, &w->off);
    }
    return 0;
}

static void free_packets(Packets *p)
{
    PyMem_RawFree(p->buf);
    PyMem_RawFree(p->lens);
}

/* Run the call's cores on socket fd, one thread each (the caller's thread is thread 0),
   for at most `budget` seconds; mode 0 start, 1 resume, 2 go on. Counters of all threads
   are summed into *io. Returns 0, -1 out of memory (or no thread / eventfd: errno in
   *os_error), with the cores' states telling the call's end. The GIL must be released. */
HIDDEN int drive_group(Core **cores, int nthreads, int fd, int mode, double budget,
                       IoCounters *io, int *os_error)
{
    Group g;
    memset(&g, 0, sizeof g);
    g.fd = fd;
    g.mode = mode;
    g.nthreads = nthreads;
    g.t0 = mono();
    g.until = g.t0 + budget;
    pthread_mutex_init(&g.fail_lock, NULL);
    g.cap = cores[0]->pkt_cap + 1; /* a longer datagram comes back truncated: malformed */
    g.off = offload_begin(fd);
    g.w = PyMem_RawCalloc((size_t)nthreads, sizeof *g.w);
    if (!g.w) {
        offload_end(fd, g.off);
        return -1;
    }
    int open = 0, rc = 0;
    for (int t = 0; t < nthreads; t++) {
        Worker *w = &g.w[t];
        w->g = &g;
        w->t = t;
        w->c = cores[t];
        w->efd = -1;
        open += cores[t]->state != ST_DONE;
        pthread_mutex_init(&w->lock, NULL);
    }
    g.open = open;
    for (int t = 0; t < nthreads && rc == 0; t++) {
        g.w[t].efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        if (g.w[t].efd < 0) {
            *os_error = errno;
            rc = -1;
        }
    }
    for (int t = 1; t < nthreads && rc == 0; t++) {
        int e = pthread_create(&g.w[t].th, NULL, work, &g.w[t]);
        if (e) {
            *os_error = e;
            rc = -1;
            stop_all(&g);
        } else {
            g.w[t].started = 1;
        }
    }
    if (rc == 0)
        work(&g.w[0]);
    for (int t = 1; t < nthreads; t++)
        if (g.w[t].started)
            pthread_join(g.w[t].th, NULL);
    if (rc == 0)
        rc = leftovers(&g);
    for (int t = 0; t < nthreads; t++) {
        Worker *w = &g.w[t];
        if (w->rc < 0)
            rc = -1;
        if (w->os_error && !*os_error)
            *os_error = w->os_error;
        io->sent += w->io.sent;
        io->bytes_sent += w->io.bytes_sent;
        io->received += w->io.received;
        io->bytes_received += w->io.bytes_received;
        io->queued += w->io.queued;
        io->dropped += w->io.dropped;
        for (int i = 0; i < 8 && w->io.err_counts[i]; i++)
            count_error(io, w->io.err_codes[i], w->io.err_counts[i]);
        if (w->efd >= 0)
            close(w->efd);
        pthread_mutex_destroy(&w->lock);
        free_packets(&w->inbox);
        free_packets(&w->spare);
    }
    PyMem_RawFree(g.w);
    pthread_mutex_destroy(&g.fail_lock);
    offload_end(fd, g.off);
    return rc;
}
