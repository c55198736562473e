/* The in-process packet path of the native switch engine (switch/native/engine.py).
 *
 * NativeSwitch.process and process_batch call the generated engine's p4r_run_vec
 * (runtime/p4r_path.c) through this module rather than through ctypes: the ctypes path costs
 * a few microseconds of Python per packet (packing the batch into one blob, converting the
 * arguments, slicing the frames that come back), which is more than the engine itself spends
 * on a dense K = 64 packet. Here the frames are read where Python keeps them (the bytes
 * objects), the engine runs with the GIL released, and the frames that leave are collected
 * into one growing buffer and turned into the [(port, bytes)] list at the end.
 *
 * The engine is named by two addresses (of p4r_run_vec and of its p4r_engine), which
 * engine.py takes from the loaded shared object; this module never loads or frees engines.
 * Where the module is missing (an install without a compiler), engine.py keeps its ctypes
 * path: same results, slower. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef void (*emit_fn)(void *ctx, uint32_t port, const uint8_t *frame, uint32_t len);
typedef int64_t (*vec_fn)(void *engine, uint32_t n, const uint32_t *ports,
                          const uint8_t *const *frames, const uint32_t *lens, uint64_t now,
                          emit_fn emit, void *emit_ctx);

#define INLINE_OUT 16384

/* Frames that left: [u32 port][u32 len][bytes] records, first in a buffer on the stack. */
typedef struct collect {
    uint8_t *buf;
    size_t cap, used;
    Py_ssize_t count;
    int oom;
    uint8_t inline_buf[INLINE_OUT];
} collect;

static void collect_emit(void *ctx, uint32_t port, const uint8_t *frame, uint32_t len) {
    collect *c = ctx;
    if (c->oom) return;
    size_t need = c->used + 8 + (size_t)len;
    if (need > c->cap) {
        size_t cap = c->cap * 2;
        while (cap < need) cap *= 2;
        uint8_t *nb;
        if (c->buf == c->inline_buf) {
            nb = malloc(cap);
            if (nb) memcpy(nb, c->buf, c->used);
        } else {
            nb = realloc(c->buf, cap);
        }
        if (!nb) {
            c->oom = 1; /* reported once the engine returns (no Python calls here) */
            return;
        }
        c->buf = nb;
        c->cap = cap;
    }
    memcpy(c->buf + c->used, &port, 4);
    memcpy(c->buf + c->used + 4, &len, 4);
    memcpy(c->buf + c->used + 8, frame, len);
    c->used = need;
    c->count++;
}

static void collect_init(collect *c) {
    c->buf = c->inline_buf;
    c->cap = INLINE_OUT;
    c->used = 0;
    c->count = 0;
    c->oom = 0;
}

static void collect_free(collect *c) {
    if (c->buf != c->inline_buf) free(c->buf);
}

/* (list of (port, bytes), engine result) */
static PyObject *collect_result(collect *c, int64_t rc) {
    if (c->oom) {
        PyErr_SetString(PyExc_MemoryError, "the native engine's output did not fit in memory");
        return NULL;
    }
    PyObject *out = PyList_New(c->count);
    if (!out) return NULL;
    size_t pos = 0;
    for (Py_ssize_t i = 0; i < c->count; i++) {
        uint32_t port, len;
        memcpy(&port, c->buf + pos, 4);
        memcpy(&len, c->buf + pos + 4, 4);
        PyObject *p = PyLong_FromUnsignedLong(port);
        PyObject *d = PyBytes_FromStringAndSize((const char *)c->buf + pos + 8, len);
        PyObject *t = p && d ? PyTuple_New(2) : NULL;
        if (!t) {
            Py_XDECREF(p);
            Py_XDECREF(d);
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(t, 0, p);
        PyTuple_SET_ITEM(t, 1, d);
        PyList_SET_ITEM(out, i, t);
        pos += 8 + len;
    }
    return Py_BuildValue("(NL)", out, (long long)rc);
}

static int engine_args(PyObject *fn_o, PyObject *eng_o, vec_fn *fn, void **eng) {
    *fn = (vec_fn)PyLong_AsVoidPtr(fn_o);
    if (!*fn && PyErr_Occurred()) return -1;
    *eng = PyLong_AsVoidPtr(eng_o);
    if (!*eng && PyErr_Occurred()) return -1;
    if (!*fn || !*eng) {
        PyErr_SetString(PyExc_ValueError, "no native engine (closed?)");
        return -1;
    }
    return 0;
}

/* run_one(fn, engine, port, data, now) -> ([(port, bytes)], result). One packet keeps the
 * GIL: releasing and taking it back would cost more than the packet. */
static PyObject *run_one(PyObject *self, PyObject *args) {
    PyObject *fn_o, *eng_o, *port_o, *now_o;
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "OOOy*O", &fn_o, &eng_o, &port_o, &data, &now_o)) return NULL;
    vec_fn fn;
    void *eng;
    uint32_t port = (uint32_t)PyLong_AsUnsignedLongMask(port_o);
    uint64_t now = (uint64_t)PyLong_AsUnsignedLongLongMask(now_o);
    if (PyErr_Occurred() || engine_args(fn_o, eng_o, &fn, &eng) < 0 || data.len > UINT32_MAX) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "packet too long");
        PyBuffer_Release(&data);
        return NULL;
    }
    collect *c = malloc(sizeof *c);
    if (!c) {
        PyBuffer_Release(&data);
        return PyErr_NoMemory();
    }
    collect_init(c);
    const uint8_t *frame = data.buf;
    uint32_t len = (uint32_t)data.len;
    int64_t rc = fn(eng, 1, &port, &frame, &len, now, collect_emit, c);
    PyBuffer_Release(&data);
    PyObject *res = collect_result(c, rc);
    collect_free(c);
    free(c);
    return res;
}

