/* Fused block-floating-point kernels for host/quantize.py (docs/host.md, "Quantization").

   The numpy code in quantize.py is the specification: each kernel here performs, element
   by element, the same IEEE operations in the same precision and order, so every result
   is bit for bit the numpy result (tests/host/test_quantize_kernel.py compares them).
   What changes is only the memory traffic: one pass over a block while it is in L1
   instead of several numpy passes with a broadcast per-block scale.

   Build flags (setup.py): -O3 -ffp-contract=off, never -ffast-math (the build stops if
   it is given): every operation is rounded as written, with no reassociation, no flush
   of denormals to zero and no fused multiply-add where numpy rounds twice (the code has
   no a * b + c, but a later edit might).

   The Python side checks shapes and dtypes and passes the per-n tables it already uses
   (quantize._Tables), so no scale is derived twice. The entry points still check every
   buffer's length and alignment: a wrong call raises, it never reads or writes outside a
   buffer. quantize() returns a status: OK; NONFINITE (a block holds NaN or +-Inf: the
   caller raises NonFiniteError from its own check); or REDO, for arguments where the
   numpy code would cast values beyond int32 (an `own` given below a block's real
   exponent, or NaN with an `own` given): the caller reruns the numpy code, which
   defines that garbage-in case, while C would not. */

#if defined(__FAST_MATH__)
#error "_quantize_c must not be built with -ffast-math: its results must be numpy's, bit for bit"
#endif

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* the statuses (OK, NONFINITE, REDO) and the quantize (Q_*) and dequantize (D_*) modes,
   generated from p4reduce/contracts/spec.py, which host/quantize.py reads */
#include "_engine/contracts.h"

#define INF_BITS 0x7F800000u
#define MIN_NORMAL_BITS 0x00800000u

/* X86, INLINE, AVX2 (the two copies of each loop) and rint_int32: host/_simd.h */
#include "_simd.h"

/* ---------------------------------------------------------------- exponents */

/* The largest |x| of a block as bits (x & 0x7FFFFFFF), as block_exponents computes it:
   for finite floats the order of these bits is the order of |x|; NaN and +-Inf give
   0x7F800000 or more. memcpy reads the bits without breaking strict aliasing. */
INLINE uint32_t max_abs_bits(const float *x, Py_ssize_t k)
{
    int32_t m = 0;   /* signed: the masked bits are >= 0, and SSE2 compares only signed */
    for (Py_ssize_t i = 0; i < k; i++) {
        int32_t u;
        memcpy(&u, &x[i], sizeof u);
        u &= 0x7FFFFFFF;
        m = u > m ? u : m;
    }
    return (uint32_t)m;
}

/* E = 0 for an all-zero block, 1 when only denormals, else (m >> 23) + 1. */
INLINE int exponent_of(uint32_t m)
{
    return m == 0 ? 0 : m < MIN_NORMAL_BITS ? 1 : (int)(m >> 23) + 1;
}

/* Exponents of b blocks; NONFINITE at the first block with NaN or +-Inf. */
INLINE int exponent_blocks(const float *x, Py_ssize_t b, Py_ssize_t k, uint8_t *e)
{
    for (Py_ssize_t i = 0; i < b; i++) {
        uint32_t m = max_abs_bits(x + i * k, k);
        if (m >= INF_BITS)
            return NONFINITE;
        e[i] = (uint8_t)exponent_of(m);
    }
    return OK;
}

/* ---------------------------------------------------------------- quantize */

struct qargs {
    const float *x;          /* b blocks of k float32 */
    Py_ssize_t b, k;
    const uint8_t *agreed;   /* b agreed exponents */
    const uint8_t *own;      /* b own exponents, or NULL: compute them */
    int n, mode, regular_from;
    const void *table;       /* 256 float32 (Q_F32_MUL) or float64 */
    int32_t *q;              /* b blocks of k int32 */
};

/* _quantize_rows64, for rows whose agreed exponent is below their own (the clamp can
   bite) or whose float32 scale is not normal: x * 2^(158-E) in float64 (exact), one
   division by n, np.rint, np.clip to +-lim, cast. Rare, so left as it is. */
static void q_clamped(const float *x, int32_t *q, Py_ssize_t k, int e, int n)
{
    const double p = ldexp(1.0, 158 - e), lim = (double)(INT32_MAX / n);
    for (Py_ssize_t i = 0; i < k; i++) {
        double r = rint((double)x[i] * p / n);
        q[i] = (int32_t)(r > lim ? lim : r < -lim ? -lim : r);
    }
}


