/* The kernel's floor for the switch benchmarks: the same UDP exchanges as an aggregation
 * switch, with recvmmsg/sendmmsg and no P4. Compiled by bench/floor.py at bench run time.
 *
 *   reflector serve PORT IP:PORT,IP:PORT,...
 *       One UDP socket on 127.0.0.1:PORT (0: any; the chosen port is printed as
 *       "ready PORT"). Datagrams from the listed peers (the workers) are counted; every
 *       N-th one (N = the number of peers) is sent to all N peers, as the switch multicasts
 *       a slot's result once its N contributions are in, marked as a result as the switch
 *       marks it (FLAG_RESULT; FLAG_END on a sparse packet whose next is NEXT_END), so that
 *       with one peer it answers a worker's protocol engine like a one-worker switch. Others
 *       are dropped. Runs until stdin closes or SIGTERM.
 *
 *   reflector rawserve mcast|echo FD,FD,...
 *       The same floor on raw interfaces (bench/sidebyside.py, veth pairs): the inherited
 *       descriptors are AF_PACKET sockets, each bound to one of the N switch-side interfaces.
 *       mcast: every N-th IPv4 frame received (on any of them) is sent, unchanged, out of all
 *       N, as the switch multicasts a slot's result; echo: every IPv4 frame goes back out of
 *       the interface it came in on (a port-to-port forwarding). Prints "ready 0"; runs
 *       until stdin closes or SIGTERM.
 *
 *   reflector client IP:PORT FILE ROUNDS WINDOW FD,FD,...
 *       The load generator: N workers, one already bound UDP socket each (inherited file
 *       descriptors, the addresses the switch knows). With "raw" for IP:PORT the descriptors
 *       are AF_PACKET sockets bound to the workers' interfaces, FILE holds whole Ethernet
 *       frames, and only IPv4 frames count as results (nothing else the kernel may put on
 *       a link, such as IPv6 neighbour discovery). FILE holds, per worker, CYCLE
 *       aggregation packets of LEN bytes (header: uint32 N, CYCLE, LEN, little-endian);
 *       worker r sends packet r[t % CYCLE] for rounds t = 0 .. ROUNDS-1, at most WINDOW
 *       rounds ahead of the results it has received. Prints one JSON line: seconds, packets
 *       in (N * ROUNDS), results received. Exits 1 if results stop coming for 10 s (a lost
 *       packet stalls the window: there is no retransmission here).
 *
 *   reflector -g serve ... / reflector -g client IP:PORT ...
 *       The same over UDP GSO/GRO (the floor of p4reduce's offload path, docs/native.md):
 *       sockets with UDP_GRO read several datagrams of one sender as one, split here; the
 *       results for a peer, and a worker's window, leave as UDP_SEGMENT sends (runs of one
 *       length, at most 64 datagrams and 65507 bytes each). Same datagrams, fewer calls. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BATCH 64
#define MAXW 64
#define MAXLEN 65536
#define GSO_SEGS 64
#define GSO_PAYLOAD 65507
#define MAXRES 65536 /* datagrams one GRO batch may hold */

static int gso; /* -g: UDP GSO/GRO */
static void die_gro(void);

typedef union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
} Ctl;

static void gro_on(int fd) {
    int one = 1;
    if (setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one)) die_gro();
}

/* The datagram size of received message h (its length without a UDP_GRO cmsg). */
static unsigned gro_size(struct msghdr *h, unsigned len) {
    unsigned seg = len ? len : 1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(h); cm; cm = CMSG_NXTHDR(h, cm))
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO) {
            int v;
            memcpy(&v, CMSG_DATA(cm), sizeof v);
            if (v > 0 && (unsigned)v < seg) seg = (unsigned)v;
        }
    return seg;
}

/* Messages for datagrams iov[0 .. n) to `to` (NULL: connected or bound): with -g, runs of one
 * length (a shorter last one ends a run) as UDP_SEGMENT sends; else one datagram each.
 * Returns the messages written. */
