"""Meters exactly as BMv2 runs them: a colour-blind two-rate three-colour marker per cell.

Every rule follows behavioral-model's ``src/bm_sim/meters.cpp`` and ``include/bm/bm_sim/meters.h``:

- Rates are configured as ``(info_rate, burst_size)`` pairs, committed first then peak, the rate
  in units (packets or bytes) per *microsecond* and the burst in units. A committed rate above the
  peak rate is refused. Each bucket starts full (``tokens = burst``).
- Colours: GREEN 0, YELLOW 1, RED 2. A meter whose rates were never set (or were reset) returns
  GREEN and keeps no state.
- Tokens are not accrued from the previous packet but from a fixed time origin: at each
  execution a bucket's total so far is ``int(micros_since_origin * rate)`` (an integer times a
  double, truncated), the bucket gains the difference to the total it had seen, capped at
  ``burst``. So rounding never accumulates, and fractional tokens are only credited once they
  add up to a whole token.
- Buckets are checked peak first: fewer peak tokens than the packet's units gives RED and
  takes no tokens from either bucket; otherwise the peak bucket pays, then fewer committed tokens than the
  units gives YELLOW, otherwise the committed bucket pays too and the packet is GREEN.
- PACKETS meters count 1 unit per packet; BYTES meters count the packet's *ingress* length
  (``Packet::get_ingress_length``, the length as received, not after headers were added or
  removed), which the caller passes as ``units``/``packet_len``.

Compared with RFC 2698 (colour-blind mode) the decision is the same; what differs is the
token arithmetic: tokens are whole units, refilled lazily at packet arrivals from a cumulative
``floor(elapsed_us * rate)`` (rate per microsecond as a double, elapsed time in whole
microseconds), instead of a continuous refill of CIR/PIR tokens per second.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from enum import Enum
from typing import Protocol

GREEN = 0
MAX_RATE = float(1 << 60)  # units per microsecond
YELLOW = 1
RED = 2


class MeterType(Enum):
    PACKETS = "packets"
    BYTES = "bytes"


@dataclass
class _Bucket:
    rate: float  # units per microsecond
    burst: int
    tokens: int
    tokens_last: int  # cumulative tokens credited since the time origin
    color: int  # the colour given when this bucket lacks tokens


class MeterStore(Protocol):
    """Where a meter cell's buckets live when not in the cell itself (the native engine's
    store, switch/native/mirror_externs.py). The cell keeps its rates and validates them."""

    def push(self, cell: Meter) -> None:
        """Take the cell's whole state (rates, buckets, time origin)."""

    def pull(self, cell: Meter) -> None:
        """Give the buckets back to the cell."""

    def execute(self, cell: Meter, units: int, now_us: int, pre_color: int) -> int:
        """Meter.execute on the store's buckets."""
        ...