/* Every other row: the scaled value, rounded and cast by rint_int32 (_simd.h). In range:
   with the block's real exponent R <= E, |x| <= (1 - 2^-24) * 2^(R-127), so
   |x * 2^(158-E) / n| <= (2^31 - 2^7) / n (docs/protocol.md, "Why the sum cannot
   overflow"); the float64 roundings of modes 1 and 2 (relative 2^-52) stay far inside
   that margin. */
INLINE int quantize_blocks(const struct qargs *a, int vrint)
{
    const float *t32 = a->table;
    const double *t64 = a->table;
    const Py_ssize_t k = a->k;
    for (Py_ssize_t j = 0; j < a->b; j++) {
        const float *x = a->x + j * k;
        int32_t *q = a->q + j * k;
        /* The block's real exponent, as block_exponents computes it (the block is then in
           L1 for the pass below). It also proves the casts below in range. */
        uint32_t m = max_abs_bits(x, k);
        if (m >= INF_BITS)                /* NaN or +-Inf: with an own given, numpy's */
            return a->own ? REDO : NONFINITE;   /* code defines the (garbage) result */
        const int real = exponent_of(m), e = a->agreed[j];
        const int own = a->own ? a->own[j] : real;
        if (own > e || e < a->regular_from) {
            q_clamped(x, q, k, e, a->n);
        } else if (real > e) {
            return REDO;                  /* an own below the real one: beyond int32 */
        } else if (a->mode == Q_F32_MUL) {
            /* power-of-two n: np.multiply in float32 by f = 2^s (exact), np.rint, cast */
            const float f = t32[e];
            for (Py_ssize_t i = 0; i < k; i++) {
                float y = x[i] * f;
                q[i] = vrint ? (int32_t)rintf(y) : rint_int32(y, 0);  /* y widens exactly */
            }
        } else if (a->mode == Q_F64_MUL) {
            /* other n: x widened to float64 (exact), one float64 multiply by
               c = 2^(158-E) * fl(1/n), np.rint, cast */
            const double c = t64[e];
            for (Py_ssize_t i = 0; i < k; i++)
                q[i] = rint_int32((double)x[i] * c, vrint);
        } else {
            /* n with an inexact reciprocal: one float64 division by n * 2^(E-158) */
            const double d = t64[e];
            for (Py_ssize_t i = 0; i < k; i++)
                q[i] = rint_int32((double)x[i] / d, vrint);
        }
    }
    return OK;
}

/* ---------------------------------------------------------------- dequantize */

struct dargs {
    const int32_t *s;        /* b blocks of k int32 */
    Py_ssize_t b, k;
    const uint8_t *agreed;
    int mode, regular_from;
    const float *scale32;    /* 256 float32: 2^(E-158+log2 n), 0 for E = 0 (D_F32) */
    const double *mul64;     /* 256 float64: n * 2^(E-158), 0 for E = 0 */
    void *out;               /* b blocks of k float32 (float64 for D_F64); for float32
                                out may be s itself: each element is read, then written
                                (setup.py compiles with -fno-strict-aliasing for this) */
};

INLINE void dequantize_blocks(const struct dargs *a)
{
    const Py_ssize_t k = a->k;
    for (Py_ssize_t j = 0; j < a->b; j++) {
        const int32_t *s = a->s + j * k;
        const int e = a->agreed[j];
        const double g = a->mul64[e];
        if (a->mode == D_F64) {
            /* the exact float64 product s * g */
            double *o = (double *)a->out + j * k;
            for (Py_ssize_t i = 0; i < k; i++)
                o[i] = (double)s[i] * g;
        } else if (a->mode == D_F32 && (e == 0 || e >= a->regular_from)) {
            /* power-of-two n: the int32 -> float32 cast (rounded once, as numpy's), then a
               float32 multiply by 2^t (exact while normal; inf on overflow, as numpy) */
            float *o = (float *)a->out + j * k;
            const float f = a->scale32[e];
            for (Py_ssize_t i = 0; i < k; i++)
                o[i] = (float)s[i] * f;
        } else {
            /* otherwise the exact float64 product, rounded once to float32 */
            float *o = (float *)a->out + j * k;
            for (Py_ssize_t i = 0; i < k; i++)
                o[i] = (float)((double)s[i] * g);
        }
    }
}

/* ---------------------------------------------------------------- the two copies */

static int exponents_base(const float *x, Py_ssize_t b, Py_ssize_t k, uint8_t *e)
{
    return exponent_blocks(x, b, k, e);
}
static int quantize_base(const struct qargs *a) { return quantize_blocks(a, !X86); }
static void dequantize_base(const struct dargs *a) { dequantize_blocks(a); }

static int (*exponents_impl)(const float *, Py_ssize_t, Py_ssize_t, uint8_t *) = exponents_base;
static int (*quantize_impl)(const struct qargs *) = quantize_base;
static void (*dequantize_impl)(const struct dargs *) = dequantize_base;

