"""Quantize + dequantize throughput against np.copyto of the same array (docs/host.md).

Run: .venv/bin/python tests/host/bench_quantize.py [M] [K]. Not collected by pytest (the
name has no test_ prefix) and nothing here is asserted: timings depend on the machine and
its load. Each figure is the best of several runs, interleaved with the baseline.
"""

from __future__ import annotations

import sys
import time

import numpy as np
from p4reduce.host import quantize as Q


def best(fn, reps: int = 25) -> float:
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def main() -> None:
    m = int(sys.argv[1]) if len(sys.argv) > 1 else 4 * 1024 * 1024
    k = int(sys.argv[2]) if len(sys.argv) > 2 else 64
    rng = np.random.default_rng(0)
    x = (rng.standard_normal(m) * np.exp2(rng.integers(-8, 8, m))).astype(np.float32)
    blocks = Q.to_blocks(x, k)
    dst = np.empty_like(blocks)
    print(f"M = {m} float32 elements, K = {k}, {blocks.shape[0]} blocks")
    for n in (4, 3):
        own = Q.block_exponents(blocks)
        q = np.empty(blocks.shape, dtype=np.int32)
        out = np.empty(blocks.shape, dtype=np.float32)
        t_copy = best(lambda: np.copyto(dst, blocks))
        t_exp = best(lambda: Q.block_exponents(blocks))
        t_q = best(lambda: Q.quantize(blocks, own, n, own=own, out=q))  # noqa: B023
        t_d = best(lambda: Q.dequantize(q, own, n, out=out))  # noqa: B023
        t_copy = min(t_copy, best(lambda: np.copyto(dst, blocks)))
        pow2 = "power of two: float32 path" if n & (n - 1) == 0 else "float64 path"
        print(f"n = {n} ({pow2})")
        print(f"  np.copyto            {t_copy * 1e3:7.2f} ms  (1.00)")
        for name, t in (
            ("block_exponents", t_exp),
            ("quantize", t_q),
            ("dequantize", t_d),
            ("quantize+dequantize", t_q + t_d),
            ("exponents+q+dq", t_exp + t_q + t_d),
        ):
            print(f"  {name:20s} {t * 1e3:7.2f} ms  throughput ratio {t_copy / t:.2f}")


if __name__ == "__main__":
    main()
