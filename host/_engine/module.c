/* The Python binding of the native core (engine.h): the Core type, its event methods
   (the actions as tuples), the native driver's entry points, the module's functions. */

#include "engine.h"
#include "udpio.h"

#include <errno.h>

static PyTypeObject CoreType; /* below */

/* udp_offload(on=None) -> bool: whether the native driver uses UDP GSO/GRO where the
   socket has them (udpio.h); `on` True/False sets it for the process (the default comes
   from P4REDUCE_UDP_OFFLOAD: 0 is off). Returns the setting before the call. */
static PyObject *udp_offload(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *on = Py_None;
    if (!PyArg_ParseTuple(args, "|O:udp_offload", &on))
        return NULL;
    int set = -1;
    if (on != Py_None && (set = PyObject_IsTrue(on)) < 0)
        return NULL;
    return PyBool_FromLong(udp_offload_mode(set));
}

/* use_avx2(on) -> bool: run the AVX2 copy of the lane loops when `on` and the CPU has
   AVX2, else the baseline copy (tests run both). The module starts with on=True. */
static PyObject *use_avx2(PyObject *Py_UNUSED(self), PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    return PyBool_FromLong(lanes_use_avx2(on));
}

static PyObject *py_quantize_lanes(PyObject *Py_UNUSED(self), PyObject *args)
{
    Py_buffer x, table;
    int e, n, own, q_mode, regular_from;
    if (!PyArg_ParseTuple(args, "y*iiiiy*i", &x, &e, &n, &own, &q_mode, &table, &regular_from))
        return NULL;
    PyObject *out = NULL;
    if (x.len % 4 || n < 1 || e < 0 || e > 255 || own < 0 || own > 255 || q_mode < 0 ||
        q_mode > 2 || table.len != (q_mode == Q_F32_MUL ? 256 * 4 : 256 * 8)) {
        PyErr_SetString(PyExc_ValueError, "quantize_lanes: arguments out of range");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, x.len);
    if (out)
        quantize_impl((const float *)x.buf, x.len / 4, n, e, own, q_mode, regular_from,
                      table.buf, (uint8_t *)PyBytes_AS_STRING(out));
done:
    PyBuffer_Release(&x);
    PyBuffer_Release(&table);
    return out;
}

/* ------------------------------------------------------------------ to Python */

static PyObject *describe(Core *c, Py_ssize_t s)
{
    return Py_BuildValue("(nnkOLd)", s, (Py_ssize_t)c->set_[s], (unsigned long)c->block_[s],
                         c->priming[s] ? Py_True : Py_False, c->attempts[s], c->first[s]);
}

/* ("timeout", stuck, in_flight) of a call run by `n` cores over ascending slot ranges (one
   core: all its slots): the stuck slots of the failed cores, every outstanding slot. */
static PyObject *timeout_action(Core **cores, int n)
{
    PyObject *stuck = PyList_New(0), *flight = PyList_New(0);
    if (!stuck || !flight)
        goto fail;
    for (int i = 0; i < n; i++) {
        Core *c = cores[i];
        for (Py_ssize_t s = c->lo; s < c->hi; s++) {
            if (c->state == ST_FAILED && c->stuck[s] && append_steal(stuck, describe(c, s)) < 0)
                goto fail;
            if (c->pkt_len[s] && append_steal(flight, describe(c, s)) < 0)
                goto fail;
        }
    }
    return Py_BuildValue("(sNN)", "timeout", stuck, flight);
fail:
    Py_XDECREF(stuck);
    Py_XDECREF(flight);
    return NULL;
}

/* The action that ends the call, once the GIL is held: ("timeout", stuck, in_flight) or
   ("protocol", message). */
static PyObject *end_action(Core *c, int ended)
{
    if (ended == END_DONE)
        return Py_BuildValue("(s)", "done");
    if (ended == END_PROTOCOL) {
        PyObject *msg;
        if (c->perr_kind == 1) {
            Py_ssize_t b = c->perr_block;
            msg = PyUnicode_FromFormat(
                "the result of block %zd, the last of slot %zd, carries exponent %d for "
                "block %zd: the workers disagree on the tensor's size (%zd blocks here)",
                b, c->perr_slot, (int)c->perr_value, b + c->nslots, c->nblocks);
        } else {
            msg = PyUnicode_FromFormat(
                "the result for slot %zd names next block %lu, which is not a later block of "
                "the slot's class among %zd blocks: the workers disagree on the tensor's size "
                "or data layout",
                c->perr_slot, (unsigned long)c->perr_value, c->nblocks);
        }
        if (!msg)
            return NULL;
        return Py_BuildValue("(sN)", "protocol", msg);
    }
    return timeout_action(&c, 1);
}

