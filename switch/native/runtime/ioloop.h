/* The native I/O loop of p4reduce-switch: one pthread, no Python, no GIL.
 *
 * It waits (epoll) on the ports' sockets, receives frames in batches (recvmmsg), hands each to
 * the handler of p4r_handler.h (the native engine's packet path), and sends every frame the
 * handler emits in batches (sendmmsg). Ports are those of docs/ports.md:
 *
 *   - the UDP adapter (N@udp:HOST:PORT): one UDP socket; a datagram from port N's peer becomes
 *     the Ethernet/IPv4/UDP frame switch/ports/ipudp.py builds, and a frame leaving port N is
 *     unwrapped to its UDP payload and sent to N's peer, with the same drops and counters;
 *   - raw ports (N@IFACE): an AF_PACKET socket per interface, frames verbatim.
 *
 * Python opens and configures the sockets (switch/ports/, so errors and options stay in one
 * place) and lends their file descriptors to the loop; the loop never closes them.
 *
 * Frames the handler emits to a port the loop does not own go to a bounded queue that Python
 * drains (the CPU port: P4Runtime packet-in); other unowned ports are counted (no_such_port).
 * Python injects frames into the loop (packet-out) or sends frames straight out of a port.
 *
 * Threads: every function may be called from any thread except where noted; the counters
 * are written by the loop thread only and read with relaxed atomic loads. */
#ifndef P4R_IOLOOP_H
#define P4R_IOLOOP_H

#include <stddef.h>
#include <stdint.h>

#include "p4r_handler.h"

#define P4R_IOLOOP_ABI 2     /* bumped when anything below changes */
#define P4R_MAX_FRAME 16384  /* switch/ports/base.py MAX_FRAME */
#define P4R_MIN_FRAME 14     /* an Ethernet header */
#define P4R_UDP_OVERHEAD 42  /* Ethernet + IPv4 + UDP headers */
#define P4R_MAX_PORT 510     /* 511 is v1model's drop port */
#define P4R_ERRNO_SLOTS 8    /* distinct errno values counted per port (more: "other") */

/* Drop reasons: the names of docs/ports.md, in this order (p4r_reason_name gives them). */
enum p4r_reason {
    P4R_RUNT = 0,
    P4R_OVERSIZE,
    P4R_MTU_EXCEEDED,
    P4R_BUFFER_FULL,
    P4R_SEND_ERROR,
    P4R_CLOSED,
    P4R_NOT_IPV4,
    P4R_NOT_UDP,
    P4R_IP_FRAGMENT,
    P4R_MALFORMED,
    P4R_PORT_CLOSED,
    P4R_BACKLOG_FULL,
    P4R_UNKNOWN_SENDER,
    P4R_REASONS
};

/* switch/ports/base.py PortCounters. errno_value[i] == 0 marks an unused slot; an errno
 * arriving when all slots are used is counted in errno_other. */
typedef struct p4r_port_counters {
    uint64_t rx_frames;
    uint64_t tx_frames;
    uint64_t rx_dropped[P4R_REASONS];
    uint64_t tx_dropped[P4R_REASONS];
    int32_t errno_value[P4R_ERRNO_SLOTS];
    uint64_t errno_count[P4R_ERRNO_SLOTS];
    uint64_t errno_other;
} p4r_port_counters;

/* Whole-loop counters. */
typedef struct p4r_loop_stats {
    uint64_t batches;          /* receive batches handled */
    uint64_t handled;          /* frames given to the handler */
    uint64_t handler_failed;   /* the handler returned < 0: frame dropped */
    uint64_t no_handler;       /* frames dropped while no handler was set (no pipeline) */
    uint64_t no_such_port;     /* emitted to a port neither owned nor the CPU port */
    uint64_t cpu_queued;       /* frames put on the CPU queue */
    uint64_t cpu_dropped;      /* the CPU queue was full */
    uint64_t inject_dropped;   /* the inject queue was full (p4r_ioloop_inject returned -1) */
    uint64_t gso_sends;        /* UDP sends of several datagrams (UDP_SEGMENT) */
    uint64_t gro_receives;     /* UDP super-datagrams received (UDP_GRO), each several */
    uint64_t gso_refused;      /* segmented sends the kernel refused (then per datagram) */
} p4r_loop_stats;

typedef struct p4r_ioloop p4r_ioloop;

/* A loop with no ports and no handler (frames are then dropped and counted no_handler).
 * cpu_port: the port whose frames go to the CPU queue, or -1 for none. queue_frames: the
 * capacity of the CPU queue and of the inject queue. NULL on failure (errno set). */
p4r_ioloop *p4r_ioloop_new(int32_t cpu_port, uint32_t queue_frames);

/* Configuration, before p4r_ioloop_start only. Addresses and ports in host byte order.
 * Each returns 0, or -1 with errno set (EINVAL: bad argument or already started; EEXIST: the
 * port number or the peer is taken; ENOSPC: too many ports/adapters). */
