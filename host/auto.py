"""``mode="auto"`` of the numpy API: which message type a call uses, decided identically on
every worker without paying an agreement round on every call (docs/host.md, ``mode="auto"``).

- ``decide_auto(U, B, S, is_float)``: the rule, from the number U of blocks non-zero on some
  worker.
- The **census** (agreement round): a dense int32 all-reduce of each worker's non-zero block
  bitmap packed 6 bits per block (``census_vector``, ``census_union``); it gives every
  worker the exact U of this tensor. It costs a round trip through the switch and a
  rendezvous of all workers, which at low density is more than the sparse call itself.
- ``AutoCache``: per tensor shape and dtype, the decision taken, updated after every call
  from the **union seen in the call's result** (``result_union``). The result is
  bit-identical on every worker (the switch multicasts one sum; the dequantization is
  deterministic), so every worker updates alike, for free. A census runs only for the first
  call of a shape and every ``recheck``-th call after it (the result cannot see a block
  whose contributions cancel to exactly zero, nor a tensor that shares a shape with another).

Every worker makes the same calls in the same order (the API requires it), so the cache
evolves identically everywhere; a recovery round or ``reset`` clears it on every worker.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from . import wire

# No agreement round for tensors of at most this many rounds of slots; a float32 call goes
# sparse only when it saves at least this share of packets.
AUTO_MIN_ROUNDS = 2
AUTO_FLOAT_SAVING = 0.2
# A census for the first call of a shape and then every AUTO_RECHECK-th call of it.
AUTO_RECHECK = 32
_CACHE_SHAPES = 256  # shapes remembered (the oldest is forgotten first, alike everywhere)
_AUTO_BITS = 6  # bits per block in the census vector: a count 0..32 fits
_AUTO_PER_LANE = 5  # blocks per int32 lane (30 bits, no carry between fields)

Key = tuple[tuple[int, ...], str]


def decide_auto(union: int, blocks: int, slots: int, is_float: bool) -> int:
    """The message type ``mode="auto"`` uses, from the number of blocks non-zero on some
    worker (``union``, the same on every worker).

    Packets per worker and direction: dense sends every block (B, plus min(S, B) priming
    packets for float32); sparse primes every slot and sends the union (min(S, B) + U).
    int32 goes sparse when that is fewer packets (the result is exact either way).
    float32 goes sparse only when it saves at least AUTO_FLOAT_SAVING of the packets:
    sparse quantizes a slot's whole stride class with one exponent, coarser than dense's
    per-block exponents, which is worth it only for a clear saving."""
    active = min(slots, blocks)
    sparse = active + union
    if is_float:
        dense = blocks + active
        return wire.MSG_SPARSE if sparse <= (1 - AUTO_FLOAT_SAVING) * dense else wire.MSG_DENSE
    return wire.MSG_SPARSE if sparse < blocks else wire.MSG_DENSE


def census_vector(nonzero: np.ndarray) -> np.ndarray:
    """The census's int32 vector from this worker's non-zero block bitmap: one 6-bit field
    per block, 5 blocks per lane; the switch's sum of a field is the number of workers with
    that block non-zero (at most 32 < 64, so no carry crosses fields)."""
    nb = nonzero.size
    lanes = -(-nb // _AUTO_PER_LANE)
    padded = np.zeros(lanes * _AUTO_PER_LANE, dtype=np.int32)
    padded[:nb] = nonzero
    shifts = np.arange(_AUTO_PER_LANE, dtype=np.int32) * _AUTO_BITS
    return (padded.reshape(lanes, _AUTO_PER_LANE) << shifts).sum(axis=1, dtype=np.int32)


def census_union(sums: np.ndarray, blocks: int) -> int:
    """The number of blocks non-zero on some worker, from the census's summed vector."""
    fields = (sums[:, None] >> (np.arange(_AUTO_PER_LANE) * _AUTO_BITS)) & 0x3F
    return int(np.count_nonzero(fields.reshape(-1)[:blocks]))


def result_union(result: np.ndarray, k: int) -> int:
    """The number of K-element blocks of an all-reduce result (float32 or int32) that are
    non-zero: the union of the workers' non-zero blocks, but for blocks whose contributions
    cancel exactly. -0.0 counts as zero and NaN as non-zero, as ``!= 0`` has it.

    It runs after every ``mode="auto"`` call, so it reads the result once and allocates
    nothing of the tensor's size: the OR of each block's bit patterns, less the float sign
    bit. (``blocks.any(axis=1)`` took 0.3-0.4 ms of a 5 ms call on the testbed, four
    workers on two cores: auto 1.07-1.13 of sparse at 0.1 % density.)"""
    flat = np.ravel(result)
    if flat.dtype.itemsize != 4:
        raise TypeError(f"result_union of a {flat.dtype} result: float32 or int32 only")
    value_bits = np.uint32(0x7FFFFFFF if flat.dtype.kind == "f" else 0xFFFFFFFF)
    # one OR per block, the short last block included
    ors = np.bitwise_or.reduceat(flat.view(np.uint32), np.arange(0, flat.size, k))
    return int(np.count_nonzero(ors & value_bits))


@dataclass
class _Entry:
    msg: int  # the message type the next call of this shape takes
    calls: int  # calls of this shape since its last census


class AutoCache:
    """Per (shape, dtype): the decision for the next ``mode="auto"`` call, or None when that
    call must run a census. Only ever changed by completed calls, in call order, so it is the
    same on every worker."""

    def __init__(self, recheck: int = AUTO_RECHECK) -> None:
        if recheck < 1:
            raise ValueError(f"auto recheck every {recheck} calls: at least 1")
        self.recheck = recheck
        self._entries: OrderedDict[Key, _Entry] = OrderedDict()

    def decision(self, key: Key) -> int | None:
        e = self._entries.get(key)
        if e is None or e.calls >= self.recheck:
            return None
        return e.msg

    def learn(self, key: Key, msg: int, *, census: bool) -> None:
        """A call of ``key`` completed and its union says ``msg`` for the next one;
        ``census``: the call ran a census (which restarts the count)."""
        e = self._entries.get(key)
        if e is None:
            if not census:  # forgotten meanwhile: the next call counts again from a census
                return
            e = self._entries[key] = _Entry(msg, 0)
            while len(self._entries) > _CACHE_SHAPES:
                self._entries.popitem(last=False)
        e.msg = msg
        e.calls = 1 if census else e.calls + 1

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)