/* Run one event from Python: its actions as tuples. */
static PyObject *python_event(Core *c, int rc, Sink *k)
{
    if (rc < 0) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        Py_DECREF(k->list);
        return NULL;
    }
    if (k->ended == END_TIMEOUT || k->ended == END_PROTOCOL) {
        if (append_steal(k->list, end_action(c, k->ended)) < 0) {
            Py_DECREF(k->list);
            return NULL;
        }
    }
    return k->list;
}

static int parse_now(PyObject *arg, double *now)
{
    *now = PyFloat_AsDouble(arg);
    return (*now == -1.0 && PyErr_Occurred()) ? -1 : 0;
}

static PyObject *Core_start(Core *c, PyObject *arg)
{
    double now;
    if (parse_now(arg, &now) < 0)
        return NULL;
    if (c->state != ST_NEW) {
        PyErr_SetString(PyExc_RuntimeError, "the call already started");
        return NULL;
    }
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list)
        return NULL;
    return python_event(c, ev_start(c, now, &k), &k);
}

static PyObject *Core_on_packet(Core *c, PyObject *args)
{
    Py_buffer view;
    double now;
    if (!PyArg_ParseTuple(args, "y*d", &view, &now))
        return NULL;
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list) {
        PyBuffer_Release(&view);
        return NULL;
    }
    int rc = ev_packet(c, view.buf, view.len, now, &k);
    PyBuffer_Release(&view);
    return python_event(c, rc, &k);
}

static PyObject *Core_on_timer(Core *c, PyObject *arg)
{
    double now;
    if (parse_now(arg, &now) < 0)
        return NULL;
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list)
        return NULL;
    return python_event(c, ev_timer(c, now, &k), &k);
}

static PyObject *Core_resume(Core *c, PyObject *arg)
{
    double now;
    if (parse_now(arg, &now) < 0)
        return NULL;
    if (c->state != ST_FAILED) {
        PyErr_SetString(PyExc_RuntimeError, "only a failed call resumes");
        return NULL;
    }
    Sink k = {PyList_New(0), 0, 0};
    if (!k.list)
        return NULL;
    return python_event(c, ev_resume(c, now, &k), &k);
}

/* The io counters as the runner adds them to the transport's: (sent, bytes_sent,
   received, bytes_received, queued, dropped, [(errno, count)]). */
static PyObject *io_tuple(const IoCounters *io)
{
    PyObject *errs = PyList_New(0);
    if (!errs)
        return NULL;
    for (int i = 0; i < 8 && io->err_counts[i]; i++)
        if (append_steal(errs, Py_BuildValue("(iL)", io->err_codes[i], io->err_counts[i])) < 0) {
            Py_DECREF(errs);
            return NULL;
        }
    return Py_BuildValue("(LLLLLLN)", io->sent, io->bytes_sent, io->received,
                         io->bytes_received, io->queued, io->dropped, errs);
}

/* Core.run(fd, mode, budget) -> (ended, end_action or None, io counters). mode 0: start,
   1: resume, 2: go on. Runs the call with the GIL released for at most `budget` seconds
   (then returns ended False, the call still running: the caller looks at its cancel flag
   and calls again with mode 2). */
