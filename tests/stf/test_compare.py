"""Tests for STF packet matching and mismatch reports (switch/stf/compare.py)."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from p4reduce.switch.stf.compare import (
    first_difference,
    format_mismatch,
    normalize_pattern,
    packet_matches,
)

PKT = bytes.fromhex("0a0b0c0d")


# --- matching -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "exact", "matches"),
    [
        ("0A0B0C0D", False, True),
        ("0A0B0C0D", True, True),
        ("0a0b0c0d", True, True),  # case does not matter
        ("0A 0B\t0C 0D", True, True),  # whitespace does not matter
        ("0A0B", False, True),  # prefix: longer received passes
        ("0A0B", True, False),  # ... unless exact
        ("0A0B0C0D00", False, False),  # shorter received fails
        ("0A0B0C0D00", True, False),
        ("0A**0C0D", True, True),  # per-nibble wildcards
        ("*A*B*C*D", True, True),
        ("********", True, True),
        ("********", False, True),
        ("**********", False, False),  # wildcards still need bytes
        ("0A0B0C0E", False, False),
        ("1A0B0C0D", False, False),
        ("0A0", False, True),  # odd pattern: a nibble prefix
        ("0A1", False, False),
        ("0A0B0C0", True, False),  # an odd exact pattern never matches
        ("", False, True),  # empty prefix matches anything
        ("", True, False),
    ],
)
def test_packet_matches(pattern, exact, matches):
    assert packet_matches(pattern, exact, PKT) is matches


def test_empty_packet():
    assert packet_matches("", True, b"")
    assert packet_matches("", False, b"")
    assert not packet_matches("0*", False, b"")


@pytest.mark.parametrize(
    ("pattern", "exact", "index"),
    [
        ("0A0B0C0D", True, None),
        ("0A0B0C0E", False, 7),
        ("0A0C", False, 3),
        ("1A0B", False, 0),
        ("0A0B0C0D1122", False, 8),  # received ends first
        ("0A0B", True, 4),  # pattern ends first, exact
        ("0A0B", False, None),
        ("0A0", True, 3),
        ("0A0B0C0D*", False, 8),
    ],
)
def test_first_difference(pattern, exact, index):
    assert first_difference(pattern, PKT, exact) == index


def test_first_difference_defaults_to_prefix():
    assert first_difference("0A", PKT) is None


def test_normalize_pattern():
    assert normalize_pattern(" ab *c\n") == "AB*C"
    with pytest.raises(ValueError, match="invalid character 'G'"):
        normalize_pattern("0g")
    with pytest.raises(ValueError, match=r"invalid character '\$'"):
        packet_matches("00$", False, b"\x00")


# --- reports --------------------------------------------------------------------------------


def test_report_no_packet():
    text = format_mismatch(2, "0a0b", True, None)
    assert text.splitlines() == [
        "port 2: no packet received",
        "  expected (exact length, 2 bytes):",
        "    0000  0A 0B",
    ]


def test_report_content_difference_marks_the_byte():
    text = format_mismatch(1, "0A0B**0E", False, PKT)
    assert text.splitlines() == [
        "port 1: packets differ at byte 3 (hex digit 7): expected 0E, received 0D",
        "  expected (prefix, 4 bytes):",
        "    0000  0A 0B ** 0E",
        "                   ^^",
        "  received (4 bytes):",
        "    0000  0A 0B 0C 0D",
        "                   ^^",
    ]


def test_report_too_short_points_past_the_end():
    text = format_mismatch(0, "0A0B0C0D0E", False, PKT)
    lines = text.splitlines()
    assert lines[0] == "port 0: received packet too short: 4 bytes, expected at least 5 bytes"
    assert lines[-2:] == ["    0000  0A 0B 0C 0D", "                      ^^"]


def test_report_too_long_when_exact():
    text = format_mismatch(0, "0A0B", True, PKT)
    lines = text.splitlines()
    assert lines[0] == "port 0: received packet too long: 4 bytes, expected exactly 2 bytes"
    assert lines[1:4] == [
        "  expected (exact length, 2 bytes):",
        "    0000  0A 0B",
        "                ^^",
    ]


def test_report_odd_pattern_and_sizes():
    text = format_mismatch(0, "0A0B0", True, PKT)
    assert "expected exactly 5 hex digits" in text.splitlines()[0]
    assert "    0000  0A 0B 0" in text.splitlines()
    assert (
        format_mismatch(0, "", True, b"\x01")
        .splitlines()[0]
        .endswith("1 byte, expected exactly 0 bytes")
    )


def test_report_empty_received_packet():
    lines = format_mismatch(4, "00", False, b"").splitlines()
    assert lines[0] == "port 4: received packet too short: 0 bytes, expected at least 1 byte"
    assert lines[-2:] == ["    0000", "          ^^"]


def test_report_empty_expectation():
    assert format_mismatch(0, "", False, None).splitlines()[-1] == "    (empty)"


def test_report_when_matching():
    assert format_mismatch(9, "0A", False, PKT) == "port 9: packet matches the expectation"


def test_report_wraps_at_32_bytes_with_marker_under_the_right_line():
    data = bytes(range(80))
    pattern = data[:70].hex() + "FF"
    lines = format_mismatch(0, pattern, False, data).splitlines()
    assert lines[0] == "port 0: packets differ at byte 70 (hex digit 140): expected FF, received 46"
    expected_block = lines[2:6]
    assert [line[:8] for line in expected_block[:3]] == ["    0000", "    0020", "    0040"]
    assert expected_block[3] == " " * (10 + 3 * 6) + "^^"
    # Every dump line holds at most 32 bytes.
    for line in lines:
        if line.startswith("    0"):
            assert len(line.split()) <= 33
    received_block = lines[7:]
    assert received_block[2].startswith("    0040  40 41 42 43 44 45 46")
    assert received_block[3] == " " * (10 + 3 * 6) + "^^"
    assert len(received_block) == 4


def test_report_marker_on_a_full_line_boundary():
    data = bytes(64)
    lines = format_mismatch(0, data.hex() + "00", False, data).splitlines()
    # The received packet ends exactly at a line end: the marker gets a line of its own.
    assert lines[-2:] == ["    0040", "          ^^"]


# --- properties -----------------------------------------------------------------------------


@given(data=st.binary(max_size=100))
def test_a_packet_matches_its_own_hex(data):
    assert packet_matches(data.hex(), True, data)
    assert packet_matches(data.hex().upper(), False, data)
    assert first_difference(data.hex(), data, exact=True) is None


@given(data=st.binary(min_size=1, max_size=64), extra=st.binary(min_size=1, max_size=8))
def test_prefix_rule(data, extra):
    assert packet_matches(data.hex(), False, data + extra)
    assert not packet_matches(data.hex(), True, data + extra)
    assert not packet_matches((data + extra).hex(), False, data)
    assert first_difference((data + extra).hex(), data) == 2 * len(data)


@given(
    data=st.binary(min_size=1, max_size=64),
    index=st.integers(min_value=0),
    delta=st.integers(1, 15),
)
def test_changing_one_nibble_fails_unless_wildcarded(data, index, delta):
    text = data.hex().upper()
    index %= len(text)
    changed = format(int(text[index], 16) ^ delta, "X")
    assume(changed != text[index])
    wrong = text[:index] + changed + text[index + 1 :]
    assert not packet_matches(wrong, False, data)
    assert first_difference(wrong, data) == index
    assert f"(hex digit {index})" in format_mismatch(0, wrong, False, data)
    wildcarded = text[:index] + "*" + text[index + 1 :]
    assert packet_matches(wildcarded, True, data)


@given(data=st.binary(max_size=100), exact=st.booleans())
def test_report_always_has_both_dumps_on_mismatch(data, exact):
    pattern = data.hex() + "00"
    text = format_mismatch(3, pattern, exact, data)
    assert text.startswith("port 3: received packet too short")
    assert text.count("^^") == 2