/* run(fn, engine, packets, now) -> ([(port, bytes)], result): packets is a sequence of
 * (port, bytes-like). The packets' data objects are referenced until the engine returns. */
static PyObject *run(PyObject *self, PyObject *args) {
    PyObject *fn_o, *eng_o, *pkts_o, *now_o;
    if (!PyArg_ParseTuple(args, "OOOO", &fn_o, &eng_o, &pkts_o, &now_o)) return NULL;
    vec_fn fn;
    void *eng;
    uint64_t now = (uint64_t)PyLong_AsUnsignedLongLongMask(now_o);
    if (PyErr_Occurred() || engine_args(fn_o, eng_o, &fn, &eng) < 0) return NULL;
    PyObject *seq = PySequence_Fast(pkts_o, "packets must be a sequence of (port, bytes)");
    if (!seq) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > UINT32_MAX) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "too many packets in one batch");
        return NULL;
    }
    uint32_t *ports = malloc(sizeof *ports * (size_t)(n + 1));
    uint32_t *lens = malloc(sizeof *lens * (size_t)(n + 1));
    const uint8_t **frames = malloc(sizeof *frames * (size_t)(n + 1));
    Py_buffer *views = calloc((size_t)n + 1, sizeof *views);
    collect *c = malloc(sizeof *c);
    Py_ssize_t held = 0;
    PyObject *res = NULL;
    if (c) collect_init(c);
    if (!ports || !lens || !frames || !views || !c) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 2) {
            PyErr_Format(PyExc_TypeError, "packet %zd: expected a (port, bytes) tuple", i);
            goto done;
        }
        ports[i] = (uint32_t)PyLong_AsUnsignedLongMask(PyTuple_GET_ITEM(item, 0));
        if (PyErr_Occurred()) goto done;
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(item, 1), &views[i], PyBUF_SIMPLE) < 0) goto done;
        held = i + 1;
        if (views[i].len > UINT32_MAX) {
            PyErr_Format(PyExc_ValueError, "packet %zd: too long", i);
            goto done;
        }
        frames[i] = views[i].buf;
        lens[i] = (uint32_t)views[i].len;
    }
    int64_t rc;
    Py_BEGIN_ALLOW_THREADS
    rc = fn(eng, (uint32_t)n, ports, frames, lens, now, collect_emit, c);
    Py_END_ALLOW_THREADS
    res = collect_result(c, rc);
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    if (c) collect_free(c);
    free(c);
    free(views);
    free(frames);
    free(lens);
    free(ports);
    Py_DECREF(seq);
    return res;
}

static PyMethodDef methods[] = {
    {"run_one", run_one, METH_VARARGS, "run_one(fn, engine, port, data, now) -> (frames, rc)"},
    {"run", run, METH_VARARGS, "run(fn, engine, packets, now) -> (frames, rc)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_batch",
    "The in-process packet path of the native switch engine (see _batch.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__batch(void) { return PyModule_Create(&module); }
