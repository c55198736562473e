/* The per-packet loops over K lanes (engine.h). */

#include "engine.h"

/* The per-packet loops over K lanes: quantizing a block into big-endian int32 lanes
   (quantize.quantize_row), storing a result's big-endian lanes into the int32 sums, and
   dequantizing them into a float32 row.
   Written once as inline functions with a flag `vrint` that is constant where they are
   inlined, and compiled twice, as host/_quantize_c.c does: an AVX2 copy (vrint = 1:
   rint/rintf, i.e. vroundps/vroundpd, the byte swaps as vpshufb), chosen when the module
   loads on a CPU with AVX2 (`use_avx2`), and a baseline copy (vrint = 0: the float64
   rounding trick of rint_int32 in _simd.h, which SSE2 vectorises, where rint would be a
   libm call per lane).
   Both copies give the same integers as numpy (tests/host/test_native_lanes.py). */

INLINE void put_lane(uint8_t *out, Py_ssize_t i, int32_t v)
{
    uint32_t u = __builtin_bswap32((uint32_t)v);
    memcpy(out + 4 * i, &u, 4);
}

/* quantize.quantize_row: K float32 values with agreed exponent e and own exponent own,
   big-endian int32 into out. The same operations as the numpy code and the kernel. */
INLINE void quantize_lanes(const float *x, Py_ssize_t k, int n, int e, int own, int q_mode,
                           int regular_from, const void *q_table, uint8_t *out, int vrint)
{
    if (own > e || e < regular_from) {
        /* quantize._quantize_rows64: exact scale in float64, one division by n, rint,
           clip to +-floor((2^31 - 1) / n). Rare: left scalar, with libm's rint. */
        const double p = ldexp(1.0, 158 - e), lim = (double)(INT32_MAX / n);
        for (Py_ssize_t i = 0; i < k; i++) {
            double y = (double)x[i] * p;
            y /= n;
            double r = rint(y);
            r = r > lim ? lim : r < -lim ? -lim : r;
            put_lane(out, i, (int32_t)r);
        }
    } else if (q_mode == Q_F32_MUL) {
        /* power-of-two n: float32 multiply by f = 2^s (exact), rint, cast */
        const float f = ((const float *)q_table)[e];
        for (Py_ssize_t i = 0; i < k; i++) {
            float y = x[i] * f;
            put_lane(out, i, vrint ? (int32_t)rintf(y) : rint_int32(y, 0)); /* y widens exactly */
        }
    } else if (q_mode == Q_F64_MUL) {
        const double m = ((const double *)q_table)[e];
        for (Py_ssize_t i = 0; i < k; i++)
            put_lane(out, i, rint_int32((double)x[i] * m, vrint));
    } else {
        const double d = ((const double *)q_table)[e];
        for (Py_ssize_t i = 0; i < k; i++)
            put_lane(out, i, rint_int32((double)x[i] / d, vrint));
    }
}

/* A result's K big-endian lanes into the int32 sums. */
INLINE void store_lanes(int32_t *row, const uint8_t *data, Py_ssize_t k)
{
    for (Py_ssize_t i = 0; i < k; i++) {
        uint32_t u;
        memcpy(&u, data + 4 * i, 4);
        row[i] = (int32_t)__builtin_bswap32(u);
    }
}

/* A result's K big-endian lanes dequantized into a float32 row, as quantize.dequantize
   does one row (host/_quantize_c.c, dequantize_blocks): `f32` the power-of-two case, the
   int32 -> float32 cast then a float32 multiply by f; else the exact float64 product by g,
   rounded once. The same operations in the same order, so the same bits. */
INLINE void dequantize_lanes(float *row, const uint8_t *data, Py_ssize_t k, int f32, float f,
                             double g)
{
    if (f32) {
        for (Py_ssize_t i = 0; i < k; i++) {
            uint32_t u;
            memcpy(&u, data + 4 * i, 4);
            row[i] = (float)(int32_t)__builtin_bswap32(u) * f;
        }
    } else {
        for (Py_ssize_t i = 0; i < k; i++) {
            uint32_t u;
            memcpy(&u, data + 4 * i, 4);
            row[i] = (float)((double)(int32_t)__builtin_bswap32(u) * g);
        }
    }
}

static void quantize_base(const float *x, Py_ssize_t k, int n, int e, int own, int q_mode,
                          int regular_from, const void *q_table, uint8_t *out)
{
    quantize_lanes(x, k, n, e, own, q_mode, regular_from, q_table, out, !X86);
}
static void store_base(int32_t *row, const uint8_t *data, Py_ssize_t k)
{
    store_lanes(row, data, k);
}
static void dequantize_base(float *row, const uint8_t *data, Py_ssize_t k, int f32, float f,
                            double g)
{
    dequantize_lanes(row, data, k, f32, f, g);
}
#if X86
AVX2 static void quantize_avx2(const float *x, Py_ssize_t k, int n, int e, int own,
                               int q_mode, int regular_from, const void *q_table, uint8_t *out)
{
    quantize_lanes(x, k, n, e, own, q_mode, regular_from, q_table, out, 1);
}
AVX2 static void store_avx2(int32_t *row, const uint8_t *data, Py_ssize_t k)
{
    store_lanes(row, data, k);
}
AVX2 static void dequantize_avx2(float *row, const uint8_t *data, Py_ssize_t k, int f32,
                                 float f, double g)
{
    dequantize_lanes(row, data, k, f32, f, g);
}
#endif

HIDDEN quantize_fn quantize_impl = quantize_base;
HIDDEN store_fn store_impl = store_base;
HIDDEN dequantize_fn dequantize_impl = dequantize_base;

/* Run the AVX2 copy of the lane loops when `on` and the CPU has AVX2, else the baseline
   copy (tests run both); returns whether the AVX2 copy runs. */
HIDDEN int lanes_use_avx2(int on)
{
    quantize_impl = quantize_base;
    store_impl = store_base;
    dequantize_impl = dequantize_base;
#if X86
    __builtin_cpu_init();
    on = on && __builtin_cpu_supports("avx2");
    if (on) {
        quantize_impl = quantize_avx2;
        store_impl = store_avx2;
        dequantize_impl = dequantize_avx2;
    }
#else
    on = 0;
#endif
    return on;
}