static PyObject *Core_run(Core *c, PyObject *args)
{
    int fd, mode;
    double budget;
    if (!PyArg_ParseTuple(args, "iid", &fd, &mode, &budget))
        return NULL;
    if ((mode == 0 && c->state != ST_NEW) || (mode == 1 && c->state != ST_FAILED) ||
        (mode == 2 && c->state != ST_RUNNING) || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_RuntimeError, "Core.run: the call is not in that state");
        return NULL;
    }
    IoCounters io;
    memset(&io, 0, sizeof io);
    Sink k = {NULL, 0, 0};
    int rc, os_error = 0;
    Py_BEGIN_ALLOW_THREADS
    rc = drive(c, fd, mode, budget, &io, &k, &os_error);
    Py_END_ALLOW_THREADS
    if (rc < 0)
        return PyErr_NoMemory();
    if (os_error) {
        errno = os_error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *end = k.ended ? end_action(c, k.ended) : (Py_INCREF(Py_None), Py_None);
    if (!end)
        return NULL;
    PyObject *iot = io_tuple(&io);
    if (!iot) {
        Py_DECREF(end);
        return NULL;
    }
    return Py_BuildValue("(ONN)", k.ended ? Py_True : Py_False, end, iot);
}

/* run_group(cores, fd, mode, budget) -> (ended, end action or None, io counters): Core.run
   for a call split into cores over disjoint ascending slot ranges (Core(lo=, hi=)), one
   driver thread each (threads.c). The end: a protocol error if a core broke, else a
   timeout naming the failed cores' stuck slots and every outstanding one, else done when
   every core is. */
static PyObject *run_group(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *seq;
    int fd, mode;
    double budget;
    if (!PyArg_ParseTuple(args, "O!iid", &PyTuple_Type, &seq, &fd, &mode, &budget))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(seq);
    if (n < 1 || n > MAX_THREADS) {
        PyErr_Format(PyExc_ValueError, "run_group: 1 .. %d cores, not %zd", MAX_THREADS, n);
        return NULL;
    }
    Core *cores[MAX_THREADS];
    int nnew = 0, nfailed = 0, nbroken = 0, nrunning = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *o = PyTuple_GET_ITEM(seq, i);
        if (!PyObject_TypeCheck(o, &CoreType)) {
            PyErr_SetString(PyExc_TypeError, "run_group: a tuple of Core objects");
            return NULL;
        }
        Core *c = (Core *)o;
        Py_ssize_t lo = i ? cores[i - 1]->hi : 0;
        if (c->lo != lo || c->hi <= c->lo || (i == n - 1 && c->hi != c->active) ||
            c->active != ((Core *)PyTuple_GET_ITEM(seq, 0))->active) {
            PyErr_SetString(PyExc_ValueError,
                            "run_group: the cores' slot ranges must cover the call's active "
                            "slots in ascending order, each non-empty");
            return NULL;
        }
        cores[i] = c;
        nnew += c->state == ST_NEW;
        nfailed += c->state == ST_FAILED;
        nbroken += c->state == ST_BROKEN;
        nrunning += c->state == ST_RUNNING;
    }
    if ((mode == 0 && nnew != n) || (mode == 1 && (nfailed == 0 || nbroken)) ||
        (mode == 2 && (nfailed || nbroken || nrunning == 0)) || mode < 0 || mode > 2) {
        PyErr_SetString(PyExc_RuntimeError, "run_group: the call is not in that state");
        return NULL;
    }
    IoCounters io;
    memset(&io, 0, sizeof io);
    int rc, os_error = 0;
    Py_INCREF(seq); /* the cores stay alive while the threads run */
    Py_BEGIN_ALLOW_THREADS
    rc = drive_group(cores, (int)n, fd, mode, budget, &io, &os_error);
    Py_END_ALLOW_THREADS
    Py_DECREF(seq);
    if (rc < 0) {
        if (os_error) {
            errno = os_error;
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        return PyErr_NoMemory();
    }
    if (os_error) {
        errno = os_error;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Core *broken = NULL;
    int failed = 0, done = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (cores[i]->state == ST_BROKEN && !broken)
            broken = cores[i];
        failed += cores[i]->state == ST_FAILED;
        done += cores[i]->state == ST_DONE;
    }
    PyObject *end;
    if (broken)
        end = end_action(broken, END_PROTOCOL);
    else if (failed)
        end = timeout_action(cores, (int)n);
    else if (done == n)
        end = end_action(cores[0], END_DONE);
    else
        end = (Py_INCREF(Py_None), Py_None);
    if (!end)
        return NULL;
    PyObject *iot = io_tuple(&io);
    if (!iot) {
        Py_DECREF(end);
        return NULL;
    }
    return Py_BuildValue("(ONN)", end != Py_None ? Py_True : Py_False, end, iot);
}

