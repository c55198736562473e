/* The native protocol core of one call (p4reduce.host._engine_c): what its C files share.

   The extension is built by setup.py from these files:
     machine.c  the state machine of one call: events in (start, result, timer, resume),
                actions out through a Sink; the per-slot timers' heap
     lanes.c    the per-packet loops over K lanes (quantize a block, store a result), in
                an AVX2 and a baseline copy
     driver.c   the native driver: poll, recvmmsg, the core, timers, sendmmsg, the GIL
                released; one thread, or several over disjoint slot ranges (threads.c)
     threads.c  the driver with several threads sharing the rank's one socket
     module.c   the Python binding: the Core type and the module's functions

   The protocol core of one call, in C: the state machine of host/protocol/call.py,
   dense.py and sparse.py, event for event and action for action (the Python core stays
   the specification; tests/host/test_native_core.py feeds both the same event traces and
   requires identical actions, and drives this one through the independent switch model).

   A call's per-call set-up (block exponents, the non-zero bitmap, sparse's next-block
   tables, the payloads of int32 calls) is vectorised numpy work done once by the Python
   call object (host/protocol/native.py), which hands the arrays in; this object keeps
   references to them. Per event it does what the Python core does per packet: parse and
   filter the result, store its lanes, quantize the next block with its agreed exponent
   (the same IEEE operations as quantize.quantize_row, so the same integers), build the
   next packet, and keep the per-slot timers in a heap ordered by (deadline, slot,
   version) exactly as heapq orders the Python core's tuples.

   Actions come back as a list of tuples: ("send", bytes, slot, retransmit),
   ("timer", deadline or None), ("done",), ("timeout", stuck, in_flight) with slot
   descriptions (slot, set, block, priming, attempts, first), ("protocol", message).
   Built with -ffp-contract=off (no fused multiply-add), never -ffast-math. */

#ifndef P4REDUCE_ENGINE_H
#define P4REDUCE_ENGINE_H

#define _GNU_SOURCE /* sendmmsg, recvmmsg */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../_simd.h"

/* functions shared between the extension's files, not exported from the module */
#define HIDDEN __attribute__((visibility("hidden")))

/* the wire constants, the call states (ST_*), quantize's modes (Q_*) and CallStats' order
   (S_*): generated from p4reduce/contracts/spec.py, the one source Python reads too */
#include "contracts.h"

typedef struct {
    double deadline;
    Py_ssize_t slot;
    uint64_t version;
} TimerEntry;

typedef struct {
    PyObject_HEAD
    /* the job and the call */
    int sparse, is_float, msg_type, rank, job_id, n;
    uint32_t call_id, job_key;
    Py_ssize_t k, nslots, nblocks, active, pkt_cap;
    /* the slots this core runs: [lo, hi), all active ones, or one thread's share of them
       (threads.c); in_group: one of several cores of the call, so a result for one of its
       slots after its own slots are done is a duplicate, not late (the call still runs) */
    Py_ssize_t lo, hi;
    int in_group;
    double initial, multiplier, max_timeout, give_up;
    long long max_attempts; /* < 0: unlimited */
    /* the Python call's arrays (kept alive by refs) */
    PyObject *refs;
    uint8_t *sets;              /* the session's per-slot sets (S), flipped per use */
    const float *blocks;        /* float: (B, K) */
    const uint8_t *be;          /* int32: (B, K) big-endian payloads */
    const uint8_t *own;         /* float: B own exponents */
    const uint8_t *nonzero;     /* B: the block has a payload */
    const uint8_t *nf;          /* float: B, the NF_* bits each block sends (NULL: none) */
    uint8_t *nf_out;            /* float: B, the NF_* bits its result brought (NULL: none) */
    uint8_t *agreed;            /* dense float: B agreed exponents; sparse: S class ones */
    const int64_t *after;       /* sparse: B, next non-zero block of the class after b */
    const int64_t *first_nz;    /* sparse: S */
    const uint8_t *class_own;   /* sparse: S */
    void *result;               /* (B, K) rows, each final when its result is stored: int32
                                   sums, or float32 dequantized (Call._store) */
    int d_f32, d_regular_from;  /* quantize.dequantize's modes: float32 scale (n a power of
                                   two) for E = 0 and E >= d_regular_from, else float64 */
    const float *d_scale;       /* float, d_f32: 256 float32 scales (quantize._Tables) */
    const double *d_mul64;      /* float: 256 float64 factors */
    int q_mode, regular_from;
    const void *q_table;        /* 256 float32 (Q_F32_MUL) or float64 */
    /* per active slot */
    uint8_t *pkt;               /* active × pkt_cap bytes */
    Py_ssize_t *pkt_len;        /* 0: nothing outstanding */
    uint8_t *set_, *priming;
    uint32_t *block_;
    long long *attempts;
    double *first, *timeout;
    uint64_t *version;
    uint8_t *stuck;             /* per slot: stuck when the call failed */
    Py_ssize_t *due;            /* on_timer's scratch: the slots due */
    TimerEntry *heap;
    Py_ssize_t heap_len, heap_cap;
    /* the native driver's send queue: packets in order, from q_head */
    uint8_t *q_buf;
    Py_ssize_t *q_lens;
    Py_ssize_t q_head, q_len, q_cap;
    int q_waiting;              /* the queue waits for the socket to be writable */
    /* a protocol error, for its message: 1 dense exponent past the end, 2 sparse next */
    int perr_kind;
    Py_ssize_t perr_slot, perr_block;
    unsigned long perr_value;
    Py_ssize_t open;
    int has_last;               /* the last SetTimer sent: None (0) or last_deadline */
    double last_deadline;
    int state;
    long long stats[S_COUNT];
} Core;

