"""Tests of the BMv2 hash algorithms against check values and independent implementations."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from p4reduce.switch.interp import hashes
from p4reduce.switch.interp.hashes import (
    DEFAULT_CRC_PARAMS,
    CrcParams,
    HashCalc,
    compute,
    hash_extern,
    pack_fields,
)
from scapy.utils import checksum

CHECK = b"123456789"


def _reflect(v: int, n: int) -> int:
    return sum(((v >> i) & 1) << (n - 1 - i) for i in range(n))


def _bitwise_crc(data: bytes, width: int, p: CrcParams) -> int:
    """Textbook bit-at-a-time Rocksoft CRC, written independently of the module's tables."""
    mask = (1 << width) - 1
    reg = p.init & mask
    for byte in data:
        if p.reflect_in:
            byte = _reflect(byte, 8)
        reg ^= byte << (width - 8)
        for _ in range(8):
            if reg & (1 << (width - 1)):
                reg = ((reg << 1) ^ p.poly) & mask
            else:
                reg = (reg << 1) & mask
    if p.reflect_out:
        reg = _reflect(reg, width)
    return reg ^ (p.xor_out & mask)


def _naive_csum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\x00"
    s = 0
    for i in range(0, len(data), 2):
        s += (data[i] << 8) | data[i + 1]
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _naive_xor(data: bytes, n: int) -> int:
    out = 0
    for i in range(0, len(data), n):
        chunk = data[i : i + n]
        out ^= int.from_bytes(chunk.ljust(n, b"\x00"), "big")
    return out


# --- check values -------------------------------------------------------------------------


def test_crc16_check_value():
    assert compute("crc16", CHECK) == 0xBB3D


def test_crc32_check_value():
    assert compute("crc32", CHECK) == 0xCBF43926


def test_custom_defaults_match_fixed_algorithms():
    assert compute("crc16_custom", CHECK) == 0xBB3D
    assert compute("crc32_custom", CHECK) == 0xCBF43926


def test_crc8_custom_default_is_crc8_smbus():
    assert compute("crc8_custom", CHECK) == 0xF4


def test_crc64_custom_default_matches_bitwise():
    assert compute("crc64_custom", CHECK) == _bitwise_crc(CHECK, 64, DEFAULT_CRC_PARAMS[64])


def test_crc_ccitt_check_value():
    assert compute("crcCCITT", CHECK) == 0x29B1


@pytest.mark.parametrize(
    ("width", "params", "check"),
    [
        (16, CrcParams(0x8005, 0xFFFF, 0, True, True), 0x4B37),  # CRC-16/MODBUS
        (16, CrcParams(0x1021, 0, 0, False, False), 0x31C3),  # CRC-16/XMODEM
        (16, CrcParams(0x1021, 0xFFFF, 0xFFFF, False, False), 0xD64E),  # CRC-16/GENIBUS
        (16, CrcParams(0x1021, 0, 0, True, True), 0x2189),  # CRC-16/KERMIT
        (32, CrcParams(0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, False, False), 0xFC891918),  # BZIP2
        (32, CrcParams(0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, True, True), 0xE3069283),  # CRC-32C
        (32, CrcParams(0x04C11DB7, 0xFFFFFFFF, 0, False, False), 0x0376E6E7),  # CRC-32/MPEG-2
        (8, CrcParams(0x31, 0, 0, True, True), 0xA1),  # CRC-8/MAXIM-DOW
    ],
)
def test_custom_crc_catalogue(width, params, check):
    algo = {8: "crc8_custom", 16: "crc16_custom", 32: "crc32_custom"}[width]
    assert compute(algo, CHECK, params=params) == check


def test_csum16_known_values():
    # RFC 1071 example bytes: 00 01 f2 03 f4 f5 f6 f7 -> sum 0xddf2, checksum 0x220d.
    assert compute("csum16", bytes.fromhex("0001f203f4f5f6f7")) == 0x220D
    assert compute("csum16", b"") == 0xFFFF
    assert compute("csum16", b"\x00\x00") == 0xFFFF
    assert compute("csum16", b"\xff\xff") == 0x0000
    # odd length: the last byte is the high byte of a zero-padded word
    assert compute("csum16", b"\x12") == ~0x1200 & 0xFFFF
    assert compute("cksum16", b"\x12") == compute("csum16", b"\x12")


def test_ipv4_header_checksum():
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert compute("csum16", hdr) == 0xB861


def test_xor16_and_identity():
    assert compute("xor16", bytes.fromhex("1234abcd")) == 0x1234 ^ 0xABCD
    assert compute("xor16", bytes.fromhex("1234ab")) == 0x1234 ^ 0xAB00
    assert compute("xor32", bytes.fromhex("0102030405")) == 0x01020304 ^ 0x05000000
    assert compute("identity", bytes.fromhex("abcd")) == 0xABCD
    # only the first eight bytes count
    assert compute("identity", bytes(range(1, 11))) == 0x0102030405060708
    assert compute("identity", b"") == 0


def test_unknown_algorithm():
    with pytest.raises(ValueError, match="Unknown hash algorithm"):
        compute("md5", b"")
    with pytest.raises(ValueError):
        HashCalc("sha1")


def test_random_uses_given_rng():
    a = compute("random", b"x", rng=random.Random(7))
    b = compute("random", b"y", rng=random.Random(7))
    assert a == b and 0 <= a < 2**64
    hashes.seed_random(3)
    first = compute("random", b"")
    hashes.seed_random(3)
    assert compute("random", b"") == first


# --- properties against independent implementations ---------------------------------------


@given(st.binary(max_size=200))
def test_crc16_matches_bitwise(data):
    assert compute("crc16", data) == _bitwise_crc(data, 16, DEFAULT_CRC_PARAMS[16])