static PyObject *Core_next_deadline(Core *c, PyObject *Py_UNUSED(ignored))
{
    double dl;
    if (next_deadline(c, &dl))
        return PyFloat_FromDouble(dl);
    Py_RETURN_NONE;
}

static PyObject *Core_outstanding(Core *c, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(0);
    if (!out)
        return NULL;
    for (Py_ssize_t s = 0; s < c->active; s++)
        if (c->pkt_len[s] && append_steal(out, describe(c, s)) < 0) {
            Py_DECREF(out);
            return NULL;
        }
    return out;
}

static PyObject *Core_stats(Core *c, PyObject *Py_UNUSED(ignored))
{
    PyObject *t = PyTuple_New(S_COUNT);
    if (!t)
        return NULL;
    for (int i = 0; i < S_COUNT; i++) {
        PyObject *v = PyLong_FromLongLong(c->stats[i]);
        if (!v) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    return t;
}

static PyObject *Core_get_state(Core *c, void *Py_UNUSED(closure))
{
    return PyLong_FromLong(c->state);
}

/* ------------------------------------------------------------------ construction */

/* A C-contiguous, writable-if-asked buffer of exactly `bytes` bytes (or any length when
   bytes < 0), kept alive through c->refs. */
static void *take(PyObject *refs, Py_ssize_t i, PyObject *obj, Py_ssize_t bytes, int writable,
                  const char *name)
{
    Py_buffer v;
    if (PyObject_GetBuffer(obj, &v, PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0)) < 0)
        return NULL;
    void *p = v.buf;
    Py_ssize_t len = v.len;
    PyBuffer_Release(&v);
    if (bytes >= 0 && len != bytes) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, %zd expected", name, len, bytes);
        return NULL;
    }
    Py_INCREF(obj);
    PyTuple_SET_ITEM(refs, i, obj);
    return p;
}