static int gso_msgs(struct iovec *iov, int n, struct sockaddr_in *to, struct mmsghdr *m,
                    Ctl *ctl) {
    int segs = gso ? GSO_SEGS : 1;
    int nm = 0;
    for (int i = 0; i < n; nm++) {
        size_t seg = iov[i].iov_len, bytes = 0;
        int c = 0;
        m[nm].msg_hdr = (struct msghdr){.msg_name = to, .msg_namelen = to ? sizeof *to : 0,
                                        .msg_iov = &iov[i]};
        do {
            bytes += iov[i].iov_len;
            c++, i++;
        } while (i < n && c < segs && iov[i - 1].iov_len == seg && iov[i].iov_len > 0 &&
                 iov[i].iov_len <= seg && bytes + iov[i].iov_len <= GSO_PAYLOAD);
        m[nm].msg_hdr.msg_iovlen = c;
        if (c > 1) {
            uint16_t size = (uint16_t)seg;
            m[nm].msg_hdr.msg_control = ctl[nm].buf;
            m[nm].msg_hdr.msg_controllen = CMSG_SPACE(sizeof size);
            struct cmsghdr *cm = CMSG_FIRSTHDR(&m[nm].msg_hdr);
            cm->cmsg_level = SOL_UDP;
            cm->cmsg_type = UDP_SEGMENT;
            cm->cmsg_len = CMSG_LEN(sizeof size);
            memcpy(CMSG_DATA(cm), &size, sizeof size);
        }
    }
    return nm;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int parse_addr(const char *text, struct sockaddr_in *out) {
    char host[64];
    const char *colon = strrchr(text, ':');
    if (!colon || (size_t)(colon - text) >= sizeof host) return -1;
    memcpy(host, text, colon - text);
    host[colon - text] = 0;
    memset(out, 0, sizeof *out);
    out->sin_family = AF_INET;
    out->sin_port = htons((uint16_t)atoi(colon + 1));
    return inet_pton(AF_INET, host, &out->sin_addr) == 1 ? 0 : -1;
}

static void die(const char *what) {
    fprintf(stderr, "reflector: %s: %s\n", what, strerror(errno));
    exit(2);
}

static void die_gro(void) { die("UDP_GRO (-g needs UDP GSO/GRO)"); }

/* ---------------------------------------------------------------------------- serve */

/* sendmmsg all n messages; one that fails (a refused peer, a full queue) is skipped, its
 * copy lost, as a switch counts it and goes on. */
static void send_lossy(int fd, struct mmsghdr *m, int n) {
    for (int off = 0; off < n;) {
        int r = sendmmsg(fd, m + off, n - off, 0);
        if (r < 0) {
            if (errno == EINTR) continue;
            off++;
            continue;
        }
        off += r;
    }
}

/* serve's loop: datagrams counted one by one (with -g, super-datagrams split); each peer's
 * results of a batch leave together (with -g, as segmented sends). */
static int serve_loop(int fd, struct sockaddr_in *peers, int n) {
    static uint8_t data[BATCH][MAXLEN];
    static Ctl rctl[BATCH], sctl[MAXRES];
    static struct iovec res[MAXRES];
    static struct mmsghdr sm[MAXRES];
    struct mmsghdr rm[BATCH];
    struct iovec riov[BATCH];
    struct sockaddr_in from[BATCH];
    uint64_t count = 0;
    struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
    for (;;) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        if (pf[1].revents) return 0;
        for (int i = 0; i < BATCH; i++) {
            riov[i] = (struct iovec){data[i], MAXLEN};
            rm[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof from[i],
                                            .msg_iov = &riov[i], .msg_iovlen = 1,
                                            .msg_control = rctl[i].buf,
                                            .msg_controllen = sizeof rctl[i].buf};
        }
        int got = recvmmsg(fd, rm, BATCH, MSG_DONTWAIT, NULL);
        if (got <= 0) continue;
        int nr = 0;
        for (int i = 0; i < got; i++) {
            int known = 0;
            for (int p = 0; p < n && !known; p++)
                known = from[i].sin_addr.s_addr == peers[p].sin_addr.s_addr &&
                        from[i].sin_port == peers[p].sin_port;
            if (!known) continue;
            unsigned total = rm[i].msg_len, seg = gro_size(&rm[i].msg_hdr, total);
            for (unsigned at = 0; at < total || (at == 0 && total == 0); at += seg) {
                unsigned len = total - at < seg ? total - at : seg;
                uint8_t *h = data[i] + at;
                if (++count % n || nr == MAXRES) continue;
                if (len >= 20) {
                    h[0] |= 0x1;
                    if (h[0] >> 4 == 2 && !memcmp(h + 16, "\xff\xff\xff\xff", 4)) h[0] |= 0x8;
                }
                res[nr++] = (struct iovec){h, len};
                if (total == 0) break;
            }
        }
        for (int p = 0; p < n && nr; p++) {
            int nm = gso_msgs(res, nr, &peers[p], sm, sctl);
            send_lossy(fd, sm, nm);
        }
    }
}

