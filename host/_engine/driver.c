/* The native driver of one call on one thread (engine.h): Core.run without the GIL. */

#include "engine.h"

#include <errno.h>
#include <linux/sockios.h>
#include <poll.h>
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

/* Send the queue in order with sendmmsg, as UdpTransport does: a full buffer (EAGAIN,
   ENOBUFS) leaves the rest queued, in order, for when the socket is writable; an ICMP
   refusal reported on this send is counted and the send retried once; any other error
   is counted and the packet dropped (the timer resends it). Returns whether packets
   are still queued. */
HIDDEN int flush_queue(Core *c, int fd, IoCounters *io)
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
        count_error(io, e, 1);
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
   result into rbuf (BATCH buffers of pkt_cap + 1 bytes: a longer datagram comes back
   truncated, seen as malformed), the core on each, the timers when due, sendmmsg what the
   core queued. Returns the core's status (-1: out of memory); the call's end is in
   k->ended, a failed poll's errno in *os_error. */
HIDDEN int drive(Core *c, int fd, int mode, double budget, uint8_t *rbuf, IoCounters *io,
                 Sink *k, int *os_error)
{
    const Py_ssize_t cap = c->pkt_cap + 1;
    int rc = 0;
    double now = mono(), until = now + budget;
    if (mode == 0)
        rc = ev_start(c, now, k);
    else if (mode == 1)
        rc = ev_resume(c, now, k);
    struct mmsghdr msgs[BATCH];
    struct iovec iov[BATCH];
    double last_rx = 0, gap = 0; /* the results' spacing in this call (an average) */
    int paused = 0;              /* the last wait was a coalescing pause */
    while (rc == 0 && !k->ended) {
        int waiting = flush_queue(c, fd, io);
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
            for (int i = 0; i < BATCH; i++) {
                iov[i].iov_base = rbuf + i * cap;
                iov[i].iov_len = (size_t)cap;
                memset(&msgs[i].msg_hdr, 0, sizeof msgs[i].msg_hdr);
                msgs[i].msg_hdr.msg_iov = &iov[i];
                msgs[i].msg_hdr.msg_iovlen = 1;
            }
            int r = recvmmsg(fd, msgs, BATCH, MSG_DONTWAIT, NULL);
            if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                count_error(io, errno, 1); /* e.g. ECONNREFUSED from an ICMP error */
            if (r > 0) {
                now = mono();
                if (last_rx > 0) {
                    double sample = (now - last_rx) / r;
                    gap = gap > 0 ? 0.75 * gap + 0.25 * sample : sample;
                }
                last_rx = now;
                paused = 0; /* it brought something: pause again while results trickle */
                for (int i = 0; i < r && rc == 0 && !k->ended; i++) {
                    Py_ssize_t len = msgs[i].msg_len;
                    io->received += 1;
                    io->bytes_received += len;
                    rc = ev_packet(c, rbuf + i * cap, len, now, k);
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
        flush_queue(c, fd, io); /* best effort, as the Python runner */
    return rc;
}
