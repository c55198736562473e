"""Hash and checksum algorithms of v1model's ``HashAlgorithm``, computed as BMv2 computes them.

Every rule here follows behavioral-model's ``src/bm_sim/calculations.cpp`` (the hash functors
and ``BufBuilder``), ``src/bm_sim/crc_tables.h`` and ``targets/simple_switch/primitives.cpp``
(``modify_field_with_hash_based_offset``, which p4c's BMv2 back end emits for v1model ``hash``).

The raw value of an algorithm (``compute``) is what BMv2's functor returns, widened to 64 bits
and never truncated to anything narrower than the functor's own return type:

- ``crc16``: CRC-16/ARC (poly 0x8005, input and output reflected, init 0, xor-out 0).
- ``crc32``: CRC-32/ISO-HDLC, as ``zlib.crc32`` (poly 0x04C11DB7 reflected, init and xor-out
  0xFFFFFFFF).
- ``crc8_custom`` / ``crc16_custom`` / ``crc32_custom`` / ``crc64_custom``: a Rocksoft-model CRC
  whose parameters the control plane may change per calculation (``CrcParams``). Defaults:
  crc8 poly 0x07 init 0 xor 0 not reflected; crc16 and crc32 the same as ``crc16``/``crc32``;
  crc64 poly 0x1B init 0 xor 0 reflected. The init value is applied to the unreflected register.
- ``csum16`` (and its alias ``cksum16``): the Internet checksum (RFC 1071), *complemented*: the
  ones'-complement sum of big-endian 16-bit words, an odd trailing byte padded with a zero byte
  after it (it is the high byte of the last word); empty input gives 0xFFFF.
- ``xor16`` / ``xor32``: XOR of the big-endian 16-/32-bit words; a short last word is padded
  with zero bytes at its end (``emitAsInteger``).
- ``identity``: the *first* ``min(8, len)`` bytes of the buffer read big-endian; bytes past the
  eighth are ignored and a shorter buffer is not shifted (2 bytes give a 16-bit value).
- ``crcCCITT``: CRC-16/CCITT-FALSE (poly 0x1021 not reflected, init 0xFFFF, xor-out 0).
- ``random``: BMv2 registers **no** hash called ``random`` (its JSON loader rejects a program
  using it with "Unknown hash algorithm: random"), so nothing is there to reproduce. Here it is a
  uniform 64-bit value drawn from the ``random.Random`` passed in, or from a module-level one
  (``seed_random`` makes it reproducible).
"""

from __future__ import annotations

import random
import zlib
from dataclasses import dataclass, field
from functools import lru_cache

_U64 = (1 << 64) - 1

# v1model's HashAlgorithm members, in enum order (p4c emits them under these names).
V1MODEL_ALGORITHMS: tuple[str, ...] = (
    "crc32",
    "crc32_custom",
    "crc16",
    "crc16_custom",
    "random",
    "identity",
    "csum16",
    "xor16",
)

# Bit width of each algorithm's raw value (the C++ return type of BMv2's functor).
ALGORITHM_WIDTHS: dict[str, int] = {
    "crc8_custom": 8,
    "crc16": 16,
    "crc16_custom": 16,
    "crcCCITT": 16,
    "crc32": 32,
    "crc32_custom": 32,
    "crc64_custom": 64,
    "csum16": 16,
    "cksum16": 16,
    "xor16": 16,
    "xor32": 32,
    "identity": 64,
    "random": 64,
}

_CUSTOM_WIDTHS = {"crc8_custom": 8, "crc16_custom": 16, "crc32_custom": 32, "crc64_custom": 64}


@dataclass(frozen=True)
class CrcParams:
    """Parameters of a custom CRC, in BMv2's ``crc_config_t`` order (Rocksoft model).

    ``init`` is loaded into the unreflected register; ``xor_out`` is applied after the optional
    output reflection. Values wider than the CRC are truncated to it, as BMv2 stores them in the
    CRC's own integer type.
    """

    poly: int
    init: int = 0
    xor_out: int = 0
    reflect_in: bool = False
    reflect_out: bool = False


# calculations.cpp: crc_custom_init<T>::config, the parameters before any control-plane update.
DEFAULT_CRC_PARAMS: dict[int, CrcParams] = {
    8: CrcParams(0x07, 0x00, 0x00, False, False),
    16: CrcParams(0x8005, 0x0000, 0x0000, True, True),
    32: CrcParams(0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True),
    64: CrcParams(0x1B, 0x0, 0x0, True, True),
}

_RNG = random.Random()


def seed_random(seed: int | None) -> None:
    """Seed the module-level generator behind the ``random`` algorithm."""
    _RNG.seed(seed)


def _reflect(value: int, nbits: int) -> int:
    return int(format(value, f"0{nbits}b")[::-1], 2) if nbits else 0