static int Core_init(Core *c, PyObject *args, PyObject *kw)
{
    static char *names[] = {
        "sparse", "is_float", "msg_type", "rank", "job_id", "job_key", "call_id", "n", "k", "slots",
        "blocks_count", "active", "initial", "multiplier", "max_timeout", "give_up",
        "max_attempts", "sets", "blocks", "be", "own", "nonzero", "agreed", "after",
        "first_nonzero", "class_own", "result", "q_mode", "q_table", "regular_from", "nf",
        "nf_out", "lo", "hi", "d_f32", "d_scale", "d_mul64", "d_regular_from", NULL};
    int sparse, is_float, msg_type, rank, job_id, n, q_mode, regular_from;
    int d_f32 = 0, d_regular_from = 0;
    unsigned long call_id, job_key;
    Py_ssize_t k, nslots, nblocks, active;
    double initial, multiplier, max_timeout, give_up;
    long long max_attempts;
    PyObject *sets, *blocks, *be, *own, *nonzero, *agreed, *after, *first_nz, *class_own,
        *result, *q_table, *nf = NULL, *nf_out = NULL, *d_scale = NULL, *d_mul64 = NULL;
    Py_ssize_t lo = 0, hi = -1;
    if (!PyArg_ParseTupleAndKeywords(
            args, kw, "ppiiikkinnnnddddLOOOOOOOOOOiOi|OOnnpOOi", names, &sparse, &is_float,
            &msg_type, &rank, &job_id, &job_key, &call_id, &n, &k, &nslots, &nblocks, &active, &initial,
            &multiplier, &max_timeout, &give_up, &max_attempts, &sets, &blocks, &be, &own,
            &nonzero, &agreed, &after, &first_nz, &class_own, &result, &q_mode, &q_table,
            &regular_from, &nf, &nf_out, &lo, &hi, &d_f32, &d_scale, &d_mul64,
            &d_regular_from))
        return -1;
    if (c->refs) {
        PyErr_SetString(PyExc_RuntimeError, "Core is initialised once");
        return -1;
    }
    if (n < 1 || k < 1 || nslots < 1 || nblocks < 0 || active < 0 || active > nslots ||
        active > nblocks || nslots > 0x8000 || (q_mode < 0 || q_mode > 2) ||
        d_regular_from < 0 || d_regular_from > 256) {
        PyErr_SetString(PyExc_ValueError, "Core: parameters out of range");
        return -1;
    }
    if (hi < 0)
        hi = active;
    if (lo < 0 || lo > hi || hi > active) {
        PyErr_Format(PyExc_ValueError, "Core: slot range [%zd, %zd) outside [0, %zd)", lo, hi,
                     active);
        return -1;
    }
    c->lo = lo;
    c->hi = hi;
    c->in_group = lo != 0 || hi != active;
    c->sparse = sparse;
    c->is_float = is_float;
    c->msg_type = msg_type;
    c->rank = rank;
    c->job_id = job_id;
    c->call_id = (uint32_t)call_id;
    c->job_key = (uint32_t)job_key;
    c->n = n;
    c->k = k;
    c->nslots = nslots;
    c->nblocks = nblocks;
    c->active = active;
    c->initial = initial;
    c->multiplier = multiplier;
    c->max_timeout = max_timeout;
    c->give_up = give_up;
    c->max_attempts = max_attempts;
    c->q_mode = q_mode;
    c->regular_from = regular_from;
    c->d_f32 = d_f32;
    c->d_regular_from = d_regular_from;
    c->refs = PyTuple_New(14);
    if (!c->refs)
        return -1;
    PyObject *refs = c->refs;
    Py_ssize_t bk = nblocks * k;
#define TAKE(i, field, obj, bytes, w, name)                  \
    do {                                                     \
        c->field = take(refs, i, obj, bytes, w, name);       \
        if (!c->field)                                       \
            return -1;                                       \
    } while (0)
    TAKE(0, sets, sets, nslots, 1, "sets");
    TAKE(1, result, result, 4 * bk, 1, "result");
    TAKE(2, nonzero, nonzero, nblocks, 0, "nonzero");
    if (is_float) {
        TAKE(3, blocks, blocks, 4 * bk, 0, "blocks");
        TAKE(4, own, own, nblocks, 0, "own");
        TAKE(5, agreed, agreed, sparse ? nslots : nblocks, 1, "agreed");
        TAKE(6, q_table, q_table, q_mode == Q_F32_MUL ? 256 * 4 : 256 * 8, 0, "q_table");
        /* the non-finite bits (docs/protocol.md, "Non-finite values"); absent: all 0 */
        if (nf && nf != Py_None)
            TAKE(10, nf, nf, nblocks, 0, "nf");
        if (nf_out && nf_out != Py_None)
            TAKE(11, nf_out, nf_out, nblocks, 1, "nf_out");
        /* the dequantization tables (quantize._Tables: d_scale, d_mul64) */
        if (!d_mul64 || (d_f32 && !d_scale)) {
            PyErr_SetString(PyExc_ValueError, "Core: a float call needs d_mul64 (and d_scale)");
            return -1;
        }
        TAKE(12, d_mul64, d_mul64, 256 * 8, 0, "d_mul64");
        if (d_f32)
            TAKE(13, d_scale, d_scale, 256 * 4, 0, "d_scale");
    } else {
        TAKE(3, be, be, 4 * bk, 0, "be");
        if (sparse)
            TAKE(5, agreed, agreed, nslots, 1, "agreed");
    }
    if (sparse) {
        TAKE(7, after, after, 8 * nblocks, 0, "after");
        TAKE(8, first_nz, first_nz, 8 * nslots, 0, "first_nonzero");
        TAKE(9, class_own, class_own, nslots, 0, "class_own");
    }
#undef TAKE
    for (Py_ssize_t i = 0; i < 14; i++)
        if (!PyTuple_GET_ITEM(refs, i)) {
            Py_INCREF(Py_None);
            PyTuple_SET_ITEM(refs, i, Py_None);
        }
    Py_ssize_t na = active ? active : 1;
    c->pkt_cap = HEADER_BYTES + 4 * k;
    c->pkt = PyMem_Calloc((size_t)na, (size_t)c->pkt_cap);
    c->pkt_len = PyMem_Calloc((size_t)na, sizeof *c->pkt_len);
    c->set_ = PyMem_Calloc((size_t)na, 1);
    c->priming = PyMem_Calloc((size_t)na, 1);
    c->block_ = PyMem_Calloc((size_t)na, sizeof *c->block_);
    c->attempts = PyMem_Calloc((size_t)na, sizeof *c->attempts);
    c->first = PyMem_Calloc((size_t)na, sizeof *c->first);
    c->timeout = PyMem_Calloc((size_t)na, sizeof *c->timeout);
    c->version = PyMem_Calloc((size_t)na, sizeof *c->version);
    c->stuck = PyMem_Calloc((size_t)na, 1);
    c->due = PyMem_Calloc((size_t)na, sizeof *c->due);
    if (!c->pkt || !c->pkt_len || !c->set_ || !c->priming || !c->block_ || !c->attempts ||
        !c->first || !c->timeout || !c->version || !c->stuck || !c->due) {
        PyErr_NoMemory();
        return -1;
    }
    c->state = ST_NEW;
    return 0;
}