static int serve(int port, char *peers_text) {
    struct sockaddr_in peers[MAXW];
    int n = 0;
    for (char *tok = strtok(peers_text, ","); tok && n < MAXW; tok = strtok(NULL, ","))
        if (parse_addr(tok, &peers[n++])) {
            fprintf(stderr, "reflector: bad peer %s\n", tok);
            return 2;
        }
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0) die("socket");
    int buf = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
    struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
    if (bind(fd, (struct sockaddr *)&me, sizeof me)) die("bind");
    socklen_t len = sizeof me;
    getsockname(fd, (struct sockaddr *)&me, &len);
    if (gso) gro_on(fd);
    printf("ready %d\n", ntohs(me.sin_port));
    fflush(stdout);
    return serve_loop(fd, peers, n);
}

static int is_ipv4(const uint8_t *frame, unsigned len) {
    return len >= 14 && frame[12] == 0x08 && frame[13] == 0x00;
}

static int rawserve(const char *mode, char *fds_text) {
    int fds[MAXW], n = 0, echo = !strcmp(mode, "echo");
    if (!echo && strcmp(mode, "mcast")) {
        fprintf(stderr, "reflector: rawserve mode %s: mcast or echo\n", mode);
        return 2;
    }
    for (char *tok = strtok(fds_text, ","); tok && n < MAXW; tok = strtok(NULL, ","))
        fds[n++] = atoi(tok);
    printf("ready 0\n");
    fflush(stdout);
    static uint8_t data[BATCH][MAXLEN];
    struct mmsghdr rm[BATCH];
    struct iovec riov[BATCH];
    static struct mmsghdr sm[MAXW][BATCH];
    static struct iovec siov[MAXW][BATCH];
    int ns[MAXW];
    uint64_t count = 0;
    struct pollfd pf[MAXW + 1];
    for (int p = 0; p < n; p++) pf[p] = (struct pollfd){.fd = fds[p], .events = POLLIN};
    pf[n] = (struct pollfd){.fd = 0, .events = POLLIN};
    for (;;) {
        if (poll(pf, n + 1, -1) < 0) {
            if (errno == EINTR) continue;
            die("poll");
        }
        if (pf[n].revents) return 0; /* stdin closed: the bench is done */
        for (int in = 0; in < n; in++) {
            if (!(pf[in].revents & POLLIN)) continue;
            for (int i = 0; i < BATCH; i++) {
                riov[i] = (struct iovec){data[i], MAXLEN};
                rm[i].msg_hdr = (struct msghdr){.msg_iov = &riov[i], .msg_iovlen = 1};
            }
            int got = recvmmsg(fds[in], rm, BATCH, MSG_DONTWAIT, NULL);
            if (got <= 0) continue;
            memset(ns, 0, sizeof ns);
            for (int i = 0; i < got; i++) {
                if (!is_ipv4(data[i], rm[i].msg_len)) continue;
                if (echo) {
                    siov[in][ns[in]] = (struct iovec){data[i], rm[i].msg_len};
                    sm[in][ns[in]].msg_hdr = (struct msghdr){.msg_iov = &siov[in][ns[in]],
                                                             .msg_iovlen = 1};
                    ns[in]++;
                    continue;
                }
                if (++count % n) continue;
                for (int p = 0; p < n; p++) {
                    siov[p][ns[p]] = (struct iovec){data[i], rm[i].msg_len};
                    sm[p][ns[p]].msg_hdr = (struct msghdr){.msg_iov = &siov[p][ns[p]],
                                                           .msg_iovlen = 1};
                    ns[p]++;
                }
            }
            for (int p = 0; p < n; p++) send_lossy(fds[p], sm[p], ns[p]);
        }
    }
}

/* ---------------------------------------------------------------------------- client */

