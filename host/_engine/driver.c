/* The native driver of one call on one thread (engine.h): Core.run without the GIL. */

#include "engine.h"
#include "udpio.h"

#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

HIDDEN double mono(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t); /* time.monotonic()'s clock */
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

HIDDEN void count_error(IoCounters *io, int code, long long n)
{
    for (int i = 0; i < 8; i++) {
        if (io->err_counts[i] == 0 || io->err_codes[i] == code) {
            io->err_codes[i] = code;
            io->err_counts[i] += n;
            return;
        }
    }
    io->err_counts[7] += n; /* more than 8 kinds of error: lumped with the last */
}

/* ---- UDP segmentation offload (udpio.h) ---- */

#define GSO_SEGS 64              /* datagrams per segmented send (the kernel allows 64 or more) */
#define GSO_PAYLOAD 65507        /* bytes per segmented send: 65535 less the IPv4 and UDP headers */
#define GSO_IOV (BATCH * 16)     /* iovecs per sendmmsg of segmented sends */

static int offload_setting = -1; /* udp_offload_mode: -1 until the environment is read */
static int offload_noted;        /* the one-line notice was written */

HIDDEN int udp_offload_mode(int set)
{
    int cur = __atomic_load_n(&offload_setting, __ATOMIC_RELAXED);
    if (cur < 0) {
        const char *e = getenv("P4REDUCE_UDP_OFFLOAD");
        cur = !(e && (!strcmp(e, "0") || !strcasecmp(e, "off") || !strcasecmp(e, "no") ||
                      !strcasecmp(e, "false")));
    }
    __atomic_store_n(&offload_setting, set < 0 ? cur : set > 0, __ATOMIC_RELAXED);
    return cur;
}

static void note_once(const char *what, int code)
{
    if (__atomic_exchange_n(&offload_noted, 1, __ATOMIC_RELAXED))
        return;
    fprintf(stderr, "p4reduce: UDP %s unavailable (%s); the native driver sends and receives "
                    "one datagram per packet\n", what, strerror(code));
}

HIDDEN int offload_begin(int fd)
{
    int proto = 0, v = 0, one = 1;
    socklen_t len = sizeof proto;
    if (!udp_offload_mode(-1) || getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &len) < 0 ||
        proto != IPPROTO_UDP)
        return 0; /* off, or not a UDP socket (a test's socketpair): nothing to offload */
    int off = 0;
    len = sizeof v;
    if (getsockopt(fd, SOL_UDP, UDP_SEGMENT, &v, &len) == 0)
        off |= OFF_GSO;
    else
        note_once("GSO (UDP_SEGMENT)", errno);
    if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0)
        off |= OFF_GRO;
    else
        note_once("GRO (UDP_GRO)", errno);
    return off;
}

HIDDEN void offload_end(int fd, int off)
{
    int zero = 0;
    if (off & OFF_GRO)
        setsockopt(fd, SOL_UDP, UDP_GRO, &zero, sizeof zero);
}

/* Send the queue in order with sendmmsg, as UdpTransport does: a full buffer (EAGAIN,
   ENOBUFS) leaves the rest queued, in order, for when the socket is writable; an ICMP
   refusal reported on this send is counted and the send retried once; any other error
   is counted and the packet dropped (the timer resends it). Returns whether packets
   are still queued.
   With OFF_GSO in *off: each run of packets of one length (a shorter last one ends it), at
   most GSO_SEGS and GSO_PAYLOAD bytes, is one message with a UDP_SEGMENT of that length; the
   kernel cuts it into exactly the datagrams sent one per message without it, in the same
   order. Errors per message: a full buffer keeps it queued whole; a segmented message the
   kernel refuses turns GSO off and goes again per datagram. */