#if X86
AVX2 static int exponents_avx2(const float *x, Py_ssize_t b, Py_ssize_t k, uint8_t *e)
{
    return exponent_blocks(x, b, k, e);
}
AVX2 static int quantize_avx2(const struct qargs *a) { return quantize_blocks(a, 1); }
AVX2 static void dequantize_avx2(const struct dargs *a) { dequantize_blocks(a); }
#endif

PyDoc_STRVAR(use_avx2_doc,
"use_avx2(on) -> bool\n\n"
"Run the AVX2 copy of the kernels when `on` and the CPU has AVX2, else the baseline copy\n"
"(tests run both). Returns whether the AVX2 copy runs. The module starts with on=True.");

static PyObject *use_avx2(PyObject *self, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0)
        return NULL;
    exponents_impl = exponents_base;
    quantize_impl = quantize_base;
    dequantize_impl = dequantize_base;
#if X86
    __builtin_cpu_init();
    on = on && __builtin_cpu_supports("avx2");
    if (on) {
        exponents_impl = exponents_avx2;
        quantize_impl = quantize_avx2;
        dequantize_impl = dequantize_avx2;
    }
#else
    on = 0;
#endif
    return PyBool_FromLong(on);
}

/* ---------------------------------------------------------------- argument checks */

static int check_len(const Py_buffer *v, Py_ssize_t want, Py_ssize_t align, const char *name)
{
    if (v->len != want) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes, %zd expected", name, v->len, want);
        return -1;
    }
    if ((uintptr_t)v->buf % (uintptr_t)align) {
        PyErr_Format(PyExc_ValueError, "%s: not aligned", name);
        return -1;
    }
    return 0;
}

/* -1 with an exception when the input and output buffers overlap, other than as the
   very same buffer where `same_ok`. */
static int check_apart(const Py_buffer *in, const Py_buffer *out, int same_ok)
{
    const char *i0 = in->buf, *o0 = out->buf;
    if (i0 + in->len <= o0 || o0 + out->len <= i0 || (same_ok && i0 == o0 && in->len == out->len))
        return 0;
    PyErr_SetString(PyExc_ValueError, same_ok ? "out overlaps the input other than exactly"
                                              : "out overlaps the input");
    return -1;
}

/* The number of blocks of K elements of 4 bytes in v, or -1 with an exception. */
static Py_ssize_t block_rows(const Py_buffer *v, Py_ssize_t k)
{
    if (k < 1 || v->len % (k * 4)) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not whole blocks of K = %zd", v->len, k);
        return -1;
    }
    Py_ssize_t b = v->len / (k * 4);
    return check_len(v, b * k * 4, 4, "blocks") ? -1 : b;
}

/* ---------------------------------------------------------------- entry points */

PyDoc_STRVAR(exponents_doc,
"exponents(blocks, k, out) -> status\n\n"
"The biased exponent of every K-element block of a float32 buffer into a uint8 buffer\n"
"(block_exponents). Returns 0, or 1 when a block holds NaN or +-Inf.");

static PyObject *exponents(PyObject *self, PyObject *args)
{
    Py_buffer xb, eb;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "y*nw*", &xb, &k, &eb))
        return NULL;
    int status = -1;
    Py_ssize_t b = block_rows(&xb, k);
    if (b >= 0 && !check_len(&eb, b, 1, "out")) {
        Py_BEGIN_ALLOW_THREADS
        status = exponents_impl(xb.buf, b, k, eb.buf);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&xb);
    PyBuffer_Release(&eb);
    return status < 0 ? NULL : PyLong_FromLong(status);
}

PyDoc_STRVAR(quantize_doc,
"quantize(blocks, k, agreed, own, n, mode, table, regular_from, out) -> status\n\n"
"quantize() of float32 blocks into an int32 buffer. agreed: uint8 per block; own: uint8\n"
"per block, or None to compute it on the way (status 1: a block holds NaN or +-Inf).\n"
"mode 0: float32 multiply by table[E] (256 float32); 1: float64 multiply by table[E];\n"
"2: float64 division by table[E] (256 float64). Rows with own > E or E < regular_from\n"
"take the clamped float64 path. Status 2: the numpy code must redo the call. out must\n"
"not overlap blocks (ValueError).");

