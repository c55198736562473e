"""Every number, code, field order and state that P4, Python and C share: the one source.

``python -m p4reduce.contracts`` generates ``p4src/include/constants.p4`` and
``host/_engine/contracts.h`` from this file (setup.py does it at build time too); the Python
modules import the values from here (``host/wire.py``, ``controller/program.py``,
``host/protocol/native.py``). ``tests/base/test_contracts.py`` fails when a generated file is
stale. docs/protocol.md is the specification these values follow: change a value here and
there together, then regenerate.

Only plain values live here (ints, tuples of names, event records): no imports beyond the
standard library, so setup.py can load this file before anything is built.
"""

from __future__ import annotations

from dataclasses import dataclass

# ------------------------------------------------------------ the aggregation packet
K_DEFAULT = 64  # elements per packet of the default build (-DK=N picks another)
K_CHOICES = (64, 256, 1024)  # the builds the programs allow (256, 1024: software targets)
AGG_PORT = 48864  # the UDP port the switch aggregates on (SwitchML's 0xBEE0)
HEADER_BYTES = 24  # the aggregation header (docs/protocol.md, "Aggregation header")
MAX_JOB_ID = 0xFFFF  # the jobId field is 16 bits
MAX_KEY = 0xFFFFFFFF  # the job key is 32 bits (docs/protocol.md, "Job keys")

MSG_DENSE = 1
MSG_SPARSE = 2
MSG_CONTROL = 3  # the controller's CLEAR / PEEK of one cell: CPU port only
FLAG_RESULT = 0x1  # set by the switch on every result
FLAG_NO_PAYLOAD = 0x2  # no element payload follows (zero block / exponent only)
FLAG_RETRANSMIT = 0x4  # a result unicast in answer to a retransmission
FLAG_END = 0x8  # sparse: the slot's stream has ended (min next = NEXT_END)
NEXT_END = 0xFFFFFFFF  # sparse: "no further non-zero block"
# the nonfinite byte (docs/protocol.md, "Non-finite values"): the block held NaN / +Inf / -Inf
NF_NAN = 0x1
NF_POS_INF = 0x2
NF_NEG_INF = 0x4

# ------------------------------------------------------------ control messages
CPU_PORT = 510  # CPU_PORT_NUMBER: simple_switch_grpc --cpu-port must name it
OP_NONE = 0  # an aggregation packet
OP_CLEAR = 1  # zero the cell: its bitmap word, count, exponent, ..., lanes
OP_PEEK = 2  # read the cell, change nothing
OP_DOWN = 3  # a result from the job's parent switch (ToR role): store it
CTL_CLEAR = 1  # the rank field's values
CTL_PEEK = 2

# ------------------------------------------------------------ Ethernet / IPv4 (P4 only)
ETHERTYPE_IPV4 = 0x0800
ETHERTYPE_ARP = 0x0806
IP_PROTO_UDP = 17
ARP_HTYPE_ETHERNET = 1
ARP_OPER_REQUEST = 1
ARP_OPER_REPLY = 2
RESULT_TTL = 64

# ------------------------------------------------------------ the switch's state
POOL_SLOTS = 8192  # slots in the pool, each with two sets: cell = slot * 2 + set
MAX_WORKERS = 32  # bitmap width
MAX_JOBS = 256  # job index 0 is "no job": unknown job or sender
WORKER_TABLE_SIZE = 8192
REPLICA_TABLE_SIZE = 8192
PORTS = 512
COUNT_MASK = 0x3F  # completion register: bits 5..0 count contributions
COUNT_HAS_DATA = 0x80  # bit 7: one of them had a payload
# bit 6, ToR role only: the parent's (global) result is stored in the cell, replacing the partial
# sum (docs/protocol.md, "Hierarchical aggregation")
COUNT_GLOBAL = 0x40
FLOOD_MGID = 1  # floods ordinary L2 traffic
JOB_MGID_BASE = 256  # a job's group: JOB_MGID_BASE + job index, by the controller's convention


@dataclass(frozen=True)
class Event:
    """One counter event of the programs: ``EV_<name>`` / ``EG_<name>`` in P4, ``counter``
    the controller's name for it ("" for none), ``doc`` the P4 comment, ``keeps``: the packet
    (a result or a partial sum) leaves the switch."""

    name: str
    code: int
    counter: str
    doc: str
    keeps: bool = False


# Ingress events, one per aggregation packet: job_counters[job index * 16 + event]. Those that
# keep the packet (a result or a partial sum leaves) say so; all others drop it.
INGRESS_STRIDE = 16
INGRESS_EVENTS = (
    Event("NONE", 0, "", ""),
    Event("COMPLETION", 1, "completion", "contribution that completed the slot: multicast", True),
    Event(
        "RETRANSMIT_ANSWERED",
        2,
        "retransmit_answered",
        "retransmission into a complete slot: unicast",
        True,
    ),
    Event("CONTRIBUTION", 3, "contribution", "contribution absorbed into an open slot"),
    Event("DUPLICATE", 4, "duplicate", "retransmission into an open slot: not added"),
    # the ToR role (docs/protocol.md, "Hierarchical aggregation")
    Event("UP", 5, "up", "ToR: local count complete, partial sum sent up", True),
    Event(
        "UP_RETRANSMIT", 6, "up_retransmit", "ToR: retransmission, partial sum sent up again", True
    ),
    Event("DOWN", 7, "down", "ToR: the parent's result stored and multicast", True),
    Event("UNKNOWN_SENDER", 8, "unknown_sender", "(job id, source IP, source port) not registered"),
    Event("WRONG_RANK", 9, "wrong_rank", "rank field differs from the registered rank"),
    Event("SLOT_RANGE", 10, "slot_range", "slot index outside the job's slot range"),
    Event("MALFORMED", 11, "malformed", "wrong type, flags, length, or IPv4 checksum"),
    Event("LOSS", 12, "loss_in", "dropped by the loss simulator on arrival"),
    Event("BAD_KEY", 13, "bad_key", "registered sender, but not its job's key"),
)
# Egress events for results: egress_counters[job index * 4 + event].
EGRESS_STRIDE = 4
EGRESS_EVENTS = (
    Event("RESULT_SENT", 0, "result_sent", "a result (multicast replica or unicast) left"),
    Event("LOSS", 1, "loss_out", "dropped by the loss simulator on departure"),
    Event("NO_REPLICA", 2, "no_replica", "a replica whose rank has no address entry"),
)

# ------------------------------------------------------------ the host's native core (C)
# A call's states: host.protocol's strings, the C core's ST_* enum in this order.
CALL_STATES = ("new", "running", "done", "failed", "broken")
# CallStats' counters: the C core's S_* enum and Core.stats() in this order.
CALL_STAT_FIELDS = (
    "packets_sent",
    "retransmissions",
    "bytes_sent",
    "packets_received",
    "bytes_received",
    "results",
    "unicast_results",
    "duplicates",
    "stale",
    "foreign",
    "malformed",
    "late",
    "clamped_blocks",
)
# quantize._Tables.q_mode: how the kernels scale a float (the C Q_* enum in this order)
QUANTIZE_MODES = ("f32_mul", "f64_mul", "f64_div")
# the dequantize kernel's modes (host/_quantize_c.c's D_* enum in this order)
DEQUANTIZE_MODES = ("f32", "f64_to_f32", "f64")
# what the quantize kernel returns (host/_quantize_c.c's enum in this order, no prefix)
KERNEL_STATUSES = ("ok", "nonfinite", "redo")