int p4r_ioloop_add_udp_adapter(p4r_ioloop *loop, int fd, uint32_t listen_ip,
                               uint16_t listen_port, int pktinfo, const uint8_t switch_mac[6],
                               uint16_t first_ip_id);
int p4r_ioloop_add_udp_port(p4r_ioloop *loop, uint32_t number, uint32_t peer_ip,
                            uint16_t peer_port);
int p4r_ioloop_add_raw_port(p4r_ioloop *loop, uint32_t number, int fd);

/* Which engine runs the frames; fn NULL: none (frames dropped, counted no_handler). Safe while
 * the loop runs: returns once no call of the previous handler is in progress, so the caller
 * may free the previous ctx afterwards. */
void p4r_ioloop_set_handler(p4r_ioloop *loop, p4r_handler_fn fn, void *ctx);

/* UDP segmentation offload on the adapter's socket (before start): with want != 0, GSO
 * (UDP_SEGMENT: the datagrams for one peer leave as one send per run of equal lengths) and
 * GRO (UDP_GRO: the kernel may hand several datagrams of one peer back as one, split here
 * into the frames the per-datagram path builds) where the kernel has them; want == 0: per
 * datagram. Returns the offloads in use (1: GSO, 2: GRO), or -1 (EINVAL: no adapter or
 * already started). GRO is turned off again when the loop stops. */
int p4r_ioloop_udp_offload(p4r_ioloop *loop, int want);

/* Start the loop thread / stop it (wakes it through an eventfd; returns after the join, well
 * under 100 ms). stop is idempotent; start after stop is refused (EINVAL). */
int p4r_ioloop_start(p4r_ioloop *loop);
int p4r_ioloop_stop(p4r_ioloop *loop);
/* Stops if needed and frees everything except the lent file descriptors. */
void p4r_ioloop_free(p4r_ioloop *loop);

/* Packet-out: run frame through the handler as arriving on in_port, on the loop thread.
 * Returns 0 if queued, -1 if the queue is full (counted inject_dropped) or len is out of
 * 0..P4R_MAX_FRAME (EINVAL). */
int p4r_ioloop_inject(p4r_ioloop *loop, uint32_t in_port, const uint8_t *frame, uint32_t len);
/* Send frame out of port out_port as if the handler had emitted it (the loop thread does it,
 * counted like any emitted frame). Same returns as p4r_ioloop_inject. */
int p4r_ioloop_transmit(p4r_ioloop *loop, uint32_t out_port, const uint8_t *frame, uint32_t len);

/* The CPU queue: an eventfd that is readable while frames wait (read it to re-arm), and a
 * pop that copies the oldest frame into buf. Returns its length (0..P4R_MAX_FRAME) and sets
 * *port, or -1 when the queue is empty. buf must hold P4R_MAX_FRAME bytes. */
int p4r_ioloop_cpu_fd(p4r_ioloop *loop);
int p4r_ioloop_cpu_pop(p4r_ioloop *loop, uint32_t *port, uint8_t *buf);

/* Counters: of switch port `number` (-1 if the loop does not own it), of the UDP adapter
 * itself (unknown senders, ICMP errors; -1 without one), of the loop. */
int p4r_ioloop_port_counters(p4r_ioloop *loop, uint32_t number, p4r_port_counters *out);
int p4r_ioloop_adapter_counters(p4r_ioloop *loop, p4r_port_counters *out);
void p4r_ioloop_stats(p4r_ioloop *loop, p4r_loop_stats *out);

/* The name of a drop reason ("runt", "oversize", ...), NULL out of range. */
const char *p4r_reason_name(int reason);
int p4r_ioloop_abi(void);

/* The UDP adapter's framing, pure functions exposed for the differential test against
 * switch/ports/ipudp.py.
 *
 * p4r_udp_build_frame writes the 42 + payload_len byte frame ipudp.build_frame builds into
 * out (which may alias out + 42 == payload: the payload is then already in place) and returns
 * its length, or -1 if payload_len > 65507. Addresses and ports in host byte order. */
int p4r_udp_build_frame(uint8_t *out, const uint8_t *payload, uint32_t payload_len,
                        const uint8_t eth_dst[6], const uint8_t eth_src[6], uint32_t ip_src,
                        uint32_t ip_dst, uint16_t udp_src, uint16_t udp_dst, uint16_t ip_id);
/* ipudp.udp_payload: the payload's length (>= 0) with *offset set to where it starts in
 * frame, or -1 - reason, reason the p4r_reason (P4R_RUNT, P4R_NOT_IPV4, P4R_MALFORMED,
 * P4R_IP_FRAGMENT, P4R_NOT_UDP) why the frame carries no deliverable datagram. */
int p4r_udp_payload(const uint8_t *frame, uint32_t len, uint32_t *offset);
/* ipudp.port_mac */
void p4r_port_mac(uint32_t number, uint8_t out[6]);

#endif