static PyObject *quantize(PyObject *self, PyObject *args)
{
    Py_buffer xb, ab, ob, tb, qb;
    struct qargs a;
    if (!PyArg_ParseTuple(args, "y*ny*z*iiy*iw*", &xb, &a.k, &ab, &ob, &a.n, &a.mode, &tb,
                          &a.regular_from, &qb))
        return NULL;
    int status = -1;
    Py_ssize_t tsize = a.mode == Q_F32_MUL ? 4 : 8;
    a.b = block_rows(&xb, a.k);
    if (a.mode < Q_F32_MUL || a.mode > Q_F64_DIV || a.n < 1) {
        PyErr_SetString(PyExc_ValueError, "bad mode or n");
    } else if (a.b >= 0 && !check_len(&ab, a.b, 1, "agreed")
               && !(ob.buf && check_len(&ob, a.b, 1, "own"))
               && !check_len(&tb, 256 * tsize, tsize, "table")
               && !check_len(&qb, xb.len, 4, "out")
               && !check_apart(&xb, &qb, 0)) {
        a.x = xb.buf;
        a.agreed = ab.buf;
        a.own = ob.buf;
        a.table = tb.buf;
        a.q = qb.buf;
        Py_BEGIN_ALLOW_THREADS
        status = quantize_impl(&a);
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&xb);
    PyBuffer_Release(&ab);
    PyBuffer_Release(&ob);
    PyBuffer_Release(&tb);
    PyBuffer_Release(&qb);
    return status < 0 ? NULL : PyLong_FromLong(status);
}

PyDoc_STRVAR(dequantize_doc,
"dequantize(sums, k, agreed, mode, scale32, mul64, regular_from, out) -> status\n\n"
"dequantize() of int32 blocks. mode 0: float32 out, float32 multiply by scale32[E] (256\n"
"float32), except rows with 0 < E < regular_from: the float64 product with mul64[E] (256\n"
"float64) rounded to float32; 1: that for every row; 2: float64 out. In modes 0 and 1\n"
"out may be sums itself (in place); any other overlap is a ValueError. Status 0.");

static PyObject *dequantize(PyObject *self, PyObject *args)
{
    Py_buffer sb, ab, fb, gb, ob;
    struct dargs a;
    if (!PyArg_ParseTuple(args, "y*ny*iz*y*iw*", &sb, &a.k, &ab, &a.mode, &fb, &gb,
                          &a.regular_from, &ob))
        return NULL;
    int status = -1;
    Py_ssize_t osize = a.mode == D_F64 ? 8 : 4;
    a.b = block_rows(&sb, a.k);
    if (a.mode < D_F32 || a.mode > D_F64 || (a.mode == D_F32 && !fb.buf)) {
        PyErr_SetString(PyExc_ValueError, "bad mode or missing scale32");
    } else if (a.b >= 0 && !check_len(&ab, a.b, 1, "agreed")
               && !check_len(&gb, 256 * 8, 8, "mul64")
               && !(fb.buf && check_len(&fb, 256 * 4, 4, "scale32"))
               && !check_len(&ob, a.b * a.k * osize, osize, "out")
               && !check_apart(&sb, &ob, a.mode != D_F64)) {
        a.s = sb.buf;
        a.agreed = ab.buf;
        a.scale32 = fb.buf;
        a.mul64 = gb.buf;
        a.out = ob.buf;
        Py_BEGIN_ALLOW_THREADS
        dequantize_impl(&a);
        Py_END_ALLOW_THREADS
        status = OK;
    }
    PyBuffer_Release(&sb);
    PyBuffer_Release(&ab);
    PyBuffer_Release(&fb);
    PyBuffer_Release(&gb);
    PyBuffer_Release(&ob);
    return status < 0 ? NULL : PyLong_FromLong(status);
}

/* ---------------------------------------------------------------- module */

static PyMethodDef methods[] = {
    {"exponents", exponents, METH_VARARGS, exponents_doc},
    {"use_avx2", use_avx2, METH_O, use_avx2_doc},
    {"quantize", quantize, METH_VARARGS, quantize_doc},
    {"dequantize", dequantize, METH_VARARGS, dequantize_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_quantize_c",
    "Fused quantize / dequantize kernels for p4reduce.host.quantize (bit-identical to its "
    "numpy code).", -1, methods,
};

PyMODINIT_FUNC PyInit__quantize_c(void)
{
    /* Float arithmetic carried out in wider registers (x87, FLT_EVAL_METHOD != 0) could
       round twice where numpy rounds once: then there is no kernel and numpy does the
       work (quantize.py logs why). */
    if (FLT_EVAL_METHOD != 0) {
        PyErr_SetString(PyExc_ImportError, "_quantize_c needs FLT_EVAL_METHOD == 0");
        return NULL;
    }
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *r = use_avx2(m, Py_True);   /* picks the copy of the kernels */
    if (r == NULL) {
        Py_DECREF(m);
        return NULL;
    }
    Py_DECREF(r);
    return m;
}
