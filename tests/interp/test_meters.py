"""Tests of the BMv2 two-rate three-colour meter with a synthetic clock."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from p4reduce.switch.interp.meters import GREEN, RED, YELLOW, Meter, MeterArray, MeterType

SECOND = 1_000_000  # microseconds


def test_colour_values():
    assert (GREEN, YELLOW, RED) == (0, 1, 2)


def test_unconfigured_meter_is_green():
    m = Meter()
    assert not m.configured
    assert all(m.execute(10_000, t) == GREEN for t in range(5))


def test_burst_exhaustion_yellow_then_red():
    m = Meter()
    # committed 1 pkt/s burst 2, peak 2 pkt/s burst 4 (rates in packets per microsecond)
    m.set_rates([(1 / SECOND, 2), (2 / SECOND, 4)])
    colours = [m.execute(1, 0) for _ in range(6)]
    assert colours == [GREEN, GREEN, YELLOW, YELLOW, RED, RED]


def test_refill_after_time_passes():
    m = Meter()
    m.set_rates([(1 / SECOND, 2), (2 / SECOND, 4)])
    for _ in range(5):
        m.execute(1, 0)
    # one second later: peak bucket +2, committed bucket +1
    assert m.execute(1, SECOND) == GREEN
    assert m.execute(1, SECOND) == YELLOW
    assert m.execute(1, SECOND) == RED
    # a long idle time refills to the bursts, no more
    colours = [m.execute(1, 100 * SECOND) for _ in range(6)]
    assert colours == [GREEN, GREEN, YELLOW, YELLOW, RED, RED]


def test_red_takes_no_tokens():
    m = Meter()
    m.set_rates([(0.0, 1), (0.0, 1)])
    assert m.execute(1, 0) == GREEN
    assert m.execute(1, 0) == RED
    assert m.execute(1, 0) == RED


def test_yellow_takes_peak_tokens_only():
    m = Meter()
    m.set_rates([(0.0, 0), (0.0, 3)])
    assert [m.execute(1, 0) for _ in range(4)] == [YELLOW, YELLOW, YELLOW, RED]


def test_units_larger_than_bucket():
    m = Meter()
    m.set_rates([(0.0, 100), (0.0, 200)])
    assert m.execute(150, 0) == YELLOW  # peak pays 150, committed has only 100
    assert m.execute(60, 0) == RED  # peak has 50 left
    assert m.execute(50, 0) == GREEN  # peak 50 -> 0, committed 100 -> 50


def test_tokens_are_a_truncated_double_product():
    # 100 * 0.57 == 56.99999999999999 in doubles, so only 56 tokens are credited at 100 us
    m = Meter()
    m.set_rates([(0.57, 100), (0.57, 100)])
    assert m.execute(100, 0) == GREEN
    assert m.execute(57, 100) == RED
    assert m.execute(56, 100) == GREEN


def test_fractional_tokens_accumulate_from_origin():
    m = Meter()
    m.set_rates([(0.3, 1), (0.3, 1)])
    assert m.execute(1, 0) == GREEN
    # totals since origin: t=3 -> 0, t=4 -> 1 (0.9 then 1.2), no rounding drift
    assert m.execute(1, 3) == RED
    assert m.execute(1, 4) == GREEN


def test_time_origin():
    m = Meter()
    m.set_rates([(1.0, 1), (1.0, 1)])
    m.reset_time_origin(1000)
    assert m.execute(1, 1000) == GREEN
    assert m.execute(1, 1000) == RED
    assert m.execute(1, 1001) == GREEN


def test_time_going_backwards_adds_nothing():
    m = Meter()
    m.set_rates([(1.0, 1), (1.0, 1)])
    assert m.execute(1, 10) == GREEN
    assert m.execute(1, 5) == RED
    assert m.execute(1, 11) == GREEN


def test_pre_color():
    m = Meter()
    assert m.execute(1, 0, pre_color=YELLOW) == YELLOW
    m.set_rates([(0.0, 0), (0.0, 0)])
    assert m.execute(1, 0, pre_color=YELLOW) == RED


def test_set_rates_validation():
    m = Meter()
    with pytest.raises(ValueError):
        m.set_rates([(1.0, 10)])
    with pytest.raises(ValueError):
        m.set_rates([(2.0, 10), (1.0, 10)])  # committed above peak
    with pytest.raises(ValueError):
        m.set_rates([(-1.0, 10), (1.0, 10)])
    assert not m.configured
    m.set_rates([(1.0, 10), (1.0, 20)])
    assert m.get_rates() == [(1.0, 10), (1.0, 20)]
    with pytest.raises(ValueError):
        m.set_rates([(2.0, 10), (1.0, 10)])
    assert m.get_rates() == [(1.0, 10), (1.0, 20)]


def test_reset_and_reconfigure_refills():
    m = Meter()
    m.set_rates([(0.0, 1), (0.0, 1)])
    m.execute(1, 0)
    assert m.execute(1, 0) == RED
    m.reset()
    assert not m.configured and m.get_rates() == []
    assert m.execute(1, 0) == GREEN
    m.set_rates([(0.0, 1), (0.0, 1)])  # buckets start full again
    assert m.execute(1, 0) == GREEN
    assert m.execute(1, 0) == RED


def test_meter_array_packets_vs_bytes():
    pk = MeterArray(4, MeterType.PACKETS)
    by = MeterArray(4, "bytes")
    for arr in (pk, by):
        arr.set_rates([(0.0, 1000), (0.0, 2000)])
    # a packets meter counts 1 per packet whatever its length
    assert [pk.execute(0, 1500, 0) for _ in range(3)] == [GREEN, GREEN, GREEN]
    # a bytes meter counts the length
    assert [by.execute(0, 600, 0) for _ in range(4)] == [GREEN, YELLOW, YELLOW, RED]
    # cells are independent
    assert by.execute(1, 600, 0) == GREEN
    assert len(by) == 4


def test_meter_array_per_cell_rates_and_bounds():
    arr = MeterArray(2, MeterType.PACKETS)
    arr.set_cell_rates(1, [(0.0, 0), (0.0, 0)])
    assert arr.execute(0, 64, 0) == GREEN  # cell 0 unconfigured
    assert arr.execute(1, 64, 0) == RED
    assert arr[1].get_rates() == [(0.0, 0), (0.0, 0)]
    with pytest.raises(IndexError):
        arr.execute(2, 64, 0)
    with pytest.raises(IndexError):
        arr.execute(-1, 64, 0)
    arr.reset()
    assert arr.execute(1, 64, 0) == GREEN


@given(
    cir=st.floats(min_value=0, max_value=2.0),
    extra=st.floats(min_value=0, max_value=2.0),
    cbs=st.integers(min_value=0, max_value=3000),
    pbs=st.integers(min_value=0, max_value=3000),
    packets=st.lists(
        st.tuples(
            st.integers(min_value=0, max_value=2000), st.integers(min_value=1, max_value=1500)
        ),
        max_size=60,
    ),
)
def test_token_conservation(cir, extra, cbs, pbs, packets):
    """GREEN units never exceed what the committed bucket could hold plus its refill, and
    GREEN+YELLOW units never exceed the same for the peak bucket (RFC 2698 guarantees)."""
    pir = cir + extra
    m = Meter()
    m.set_rates([(cir, cbs), (pir, pbs)])
    now = 0
    green = yellow = 0
    for dt, size in packets:
        now += dt
        colour = m.execute(size, now)
        if colour == GREEN:
            green += size
        elif colour == YELLOW:
            yellow += size
        assert green <= cbs + int(now * cir)
        assert green + yellow <= pbs + int(now * pir)
