/* What host/_quantize_c.c and the native engine (host/_engine/) share to compile their
   per-element loops twice, once for x86 CPUs with AVX2 and once as a baseline copy, and
   to round the same way in both.

   Instruction sets. The loops are written once, as inline functions with a flag `vrint`
   that is a constant wherever they are inlined. On x86 only SSE4.1 and later round in
   vector registers (the SSE2 baseline calls rint element by element), so each loop has
   an AVX2 copy (vrint = 1: rint, i.e. vroundps/vroundpd), chosen when the module loads
   on a CPU with AVX2 (`__builtin_cpu_supports`), and a baseline copy (vrint = 0: the
   float64 rounding trick of rint_int32, which SSE2 vectorises). Both give the same
   integers. Other architectures have vector rounding (ARM64: frintx) and use rint. */

#ifndef P4REDUCE_SIMD_H
#define P4REDUCE_SIMD_H

#include <math.h>
#include <stdint.h>

#if defined(__FAST_MATH__)
#error "p4reduce's kernels must not be built with -ffast-math: their results must be numpy's, bit for bit"
#endif

#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
#define X86 1
#define INLINE static inline __attribute__((always_inline))
#define AVX2 __attribute__((target("avx2")))
#else
#define X86 0
#define INLINE static inline
#endif

/* np.rint, then numpy's cast to int32, of a y with |y| < 2^31 (the callers say why that
   holds: docs/protocol.md's clamp argument). rint rounds in the current rounding mode,
   which is round half to even unless a program changes it (numpy's rint assumes the
   same); the cast then truncates an integral value, which is exact. Without vector
   rounding: y + 1.5 * 2^52 lies in [2^52, 2^53), where consecutive float64s are 1 apart,
   so the addition itself rounds y to an integer, half to even (1.5 * 2^52 is even: the
   parity is y's integer's), and the subtraction is exact. The same integer as rint(y);
   no fast-math to fold the two. */
INLINE int32_t rint_int32(double y, int vrint)
{
    return vrint ? (int32_t)rint(y) : (int32_t)((y + 0x1.8p52) - 0x1.8p52);
}

#endif