HIDDEN int flush_queue_off(Core *c, int fd, IoCounters *io, int *off)
{
    struct mmsghdr msgs[BATCH];
    struct iovec iov[GSO_IOV];
    union {
        char buf[CMSG_SPACE(sizeof(uint16_t))];
        struct cmsghdr align;
    } ctl[BATCH];
    int count[BATCH];
    int refused_retry = 0;
    while (c->q_head < c->q_len) {
        int m = 0, v = 0;
        Py_ssize_t j = c->q_head;
        int segs = *off & OFF_GSO ? GSO_SEGS : 1;
        while (j < c->q_len && m < BATCH && v + GSO_SEGS <= GSO_IOV) {
            Py_ssize_t seg = c->q_lens[j], bytes = 0;
            int n = 0;
            struct msghdr *h = &msgs[m].msg_hdr;
            memset(h, 0, sizeof *h);
            h->msg_iov = &iov[v];
            do {
                iov[v].iov_base = c->q_buf + j * c->pkt_cap;
                iov[v].iov_len = (size_t)c->q_lens[j];
                bytes += c->q_lens[j];
                v++, n++, j++;
            } while (seg > 0 && j < c->q_len && n < segs && c->q_lens[j - 1] == seg &&
                     c->q_lens[j] > 0 && c->q_lens[j] <= seg && bytes + c->q_lens[j] <= GSO_PAYLOAD);
            h->msg_iovlen = (size_t)n;
            if (n > 1) {
                uint16_t size = (uint16_t)seg;
                h->msg_control = ctl[m].buf;
                h->msg_controllen = sizeof ctl[m].buf;
                struct cmsghdr *cm = CMSG_FIRSTHDR(h);
                cm->cmsg_level = SOL_UDP;
                cm->cmsg_type = UDP_SEGMENT;
                cm->cmsg_len = CMSG_LEN(sizeof size);
                memcpy(CMSG_DATA(cm), &size, sizeof size);
            }
            count[m++] = n;
        }
        int r = sendmmsg(fd, msgs, (unsigned)m, MSG_DONTWAIT);
        if (r > 0) {
            for (int i = 0; i < r; i++)
                for (int k = 0; k < count[i]; k++) {
                    io->sent += 1;
                    io->bytes_sent += c->q_lens[c->q_head++];
                }
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
        if (count[0] > 1 && (e == EINVAL || e == EIO || e == EOPNOTSUPP || e == EMSGSIZE)) {
            *off &= ~OFF_GSO; /* this route cannot take segmented sends: per datagram */
            note_once("GSO (a segmented send refused)", e);
            continue;
        }
        count_error(io, e, 1);
        if (e == ECONNREFUSED && !refused_retry) {
            refused_retry = 1; /* the error was an earlier datagram's: this one retries */
            continue;
        }
        refused_retry = 0;
        io->dropped += count[0];
        c->q_head += count[0];
    }
    c->q_head = c->q_len = 0;
    c->q_waiting = 0;
    return 0;
}

HIDDEN size_t rx_buffer_bytes(int off, Py_ssize_t cap)
{
    return off & OFF_GRO ? (size_t)GRO_MSGS * GRO_BYTES : (size_t)BATCH * (size_t)cap;
}

HIDDEN int rx_batch(int fd, int off, uint8_t *buf, Py_ssize_t cap, RxBatch *b, IoCounters *io)
{
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } ctl[GRO_MSGS];
    int gro = off & OFF_GRO, n = gro ? GRO_MSGS : BATCH;
    size_t each = gro ? GRO_BYTES : (size_t)cap;
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = buf + (size_t)i * each;
        iov[i].iov_len = each;
        memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
        if (gro) {
            msgs[i].msg_hdr.msg_control = ctl[i].buf;
            msgs[i].msg_hdr.msg_controllen = sizeof ctl[i].buf;
        }
    }
    b->n = 0;
    b->datagrams = 0;
    int r = recvmmsg(fd, msgs, (unsigned)n, MSG_DONTWAIT, NULL);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
        count_error(io, errno, 1); /* e.g. ECONNREFUSED from an ICMP error */
    for (int i = 0; i < r; i++) {
        Py_ssize_t total = msgs[i].msg_len, seg = total > 0 ? total : 1;
        struct msghdr *h = &msgs[i].msg_hdr;
        for (struct cmsghdr *cm = gro ? CMSG_FIRSTHDR(h) : NULL; cm; cm = CMSG_NXTHDR(h, cm)) {
            if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
                int size;
                memcpy(&size, CMSG_DATA(cm), sizeof size);
                if (size > 0 && size < seg)
                    seg = size;
            }
        }
        b->base[i] = iov[i].iov_base;
        b->total[i] = total;
        b->seg[i] = seg;
        b->datagrams += total > seg ? (total + seg - 1) / seg : 1;
        b->n = i + 1;
    }
    return b->n;
}

/* Receive coalescing. Over a shaped link (the testbed's 10 or 100 Mbit/s) results arrive
   one by one, a few hundred microseconds apart, and a driver blocked in poll is woken for
   each: the sender's softirq pays a cross-CPU wakeup per datagram (on these VMs about 13 us,
   a third of the switch's CPU at 8 workers, 100 Mbit/s). So while results arrive at least
   COALESCE_MIN_GAP apart (an average over the call) and this socket's own packets are
   still queued on the way out (SIOCOUTQ: bytes sent but not yet handed to the device, i.e.
   waiting in the link's qdisc), the driver sleeps on a timer for COALESCE_BATCH gaps instead
   of blocking in poll (at most COALESCE_MAX, at most half the time the queue takes to drain
   at that pace, never past the next retransmission timer), then takes what came with one
   recvmmsg: nobody is woken for a datagram that waits in the socket buffer, and the queued
   packets keep the link busy meanwhile. Without such a queue (loopback, a peer that answers
   in bursts) a pause would only delay the next sends, so the driver never pauses there. A
   pause that brings nothing makes the next wait a blocking poll again. Only when the core
   sees a result changes, never what it sees. */