@lru_cache(maxsize=64)
def _crc_table(width: int, poly: int, reflected: bool) -> tuple[int, ...]:
    """256-entry table: MSB-first for ``poly``, or LSB-first for the reflected register."""
    mask = (1 << width) - 1
    table = []
    if reflected:
        rpoly = _reflect(poly & mask, width)
        for byte in range(256):
            reg = byte
            for _ in range(8):
                reg = (reg >> 1) ^ rpoly if reg & 1 else reg >> 1
            table.append(reg)
    else:
        top = 1 << (width - 1)
        for byte in range(256):
            reg = byte << (width - 8)
            for _ in range(8):
                reg = ((reg << 1) ^ poly) & mask if reg & top else (reg << 1) & mask
            table.append(reg)
    return tuple(table)


def crc(data: bytes, width: int, params: CrcParams) -> int:
    """A CRC of ``width`` bits (8, 16, 32 or 64) with BMv2's ``crc_custom`` semantics.

    BMv2 reflects each input byte into an MSB-first register; running the equivalent LSB-first
    register (holding the reflection of BMv2's) over the raw bytes gives the same remainder.
    """
    mask = (1 << width) - 1
    poly, init, xor_out = params.poly & mask, params.init & mask, params.xor_out & mask
    if params.reflect_in:
        table = _crc_table(width, poly, True)
        reg = _reflect(init, width)
        for b in data:
            reg = table[(reg ^ b) & 0xFF] ^ (reg >> 8)
        # reg is the reflected remainder: it is already the reflected output.
        out = reg if params.reflect_out else _reflect(reg, width)
    else:
        table = _crc_table(width, poly, False)
        shift = width - 8
        reg = init
        for b in data:
            reg = table[((reg >> shift) ^ b) & 0xFF] ^ ((reg << 8) & mask)
        out = _reflect(reg, width) if params.reflect_out else reg
    return out ^ xor_out


_CRC16_TABLE = _crc_table(16, 0x8005, True)


def crc16(data: bytes) -> int:
    """CRC-16/ARC, BMv2's ``crc16`` (check value 0xBB3D)."""
    reg = 0
    table = _CRC16_TABLE
    for b in data:
        reg = table[(reg ^ b) & 0xFF] ^ (reg >> 8)
    return reg


def crc32(data: bytes) -> int:
    """CRC-32/ISO-HDLC, BMv2's ``crc32`` (check value 0xCBF43926)."""
    return zlib.crc32(data)


def csum16(data: bytes) -> int:
    """BMv2's ``csum16``/``cksum16``: the complemented ones'-complement sum of 16-bit words.

    Since 2**16 = 1 (mod 0xFFFF), the big-endian integer of the (zero-padded) buffer is
    congruent to the sum of its words; the end-around-carry sum is 0 only for all-zero input
    and otherwise the representative in 1..0xFFFF.
    """
    if len(data) & 1:
        data += b"\x00"
    n = int.from_bytes(data, "big")
    if n == 0:
        return 0xFFFF
    return 0xFFFF - (n % 0xFFFF or 0xFFFF)


def _xor_words(data: bytes, word_bytes: int) -> int:
    rem = len(data) % word_bytes
    if rem:
        data += b"\x00" * (word_bytes - rem)
    words = len(data) // word_bytes
    x = int.from_bytes(data, "big")
    # Fold word-aligned halves onto each other: XOR is preserved word by word.
    while words > 1:
        low_words = words // 2
        low_bits = low_words * word_bytes * 8
        x = (x >> low_bits) ^ (x & ((1 << low_bits) - 1))
        words -= low_words
    return x


def xor16(data: bytes) -> int:
    """BMv2's ``xor16``: XOR of big-endian 16-bit words, the last one zero-padded at its end."""
    return _xor_words(data, 2)


def xor32(data: bytes) -> int:
    """BMv2's ``xor32``: XOR of big-endian 32-bit words, the last one zero-padded at its end."""
    return _xor_words(data, 4)


def identity(data: bytes) -> int:
    """BMv2's ``identity``: the first eight bytes (or fewer) of the buffer, big-endian."""
    return int.from_bytes(data[:8], "big")


def crc_ccitt(data: bytes) -> int:
    """BMv2's ``crcCCITT``: CRC-16/CCITT-FALSE (check value 0x29B1)."""
    return crc(data, 16, CrcParams(0x1021, 0xFFFF, 0, False, False))


