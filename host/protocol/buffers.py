"""Arrays that a session's calls reuse, one call after the next.

A call needs two arrays as large as its tensor: the float32 copy it quantizes from and the
int32 sums its results land in. Allocated fresh for every call, each is memory that glibc
maps from the kernel and unmaps again when it is freed, so the kernel zeroes it page by page
on first touch: 256 page faults per MB. On the testbed's VMs a 1 MB call paid about 1.3 ms of
CPU for them, ten times the cost of refilling arrays kept from the call before, and with 8
workers on two cores that CPU is time the links wait (docs/host.md, "Buffers").

The pool holds arrays a finished call gave back, by shape and dtype, up to ``max_bytes`` in
all (the least recently given go first). An array is given back only when nothing else can
still see it: the input copy when its call is done, the sums once the caller's result was
copied out of them (``Call.release``).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import numpy as np

MAX_BYTES = 256 << 20  # what one session keeps at most
_PER_SHAPE = 2  # arrays kept per (shape, dtype)

Key = tuple[tuple[int, ...], str]


class BufferPool:
    """Free arrays by (shape, dtype); every method is safe from any thread."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.bytes = 0
        self._free: OrderedDict[Key, list[np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()

    def empty(self, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        """A C-contiguous array of ``shape`` and ``dtype``, contents undefined."""
        dt = np.dtype(dtype)
        key = (tuple(shape), dt.str)
        with self._lock:
            kept = self._free.get(key)
            if kept:
                a = kept.pop()
                if not kept:
                    del self._free[key]
                self.bytes -= a.nbytes
                return a
        return np.empty(shape, dtype=dt)

    def zeros(self, shape: tuple[int, ...], dtype: np.dtype | type) -> np.ndarray:
        a = self.empty(shape, dtype)
        a.fill(0)
        return a

    def copy(self, a: np.ndarray) -> np.ndarray:
        """A C-contiguous copy of ``a``."""
        out = self.empty(a.shape, a.dtype)
        np.copyto(out, a)
        return out

    def give(self, a: np.ndarray) -> None:
        """Take ``a`` back for a later call. The caller promises that nothing reads or
        writes it any more. Views and arrays too large for the pool are left to the GC."""
        if a.base is not None or not a.flags.c_contiguous or not a.flags.writeable:
            return
        if a.nbytes > self.max_bytes or a.nbytes == 0:
            return
        key = (a.shape, a.dtype.str)
        with self._lock:
            kept = self._free.setdefault(key, [])
            if len(kept) >= _PER_SHAPE or any(x is a for x in kept):
                return
            kept.append(a)
            self._free.move_to_end(key)
            self.bytes += a.nbytes
            while self.bytes > self.max_bytes:
                old_key, old = next(iter(self._free.items()))
                self.bytes -= old.pop(0).nbytes
                if not old:
                    del self._free[old_key]