#define COALESCE_MIN_GAP 100e-6
#define COALESCE_BATCH 4.0
#define COALESCE_MAX 1e-3

/* How long the driver may sleep before reading (0: do not). */
static double coalesce_pause(int fd, double gap, double wait, Py_ssize_t pkt_cap)
{
    if (gap < COALESCE_MIN_GAP || wait <= 0)
        return 0;
    int queued = 0;
    if (ioctl(fd, SIOCOUTQ, &queued) < 0 || queued <= 0)
        return 0;
    double drain = (double)queued / (double)(pkt_cap > 0 ? pkt_cap : 1) * gap;
    double pause = COALESCE_BATCH * gap;
    if (pause > COALESCE_MAX)
        pause = COALESCE_MAX;
    if (pause > drain / 2)
        pause = drain / 2;
    if (pause > wait)
        pause = wait;
    return pause >= COALESCE_MIN_GAP ? pause : 0;
}

static void pause_for(double seconds)
{
    struct timespec t = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&t, &t) < 0 && errno == EINTR) {
    }
}

/* Run the call on socket fd for at most `budget` seconds (mode 0: start, 1: resume,
   2: go on), the GIL released: poll (POLLOUT too while sends wait), recvmmsg every ready
   result into a buffer of its own (BATCH buffers of pkt_cap + 1 bytes: a longer datagram
   comes back truncated, seen as malformed; with UDP GRO whole-datagram buffers, split and
   truncated alike, udpio.h), the core on each, the timers when due, sendmmsg what the core
   queued (with UDP GSO, runs of packets as segmented sends). Returns the core's status (-1:
   out of memory, then before the call starts or resumes); the call's end is in k->ended, a
   failed poll's errno in *os_error. */
HIDDEN int drive(Core *c, int fd, int mode, double budget, IoCounters *io, Sink *k,
                 int *os_error)
{
    const Py_ssize_t cap = c->pkt_cap + 1;
    int off = offload_begin(fd);
    uint8_t *buf = PyMem_RawMalloc(rx_buffer_bytes(off, cap));
    if (!buf) {
        offload_end(fd, off);
        return -1;
    }
    int rc = 0;
    double now = mono(), until = now + budget;
    if (mode == 0)
        rc = ev_start(c, now, k);
    else if (mode == 1)
        rc = ev_resume(c, now, k);
    RxBatch b;
    double last_rx = 0, gap = 0; /* the results' spacing in this call (an average) */
    int paused = 0;              /* the last wait was a coalescing pause */
    while (rc == 0 && !k->ended) {
        int waiting = flush_queue_off(c, fd, io, &off);
        now = mono();
        if (now >= until)
            break;
        double wait = until - now;
        if (c->has_last && c->last_deadline - now < wait)
            wait = c->last_deadline - now;
        int ms = wait <= 0 ? 0 : (int)ceil(wait * 1000.0);
        double pause = paused || waiting ? 0 : coalesce_pause(fd, gap, wait, c->pkt_cap);
        if (pause > 0) {
            pause_for(pause);
            paused = 1;
            ms = 0; /* take what came; a pause that brought nothing blocks next time */
        } else {
            paused = 0;
        }
        struct pollfd p = {fd, (short)(POLLIN | (waiting ? POLLOUT : 0)), 0};
        int pr = poll(&p, 1, ms);
        if (pr < 0 && errno != EINTR) {
            *os_error = errno;
            break;
        }
        if (pr > 0 && (p.revents & POLLIN)) {
            if (rx_batch(fd, off, buf, cap, &b, io) > 0) {
                now = mono();
                if (last_rx > 0) {
                    double sample = (now - last_rx) / (double)b.datagrams;
                    gap = gap > 0 ? 0.75 * gap + 0.25 * sample : sample;
                }
                last_rx = now;
                paused = 0; /* it brought something: pause again while results trickle */
                for (int i = 0; i < b.n && rc == 0 && !k->ended; i++) {
                    const uint8_t *d;
                    Py_ssize_t len;
                    for (Py_ssize_t j = 0; rc == 0 && !k->ended &&
                                           (len = rx_datagram(&b, i, j, cap, &d)) >= 0; j++) {
                        io->received += 1;
                        io->bytes_received += len;
                        rc = ev_packet(c, d, len, now, k);
                    }
                }
            }
        }
        if (rc == 0 && !k->ended && c->has_last) {
            now = mono();
            if (now >= c->last_deadline)
                rc = ev_timer(c, now, k);
        }
    }
    if (rc == 0)
        flush_queue_off(c, fd, io, &off); /* best effort, as the Python runner */
    offload_end(fd, off);
    PyMem_RawFree(buf);
    return rc;
}