static void Core_dealloc(Core *c)
{
    Py_XDECREF(c->refs);
    PyMem_Free(c->pkt);
    PyMem_Free(c->pkt_len);
    PyMem_Free(c->set_);
    PyMem_Free(c->priming);
    PyMem_Free(c->block_);
    PyMem_Free(c->attempts);
    PyMem_Free(c->first);
    PyMem_Free(c->timeout);
    PyMem_Free(c->version);
    PyMem_Free(c->stuck);
    PyMem_Free(c->due);
    PyMem_RawFree(c->heap);
    PyMem_RawFree(c->q_buf);
    PyMem_RawFree(c->q_lens);
    Py_TYPE(c)->tp_free((PyObject *)c);
}

static PyMethodDef Core_methods[] = {
    {"start", (PyCFunction)Core_start, METH_O, "start(now) -> actions"},
    {"on_packet", (PyCFunction)Core_on_packet, METH_VARARGS, "on_packet(data, now) -> actions"},
    {"on_timer", (PyCFunction)Core_on_timer, METH_O, "on_timer(now) -> actions"},
    {"resume", (PyCFunction)Core_resume, METH_O, "resume(now) -> actions"},
    {"next_deadline", (PyCFunction)Core_next_deadline, METH_NOARGS, "the next deadline or None"},
    {"outstanding", (PyCFunction)Core_outstanding, METH_NOARGS, "slot descriptions"},
    {"stats", (PyCFunction)Core_stats, METH_NOARGS, "the counters, in CallStats order"},
    {"run", (PyCFunction)Core_run, METH_VARARGS,
     "run(fd, mode, budget) -> (ended, end action or None, io counters): the native driver"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Core_getset[] = {
    {"state", (getter)Core_get_state, NULL, "0 new, 1 running, 2 done, 3 failed, 4 broken", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "p4reduce.host._engine_c.Core",
    .tp_basicsize = sizeof(Core),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The protocol core of one call (see host/protocol/native.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Core_init,
    .tp_dealloc = (destructor)Core_dealloc,
    .tp_methods = Core_methods,
    .tp_getset = Core_getset,
};

static PyMethodDef module_methods[] = {
    {"use_avx2", use_avx2, METH_O,
     "use_avx2(on) -> bool: the AVX2 copy of the lane loops when on and the CPU has it"},
    {"udp_offload", udp_offload, METH_VARARGS,
     "udp_offload(on=None) -> bool: UDP GSO/GRO in the native driver (the setting before)"},
    {"run_group", run_group, METH_VARARGS,
     "run_group(cores, fd, mode, budget) -> (ended, end action or None, io counters): the "
     "native driver with one thread per core (disjoint slot ranges)"},
    {"quantize_lanes", py_quantize_lanes, METH_VARARGS,
     "quantize_lanes(x, exponent, n, own, q_mode, q_table, regular_from) -> bytes"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_engine_c", "The native protocol core of one call.", -1,
    module_methods,
};

PyMODINIT_FUNC PyInit__engine_c(void)
{
    if (PyType_Ready(&CoreType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    PyObject *r = use_avx2(m, Py_True); /* picks the copy of the lane loops */
    if (!r) {
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(r);
    Py_INCREF(&CoreType);
    if (PyModule_AddIntConstant(m, "MAX_THREADS", MAX_THREADS) < 0 ||
        PyModule_AddObject(m, "Core", (PyObject *)&CoreType) < 0) {
        Py_DECREF(&CoreType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