/* ------------------------------------------------------------------ actions

   The internal functions hand their actions to a Sink. Called from Python (the event
   methods), the sink builds the action tuples (the GIL is held); in the native driver
   (Core.run, the GIL released) sends go into the core's send queue and the end of the
   call is only marked, to be turned into its action once the GIL is back. */

typedef struct {
    PyObject *list;  /* Python mode: the action tuples; NULL in the driver */
    int ended;       /* the driver: 1 done, 2 timeout, 3 protocol error */
    int oom;
} Sink;

enum { END_NONE, END_DONE, END_TIMEOUT, END_PROTOCOL };

/* machine.c: the events (0 or -1 with k->oom or a Python error; the call's end in
   k->ended) and what the binding reads */
HIDDEN int ev_start(Core *c, double now, Sink *k);
HIDDEN int ev_packet(Core *c, const uint8_t *d, Py_ssize_t len, double now, Sink *k);
HIDDEN int ev_timer(Core *c, double now, Sink *k);
HIDDEN int ev_resume(Core *c, double now, Sink *k);
HIDDEN int ev_fail_check(Core *c, double now, Sink *k);
HIDDEN int next_deadline(Core *c, double *out);
HIDDEN int append_steal(PyObject *acts, PyObject *item);

/* lanes.c */
typedef void (*quantize_fn)(const float *, Py_ssize_t, int, int, int, int, int, const void *,
                            uint8_t *);
typedef void (*store_fn)(int32_t *, const uint8_t *, Py_ssize_t);
typedef void (*dequantize_fn)(float *, const uint8_t *, Py_ssize_t, int, float, double);
extern HIDDEN quantize_fn quantize_impl;
extern HIDDEN store_fn store_impl;
extern HIDDEN dequantize_fn dequantize_impl;
HIDDEN int lanes_use_avx2(int on);

/* driver.c: Core.run without the Python parts. The GIL must be released. */
typedef struct {
    long long sent, bytes_sent, received, bytes_received, queued, dropped;
    int err_codes[8];
    long long err_counts[8];
} IoCounters;

#define BATCH 64
HIDDEN double mono(void);
HIDDEN void count_error(IoCounters *io, int code, long long n);
HIDDEN int drive(Core *c, int fd, int mode, double budget, IoCounters *io, Sink *k,
                 int *os_error);

/* threads.c: the cores of one call over disjoint slot ranges, one thread each */
#define MAX_THREADS 64
HIDDEN int drive_group(Core **cores, int nthreads, int fd, int mode, double budget,
                       IoCounters *io, int *os_error);

#endif