static int client(const char *target_text, const char *file, long rounds, int window,
                  char *fds_text) {
    struct sockaddr_in target;
    int raw = !strcmp(target_text, "raw"); /* bound packet sockets: no destination address */
    if (!raw && parse_addr(target_text, &target)) {
        fprintf(stderr, "reflector: bad target %s\n", target_text);
        return 2;
    }
    int fds[MAXW], n = 0;
    for (char *tok = strtok(fds_text, ","); tok && n < MAXW; tok = strtok(NULL, ","))
        fds[n++] = atoi(tok);
    FILE *f = fopen(file, "rb");
    if (!f) die(file);
    uint32_t head[3];
    if (fread(head, 4, 3, f) != 3) die("packet file header");
    uint32_t nw = head[0], cycle = head[1], len = head[2];
    if ((int)nw != n || cycle == 0 || len == 0 || len > MAXLEN) {
        fprintf(stderr, "reflector: packet file for %u workers, %d sockets given\n", nw, n);
        return 2;
    }
    uint8_t *pkts = malloc((size_t)nw * cycle * len);
    if (!pkts || fread(pkts, len, (size_t)nw * cycle, f) != (size_t)nw * cycle) die("packets");
    fclose(f);

    long sent[MAXW] = {0}, got[MAXW] = {0};
    static uint8_t sink[BATCH][MAXLEN];
    struct mmsghdr rm[BATCH], sm[BATCH];
    struct iovec riov[BATCH], siov[BATCH];
    static Ctl rctl[BATCH], sctl[BATCH];
    if (gso && raw) {
        fprintf(stderr, "reflector: -g is for UDP, not raw sockets\n");
        return 2;
    }
    if (gso)
        for (int r = 0; r < n; r++) gro_on(fds[r]);
    struct pollfd pf[MAXW];
    for (int r = 0; r < n; r++) pf[r] = (struct pollfd){.fd = fds[r], .events = POLLIN};
    double t0 = now(), last = t0;
    long done = 0;
    while (done < n) {
        for (int r = 0; r < n; r++) { /* send what each worker's window allows */
            int k = 0;
            while (sent[r] + k < rounds && sent[r] + k - got[r] < window && k < BATCH) {
                uint8_t *p = pkts + ((size_t)r * cycle + (size_t)((sent[r] + k) % cycle)) * len;
                siov[k++] = (struct iovec){p, len};
            }
            int nm = gso_msgs(siov, k, raw ? NULL : &target, sm, sctl);
            for (int off = 0; off < nm;) {
                int s = sendmmsg(fds[r], sm + off, nm - off, 0);
                if (s < 0) {
                    if (errno == EINTR) continue;
                    die("sendmmsg");
                }
                off += s;
            }
            sent[r] += k;
        }
        int ready = poll(pf, n, 100);
        if (ready < 0 && errno != EINTR) die("poll");
        for (int r = 0; r < n && ready > 0; r++) {
            if (!(pf[r].revents & POLLIN)) continue;
            for (int i = 0; i < BATCH; i++) {
                riov[i] = (struct iovec){sink[i], MAXLEN};
                rm[i].msg_hdr = (struct msghdr){.msg_iov = &riov[i], .msg_iovlen = 1};
                if (gso) {
                    rm[i].msg_hdr.msg_control = rctl[i].buf;
                    rm[i].msg_hdr.msg_controllen = sizeof rctl[i].buf;
                }
            }
            int g = recvmmsg(fds[r], rm, BATCH, MSG_DONTWAIT, NULL);
            if (gso && g > 0) { /* results are datagrams: a super-datagram counts its own */
                int d = 0;
                for (int i = 0; i < g; i++) {
                    unsigned total = rm[i].msg_len, seg = gro_size(&rm[i].msg_hdr, total);
                    d += total > seg ? (int)((total + seg - 1) / seg) : 1;
                }
                g = d;
            }
            if (raw && g > 0) { /* count results only: IPv4 frames */
                int ip = 0;
                for (int i = 0; i < g; i++) ip += is_ipv4(sink[i], rm[i].msg_len);
                g = ip;
            }
            if (g > 0) {
                if (got[r] < rounds && got[r] + g >= rounds) done++;
                got[r] += g;
                last = now();
            }
        }
        if (now() - last > 10.0) {
            long missing = 0;
            for (int r = 0; r < n; r++) missing += rounds > got[r] ? rounds - got[r] : 0;
            fprintf(stderr, "reflector: stalled, %ld results missing (a packet was lost)\n",
                    missing);
            return 1;
        }
    }
    double secs = last - t0;
    long results = 0;
    for (int r = 0; r < n; r++) results += got[r];
    printf("{\"seconds\": %.6f, \"packets_in\": %ld, \"results\": %ld, \"workers\": %d}\n", secs,
           (long)n * rounds, results, n);
    free(pkts);
    return 0;
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    if (argc > 1 && !strcmp(argv[1], "-g")) {
        gso = 1;
        argv++;
        argc--;
    }
    if (argc == 4 && !strcmp(argv[1], "serve")) return serve(atoi(argv[2]), argv[3]);
    if (argc == 4 && !strcmp(argv[1], "rawserve")) return rawserve(argv[2], argv[3]);
    if (argc == 7 && !strcmp(argv[1], "client"))
        return client(argv[2], argv[3], atol(argv[4]), atoi(argv[5]), argv[6]);
    fprintf(stderr,
            "usage: reflector [-g] serve PORT IP:PORT,...\n"
            "       reflector rawserve mcast|echo FD,...\n"
            "       reflector [-g] client IP:PORT|raw FILE ROUNDS WINDOW FD,...\n");
    return 2;
}