def compute(
    algo: str,
    data: bytes,
    *,
    params: CrcParams | None = None,
    rng: random.Random | None = None,
) -> int:
    """BMv2's raw hash of ``data`` with ``algo`` (a name of BMv2's hash registry).

    ``params`` configures a ``*_custom`` CRC (default: BMv2's initial parameters for its
    width); ``rng`` feeds ``random`` (default: the module-level generator).
    Raises ``ValueError`` for a name BMv2 does not know (``random`` excepted, see the module).
    """
    if algo == "crc16":
        return crc16(data)
    if algo == "crc32":
        return zlib.crc32(data)
    if algo in ("csum16", "cksum16"):
        return csum16(data)
    width = _CUSTOM_WIDTHS.get(algo)
    if width is not None:
        p = params or DEFAULT_CRC_PARAMS[width]
        if p == DEFAULT_CRC_PARAMS[32] and width == 32:
            return zlib.crc32(data)
        if p == DEFAULT_CRC_PARAMS[16] and width == 16:
            return crc16(data)
        return crc(data, width, p)
    if algo == "xor16":
        return xor16(data)
    if algo == "identity":
        return identity(data)
    if algo == "random":
        return (rng or _RNG).getrandbits(64)
    if algo == "xor32":
        return xor32(data)
    if algo == "crcCCITT":
        return crc_ccitt(data)
    raise ValueError(f"Unknown hash algorithm: {algo}")


def pack_fields(fields: list[tuple[int, int]]) -> bytes:
    """Concatenate ``(value, width_bits)`` fields MSB first into BMv2's calculation buffer.

    ``BufBuilder`` (calculations.cpp) deparses each field right after the previous one's last
    bit into a zero-filled buffer of ``ceil(total_bits / 8)`` bytes, so the padding is the
    low-order bits of the *last* byte. Values are taken modulo ``2**width`` (two's complement for
    ``int<W>``); zero-width fields add nothing. Fields of invalid headers are skipped by BMv2,
    so the caller leaves them out.
    """
    acc = 0
    nbits = 0
    for value, width in fields:
        if width < 0:
            raise ValueError(f"negative field width {width}")
        acc = (acc << width) | (value & ((1 << width) - 1))
        nbits += width
    nbytes = (nbits + 7) // 8
    return (acc << (nbytes * 8 - nbits)).to_bytes(nbytes, "big")


def hash_extern(
    algo: str,
    fields: list[tuple[int, int]],
    base: int,
    max_: int,
    out_width: int,
    *,
    params: CrcParams | None = None,
    rng: random.Random | None = None,
) -> int:
    """v1model ``hash(result, algo, base, data, max)`` as simple_switch computes it.

    ``modify_field_with_hash_based_offset`` (targets/simple_switch/primitives.cpp): base and max
    are read as uint64, a max of 0 is treated as 1 (so the result is ``base``), and
    ``v = (h % max) + base`` in uint64 arithmetic (wrapping at 2**64), where ``h`` is the raw
    hash, not truncated to any narrower width. The destination then keeps the low ``out_width``
    bits of ``v``.
    """
    h = compute(algo, pack_fields(fields), params=params, rng=rng)
    m = (max_ & _U64) or 1
    v = ((h % m) + (base & _U64)) & _U64
    return v & ((1 << out_width) - 1)


class CrcStore:
    """Where a calculation's CRC parameters go beyond the ``HashCalc``: nowhere by default
    (the interpreter computes with them there); the native engine's store pushes them into
    its copy (switch/native/mirror_externs.py)."""

    def params_changed(self, calc: HashCalc) -> None:
        """The parameters changed (or the store was just attached)."""


@dataclass
class HashCalc:
    """One BMv2 calculation (a ``hash`` call site or selector) with its own custom-CRC state.

    BMv2 copies the registered functor per calculation, so a control-plane update of custom CRC
    parameters (``set_crc16_parameters <calc> ...``) affects only that calculation.
    """

    algo: str
    params: CrcParams | None = None
    rng: random.Random | None = None
    store: CrcStore = field(default_factory=CrcStore, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.algo not in ALGORITHM_WIDTHS:
            raise ValueError(f"Unknown hash algorithm: {self.algo}")

    def use_store(self, store: CrcStore) -> None:
        """Mirror the parameters into ``store`` from now on (it gets the present ones)."""
        self.store = store
        store.params_changed(self)

    def set_crc_params(self, params: CrcParams) -> None:
        """Reconfigure a ``*_custom`` CRC (BMv2's ``CustomCrcMgr::update_config``)."""
        if self.algo not in _CUSTOM_WIDTHS:
            raise ValueError(f"{self.algo} is not a custom CRC")
        self.params = params
        self.store.params_changed(self)

    def compute(self, data: bytes) -> int:
        return compute(self.algo, data, params=self.params, rng=self.rng)

    def hash_extern(
        self, fields: list[tuple[int, int]], base: int, max_: int, out_width: int
    ) -> int:
        return hash_extern(
            self.algo, fields, base, max_, out_width, params=self.params, rng=self.rng
        )
