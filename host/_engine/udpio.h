/* The native driver's batched UDP I/O (driver.c; docs/host.md, "UDP segmentation offload").

   A run of the driver (driver.c drive, threads.c drive_group) asks offload_begin() what the
   socket can do. With UDP_SEGMENT (GSO) a run of queued packets of one length (the last may
   be shorter) leaves as one sendmsg: the kernel cuts it into the same datagrams the
   per-datagram path sends, so the switch and the wire see no difference. With UDP_GRO the
   kernel may hand several datagrams of one sender back as one super-datagram and its
   segment size; rx_batch() cuts it into the datagrams again. Either way the core sees the
   same packets, byte for byte (tests/host/test_udp_offload.py runs both paths).

   P4REDUCE_UDP_OFFLOAD=0 (or udp_offload(False) in Python) forces the per-datagram path; a
   kernel without either option is detected at the first run and said in one line on
   stderr. A segmented send the kernel refuses (EINVAL, EIO: a route whose device cannot
   segment) turns GSO off for the rest of the run and is sent again per datagram. */

#ifndef P4REDUCE_UDPIO_H
#define P4REDUCE_UDPIO_H

#include "engine.h"

#define OFF_GSO 1
#define OFF_GRO 2

/* The process-wide switch: 1 on (the default unless P4REDUCE_UDP_OFFLOAD=0), 0 off; set < 0
   only reads it. Returns the value before the call. */
HIDDEN int udp_offload_mode(int set);
/* The offloads a run on fd uses (OFF_GSO | OFF_GRO); GRO is turned on for the run. */
HIDDEN int offload_begin(int fd);
/* GRO off again, so that a Python reader of the socket (runner.py's loop, discard) never
   meets a super-datagram. */
HIDDEN void offload_end(int fd, int off);

/* One receive: up to BATCH datagrams (GRO: super-datagrams) of one recvmmsg. */
#define GRO_MSGS 8
#define GRO_BYTES 65536 /* the largest UDP datagram, whole */
typedef struct {
    int n;
    Py_ssize_t datagrams; /* what the n messages hold, split */
    uint8_t *base[BATCH];
    Py_ssize_t total[BATCH], seg[BATCH];
} RxBatch;

/* The buffer rx_batch needs for these offloads: BATCH * cap, or GRO_MSGS * GRO_BYTES. */
HIDDEN size_t rx_buffer_bytes(int off, Py_ssize_t cap);
/* recvmmsg into buf; returns the messages read (0 when none; an error other than EAGAIN is
   counted in io). */
HIDDEN int rx_batch(int fd, int off, uint8_t *buf, Py_ssize_t cap, RxBatch *b, IoCounters *io);

/* Datagram j of message i, as the per-datagram path would have read it into a buffer of cap
   bytes (a longer one truncated to cap): its length, *d its bytes; -1 past the last. */
static inline Py_ssize_t rx_datagram(const RxBatch *b, int i, Py_ssize_t j, Py_ssize_t cap,
                                     const uint8_t **d)
{
    Py_ssize_t at = j * b->seg[i];
    if (j > 0 && at >= b->total[i])
        return -1;
    Py_ssize_t len = b->total[i] - at;
    if (len > b->seg[i])
        len = b->seg[i];
    if (len > cap)
        len = cap;
    *d = b->base[i] + at;
    return len;
}

/* Send what the core queued (driver.c), with GSO when *off has OFF_GSO (cleared if the
   kernel refuses). */
HIDDEN int flush_queue_off(Core *c, int fd, IoCounters *io, int *off);

#endif
