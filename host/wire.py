"""The aggregation packet's UDP payload: a 24-byte header and K big-endian int32 elements.

Everything here follows docs/protocol.md, "Frame layout". The numbers come from
``p4reduce/contracts/spec.py``, the one source that ``p4src/include/constants.p4`` and the
native core's ``contracts.h`` are generated from; the rest of ``p4reduce.host`` imports them
from this module.

Only the UDP payload is encoded here. Ethernet, IPv4 and UDP belong to the transports (an
ordinary UDP socket writes them itself).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import numpy as np

from .. import contracts as _c

# ------------------------------------------------ p4reduce/contracts/spec.py
MSG_DENSE = _c.MSG_DENSE
MSG_SPARSE = _c.MSG_SPARSE
MSG_TYPES = (MSG_DENSE, MSG_SPARSE)

FLAG_RESULT = _c.FLAG_RESULT  # set by the switch on every result
FLAG_NO_PAYLOAD = _c.FLAG_NO_PAYLOAD  # no element payload follows (zero block / exponent only)
FLAG_RETRANSMIT = _c.FLAG_RETRANSMIT  # a result unicast in answer to a retransmission
FLAG_END = _c.FLAG_END  # sparse: the slot's stream has ended (min next = NEXT_END)
RESULT_ONLY_FLAGS = FLAG_RESULT | FLAG_RETRANSMIT | FLAG_END  # malformed in a worker packet

NEXT_END = _c.NEXT_END  # sparse: "no further non-zero block"
# the nonfinite byte (docs/protocol.md, "Non-finite values"): the block held NaN / +Inf / -Inf
NF_NAN = _c.NF_NAN
NF_POS_INF = _c.NF_POS_INF
NF_NEG_INF = _c.NF_NEG_INF
NF_MASK = NF_NAN | NF_POS_INF | NF_NEG_INF  # bits 7..3 are reserved (sent 0, ignored)
AGG_PORT = _c.AGG_PORT  # the programs' default (-DAGG_UDP_PORT=N changes it)
HEADER_BYTES = _c.HEADER_BYTES  # AGG_HEADER_BYTES
K_DEFAULT = _c.K_DEFAULT  # elements per packet of the default build
K_CHOICES = _c.K_CHOICES  # the builds the programs allow (256, 1024: software targets)
POOL_SLOTS = _c.POOL_SLOTS  # slots in the switch's pool
MAX_WORKERS = _c.MAX_WORKERS  # bitmap width
MAX_SLOT = (1 << 15) - 1  # the slot field is 15 bits
MAX_JOB_ID = _c.MAX_JOB_ID
MAX_KEY = _c.MAX_KEY  # the job key is 32 bits (docs/protocol.md, "Job keys")

# msgType|flags, rank, jobId, set|slot, exponent, nonfinite, packetId, block, next, key
_HEADER = struct.Struct(">BBHHBBIIII")
assert _HEADER.size == HEADER_BYTES

_BE_I4 = np.dtype(">i4")


class WireError(ValueError):
    """A packet that does not follow docs/protocol.md (length, flags, field range)."""


@dataclass(frozen=True, slots=True)
class AggHeader:
    """The 24-byte aggregation header, field by field (docs/protocol.md, "Aggregation header")."""

    msg_type: int
    flags: int
    rank: int
    job_id: int
    set: int
    slot: int
    exponent: int
    packet_id: int
    block: int
    next: int = 0
    nonfinite: int = 0  # NF_* bits (results: the OR over the workers)
    key: int = 0

    @property
    def no_payload(self) -> bool:
        return bool(self.flags & FLAG_NO_PAYLOAD)

    @property
    def is_result(self) -> bool:
        return bool(self.flags & FLAG_RESULT)


@dataclass(frozen=True, slots=True)
class Packet:
    """A decoded UDP payload: the header and the K elements (native int32), or None."""

    header: AggHeader
    payload: np.ndarray | None


def payload_bytes(k: int) -> int:
    return 4 * k


def full_length(k: int) -> int:
    """UDP payload length of a packet with elements: 24 + 4K."""
    return HEADER_BYTES + 4 * k


def pack_header(h: AggHeader) -> bytes:
    """The 24 header bytes; raises WireError when a field does not fit its width."""
    if not (0 <= h.msg_type <= 0xF and 0 <= h.flags <= 0xF):
        raise WireError(f"msg_type {h.msg_type} / flags {h.flags:#x} do not fit 4 bits")
    if not 0 <= h.rank <= 0xFF:
        raise WireError(f"rank {h.rank} does not fit 8 bits")
    if not 0 <= h.job_id <= MAX_JOB_ID:
        raise WireError(f"job id {h.job_id} does not fit 16 bits")
    if h.set not in (0, 1):
        raise WireError(f"set {h.set} is not 0 or 1")
    if not 0 <= h.slot <= MAX_SLOT:
        raise WireError(f"slot {h.slot} does not fit 15 bits")
    if not (0 <= h.exponent <= 0xFF and 0 <= h.nonfinite <= 0xFF):
        raise WireError(f"exponent {h.exponent} / nonfinite {h.nonfinite} do not fit 8 bits")
    for name in ("packet_id", "block", "next", "key"):
        v = getattr(h, name)
        if not 0 <= v <= 0xFFFFFFFF:
            raise WireError(f"{name} {v} does not fit 32 bits")
    return _HEADER.pack(
        (h.msg_type << 4) | h.flags,
        h.rank,
        h.job_id,
        (h.set << 15) | h.slot,
        h.exponent,
        h.nonfinite,
        h.packet_id,
        h.block,
        h.next,
        h.key,
    )


def header_bytes(
    msg_type: int,
    flags: int,
    rank: int,
    job_id: int,
    set_: int,
    slot: int,
    exponent: int,
    packet_id: int,
    block: int,
    next_: int,
    key: int,
    nonfinite: int = 0,
) -> bytes:
    """The 24 header bytes from already range-checked fields, without building an AggHeader
    (the protocol core's per-packet path; ``pack_header`` is the checked one)."""
    return _HEADER.pack(
        (msg_type << 4) | flags,
        rank,
        job_id,
        (set_ << 15) | slot,
        exponent,
        nonfinite,
        packet_id,
        block,
        next_,
        key,
    )


def unpack_header(data: bytes | bytearray | memoryview) -> AggHeader:
    """The header of a UDP payload of at least 24 bytes (no other check)."""
    if len(data) < HEADER_BYTES:
        raise WireError(f"{len(data)} bytes: shorter than the {HEADER_BYTES}-byte header")
    tf, rank, job, ss, exp, res, pid, block, nxt, key = _HEADER.unpack_from(data)
    return AggHeader(
        tf >> 4, tf & 0xF, rank, job, ss >> 15, ss & 0x7FFF, exp, pid, block, nxt, res, key
    )


def encode_payload(values: np.ndarray) -> bytes:
    """K int32 values as big-endian bytes (vectorised; values must already be int32)."""
    a = np.asarray(values)
    if a.dtype != np.int32:
        raise WireError(f"payload dtype {a.dtype}: int32 expected")
    return a.astype(_BE_I4, copy=False).tobytes()


def decode_payload(
    data: bytes | bytearray | memoryview, k: int, offset: int = HEADER_BYTES
) -> np.ndarray:
    """K big-endian int32 at ``offset`` as a native int32 array (a copy)."""
    return np.frombuffer(data, dtype=_BE_I4, count=k, offset=offset).astype(np.int32)


def encode(h: AggHeader, payload: np.ndarray | None, k: int) -> bytes:
    """Header plus payload. ``payload`` is K int32 values, or None for a header-only packet;
    ``FLAG_NO_PAYLOAD`` in ``h.flags`` must agree with it."""
    if payload is None:
        if not h.flags & FLAG_NO_PAYLOAD:
            raise WireError("header-only packet without FLAG_NO_PAYLOAD")
        return pack_header(h)
    if h.flags & FLAG_NO_PAYLOAD:
        raise WireError("FLAG_NO_PAYLOAD set on a packet with a payload")
    a = np.asarray(payload)
    if a.shape != (k,):
        raise WireError(f"payload of shape {a.shape}: ({k},) expected")
    return pack_header(h) + encode_payload(a)


def _decode(data: bytes | bytearray | memoryview, k: int) -> Packet:
    h = unpack_header(data)
    check_length(h, len(data), k)
    return Packet(h, None if h.flags & FLAG_NO_PAYLOAD else decode_payload(data, k))


def decode(data: bytes | bytearray | memoryview, k: int) -> Packet:
    """Any aggregation packet: the length must be exactly 24 (with ``FLAG_NO_PAYLOAD``) or
    24 + 4K (without)."""
    return _decode(data, k)


def decode_request(data: bytes | bytearray | memoryview, k: int) -> Packet:
    """A worker's packet, checked as the switch checks it ("Job isolation and admission",
    the ``malformed`` row, minus what lives below UDP): known type, no result-side flag,
    exact length."""
    p = _decode(data, k)
    h = p.header
    if h.msg_type not in MSG_TYPES:
        raise WireError(f"unknown msgType {h.msg_type}")
    if h.flags & RESULT_ONLY_FLAGS:
        raise WireError(f"worker packet with result-side flags {h.flags:#x}")
    return p


def check_length(h: AggHeader, length: int, k: int) -> None:
    """The UDP payload length must be exactly 24 with ``FLAG_NO_PAYLOAD``, 24 + 4K without."""
    if h.flags & FLAG_NO_PAYLOAD:
        if length != HEADER_BYTES:
            raise WireError(f"{length} bytes with FLAG_NO_PAYLOAD: {HEADER_BYTES} expected")
    elif length != full_length(k):
        raise WireError(
            f"{length} bytes without FLAG_NO_PAYLOAD: {full_length(k)} expected (K = {k})"
        )


def check_result(h: AggHeader, length: int, k: int) -> None:
    """Strict checks of a switch result (see ``decode_result``); raises WireError."""
    check_length(h, length, k)
    if not h.flags & FLAG_RESULT:
        raise WireError("not a result: FLAG_RESULT is clear")
    if h.msg_type not in MSG_TYPES:
        raise WireError(f"unknown msgType {h.msg_type}")
    end = bool(h.flags & FLAG_END)
    if h.msg_type == MSG_SPARSE:
        if end != (h.next == NEXT_END):
            raise WireError(
                f"sparse result with next {h.next:#x} and FLAG_END {'set' if end else 'clear'}"
            )
    elif end:
        raise WireError("dense result with FLAG_END")


def decode_result(data: bytes | bytearray | memoryview, k: int) -> Packet:
    """A switch result, strictly: ``FLAG_RESULT`` set, a known type, exact length, and for
    sparse results ``FLAG_END`` exactly when ``next`` is ``NEXT_END`` (dense results never
    carry ``FLAG_END``). Raises WireError otherwise."""
    h = unpack_header(data)
    check_result(h, len(data), k)
    return Packet(h, None if h.flags & FLAG_NO_PAYLOAD else decode_payload(data, k))