class Meter:
    """One meter cell with ``rate_count`` rates (2 for v1model: committed and peak)."""

    def __init__(self, rate_count: int = 2) -> None:
        self.rate_count = rate_count
        self._buckets: list[_Bucket] = []  # highest rate first, as BMv2 checks them
        self._origin_us = 0
        self.store: MeterStore | None = None  # None: the buckets here are the state

    def use_store(self, store: MeterStore | None) -> None:
        """Keep the buckets in ``store`` (None: here) from now on; the state moves along."""
        if self.store is not None:
            self.store.pull(self)
        self.store = store
        if store is not None:
            store.push(self)

    def pull(self) -> None:
        """Bring the store's buckets into this cell, to read them (no store: nothing to do)."""
        if self.store is not None:
            self.store.pull(self)

    def _changed(self) -> None:
        if self.store is not None:
            self.store.push(self)

    @property
    def configured(self) -> bool:
        return bool(self._buckets)

    def set_rates(self, rates: list[tuple[float, int]]) -> None:
        """Configure ``[(committed_rate, committed_burst), (peak_rate, peak_burst)]``.

        Rates are units per microsecond. Raises ``ValueError`` (leaving the meter as it was)
        where BMv2 answers BAD_RATES_LIST (wrong count) or INVALID_INFO_RATE_VALUE (a rate
        below the previous one); negative values are refused too.
        """
        if len(rates) != self.rate_count:
            raise ValueError(f"expected {self.rate_count} rates, got {len(rates)}")
        buckets = []
        for idx, (rate, burst) in enumerate(rates):
            if rate < 0 or burst < 0:
                raise ValueError(f"negative rate or burst: {(rate, burst)}")
            # BMv2 holds the burst in a size_t; the bound on the rate keeps the token totals
            # (micros * rate) finite and exact enough for the native engine's 128-bit copy
            if burst >= 1 << 64 or not math.isfinite(rate) or rate > MAX_RATE:
                raise ValueError(
                    f"rate or burst out of range: {(rate, burst)} (rate at most 2^60 units/us,"
                    " burst below 2^64)"
                )
            if idx > 0 and rates[idx - 1][0] > rate:
                raise ValueError("each rate must be at least the previous one (committed <= peak)")
            # meters.cpp Meter::set_rate: bucket starts full; colour idx + 1.
            buckets.append(_Bucket(float(rate), int(burst), int(burst), 0, idx + 1))
        buckets.reverse()
        self._buckets = buckets
        self._changed()

    def get_rates(self) -> list[tuple[float, int]]:
        """The configured rates, committed first; empty when unconfigured."""
        return [(b.rate, b.burst) for b in reversed(self._buckets)]

    def reset(self) -> None:
        """Forget the rates (BMv2 ``reset_rates``): the meter returns GREEN until set again."""
        self._buckets = []
        self._changed()

    def reset_time_origin(self, now_us: int) -> None:
        """Move the time origin that token totals are counted from (BMv2 default: creation)."""
        self.pull()  # the store's buckets, before the origin they count from moves
        self._origin_us = now_us
        self._changed()

    def execute(self, units: int, now_us: int, pre_color: int = GREEN) -> int:
        """Meter ``units`` at time ``now_us`` (microseconds, same clock as the origin).

        Returns the colour, or ``pre_color`` when that is higher. Time must not go backwards:
        BMv2 asserts on it; here a bucket then simply gains no tokens.
        """
        if self.store is not None:
            return self.store.execute(self, units, now_us, pre_color)
        color = GREEN
        micros = now_us - self._origin_us
        for bucket in self._buckets:
            total = int(micros * bucket.rate)
            if total > bucket.tokens_last:
                new_tokens = total - bucket.tokens_last
                bucket.tokens_last = total
                bucket.tokens = min(bucket.tokens + new_tokens, bucket.burst)
            if bucket.tokens < units:
                color = bucket.color
                break
            bucket.tokens -= units
        return max(pre_color, color)


class MeterArray:
    """A v1model ``meter(size, type)``: ``size`` independent cells of one unit type."""

    def __init__(self, size: int, unit: MeterType | str, rate_count: int = 2) -> None:
        self.unit = MeterType(unit)
        self.cells = [Meter(rate_count) for _ in range(size)]

    def __len__(self) -> int:
        return len(self.cells)

    def __getitem__(self, index: int) -> Meter:
        return self.cells[index]

    def set_rates(self, rates: list[tuple[float, int]]) -> None:
        """Configure every cell the same (BMv2 ``MeterArray::set_rates``)."""
        for cell in self.cells:
            cell.set_rates(rates)

    def set_cell_rates(self, index: int, rates: list[tuple[float, int]]) -> None:
        self.cells[index].set_rates(rates)

    def reset(self) -> None:
        """BMv2 ``MeterArray::reset_state``: every cell loses its rates."""
        for cell in self.cells:
            cell.reset()

    def execute(self, index: int, packet_len: int, now_us: int) -> int:
        """Colour of a packet of ``packet_len`` bytes (its ingress length) at cell ``index``.

        Raises ``IndexError`` out of range; BMv2's ``execute_meter`` then logs an error and
        leaves the destination field unchanged, which the caller should do.
        """
        if not 0 <= index < len(self.cells):
            raise IndexError(f"meter index {index} out of range for size {len(self.cells)}")
        units = 1 if self.unit is MeterType.PACKETS else packet_len
        return self.cells[index].execute(units, now_us)