@given(st.binary(max_size=200))
def test_crc32_matches_bitwise(data):
    assert compute("crc32", data) == _bitwise_crc(data, 32, DEFAULT_CRC_PARAMS[32])


@given(
    st.sampled_from([8, 16, 32, 64]),
    st.integers(min_value=0, max_value=2**64 - 1),
    st.integers(min_value=0, max_value=2**64 - 1),
    st.integers(min_value=0, max_value=2**64 - 1),
    st.booleans(),
    st.booleans(),
    st.binary(max_size=64),
)
def test_custom_crc_matches_bitwise(width, poly, init, xor_out, rin, rout, data):
    mask = (1 << width) - 1
    params = CrcParams(poly & mask, init & mask, xor_out & mask, rin, rout)
    algo = f"crc{width}_custom"
    assert compute(algo, data, params=params) == _bitwise_crc(data, width, params)


@given(st.binary(max_size=300))
def test_csum16_matches_scapy_and_naive(data):
    expected = checksum(data)
    assert compute("csum16", data) == expected
    assert _naive_csum(data) == expected


@given(st.binary(max_size=100))
def test_xor_matches_naive(data):
    assert compute("xor16", data) == _naive_xor(data, 2)
    assert compute("xor32", data) == _naive_xor(data, 4)


@given(st.binary(max_size=40))
def test_identity_is_prefix(data):
    assert compute("identity", data) == int.from_bytes(data[:8], "big")


# --- field packing --------------------------------------------------------------------------


def test_pack_fields_byte_aligned():
    assert pack_fields([(0x0A000001, 32), (0x0A000002, 32), (6, 8)]) == bytes.fromhex(
        "0a0000010a00000206"
    )


def test_pack_fields_padding_at_end():
    assert pack_fields([(0x1, 4)]) == b"\x10"
    assert pack_fields([(0x1FF, 9)]) == b"\xff\x80"
    assert pack_fields([(1, 1), (0, 2), (0x3, 2)]) == bytes([0b10011000])
    assert pack_fields([(0xF, 4), (0xABC, 12), (0x1, 3)]) == bytes([0xFA, 0xBC, 0x20])
    assert pack_fields([]) == b""
    assert pack_fields([(5, 0), (0xAB, 8)]) == b"\xab"


def test_pack_fields_masks_values():
    assert pack_fields([(-1, 8)]) == b"\xff"
    assert pack_fields([(0x1FF, 8)]) == b"\xff"
    with pytest.raises(ValueError):
        pack_fields([(1, -1)])


@given(st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=70))))
def test_pack_fields_bit_string(fields):
    bits = "".join(format(v & ((1 << w) - 1), f"0{w}b") if w else "" for v, w in fields)
    bits += "0" * (-len(bits) % 8)
    expected = bytes(int(bits[i : i + 8], 2) for i in range(0, len(bits), 8))
    assert pack_fields(fields) == expected


# --- the hash extern ------------------------------------------------------------------------


def test_hash_extern_rule():
    fields = [(0x0A000001, 32), (0x0A000002, 32), (6, 8), (1234, 16), (80, 16)]
    raw = compute("crc16", pack_fields(fields))
    assert hash_extern("crc16", fields, 0, 1024, 16) == raw % 1024
    assert hash_extern("crc16", fields, 100, 1024, 16) == 100 + raw % 1024
    # max 0 is treated as 1: result is base
    assert hash_extern("crc16", fields, 77, 0, 16) == 77
    # the destination keeps the low bits of base + h % max
    assert (
        hash_extern("crc32", fields, 0xFFFF, 2**32, 16)
        == (0xFFFF + compute("crc32", pack_fields(fields))) & 0xFFFF
    )


def test_hash_extern_raw_hash_not_truncated():
    # identity of a 64-bit field: the whole 64-bit value is reduced mod max, not 16 bits of it
    fields = [(0x0123456789ABCDEF, 64)]
    assert hash_extern("identity", fields, 0, 1000003, 32) == 0x0123456789ABCDEF % 1000003
    # identity keeps the first eight bytes of a longer buffer
    fields = [(0xAA, 8), (0x0123456789ABCDEF, 64)]
    assert hash_extern("identity", fields, 0, 2**64 - 1, 64) == 0xAA0123456789ABCD


def test_hash_extern_uint64_wrap():
    fields = [(0xFFFF, 16)]
    # base and max read as uint64; the sum wraps at 2**64
    assert hash_extern("identity", fields, 2**64 - 1, 2**64 - 1, 64) == 0xFFFE
    # a max of 2**64 reads as 0 in uint64, which counts as 1: the result is base
    assert hash_extern("identity", fields, 9, 2**64, 64) == 9
    assert hash_extern("identity", fields, 2**64 + 5, 0, 64) == 5


def test_hash_calc_custom_params_are_per_instance():
    a = HashCalc("crc16_custom")
    b = HashCalc("crc16_custom")
    a.set_crc_params(CrcParams(0x8005, 0xFFFF, 0, True, True))
    assert a.compute(CHECK) == 0x4B37
    assert b.compute(CHECK) == 0xBB3D
    assert a.hash_extern([(0x31, 8)], 0, 0x10000, 16) == compute(
        "crc16_custom", b"1", params=a.params
    )
    with pytest.raises(ValueError):
        HashCalc("crc16").set_crc_params(CrcParams(0x8005))


def test_v1model_names_are_known():
    for algo in hashes.V1MODEL_ALGORITHMS:
        assert algo in hashes.ALGORITHM_WIDTHS
        assert 0 <= compute(algo, CHECK) < 2 ** hashes.ALGORITHM_WIDTHS[algo]
