"""What the controller knows about the p4reduce programs: the names of their tables, actions,
registers and counters (docs/protocol.md, "Control-plane interface"), and their constants
(from p4reduce/contracts/spec.py, which p4src/include/constants.p4 is generated from). Kept in
one place so the other modules never spell a name."""

from __future__ import annotations

from .. import contracts
from .errors import ControllerError
from .p4info import Schema

# tables and actions
SWITCH_IPV4 = "SwitchIngress.local_address.switch_ipv4"
IS_SWITCH = "SwitchIngress.local_address.is_switch"
ARP_REPLIES = "SwitchIngress.arp.arp_replies"
ARP_REPLY = "SwitchIngress.arp.reply"
WORKERS = "SwitchIngress.admission.workers"
ADMIT = "SwitchIngress.admission.admit"
REPLICAS = "SwitchEgress.replica.replicas"
TO_WORKER = "SwitchEgress.replica.to_worker"
IPV4_ROUTES = "SwitchIngress.forwarding.ipv4_routes"
ROUTE = "SwitchIngress.forwarding.route"
L2_FORWARD = "SwitchIngress.forwarding.l2_forward"
TO_PORT = "SwitchIngress.forwarding.to_port"
# hierarchical aggregation, the ToR role (docs/protocol.md, "Hierarchical aggregation")
ADMIT_PARENT = "SwitchIngress.admission.admit_parent"
UPLINK = "SwitchIngress.dispatch.uplink"
TO_PARENT = "SwitchIngress.dispatch.to_parent"
MAX_RACKS = contracts.MAX_WORKERS  # the ToRs are the spine's workers: its bitmap's width

# match fields
F_IPV4_DST = "hdr.ipv4.dstAddr"
F_ARP_TPA = "hdr.arp.tpa"
F_JOB_ID = "hdr.agg.jobId"
F_IPV4_SRC = "hdr.ipv4.srcAddr"
F_UDP_SRC = "hdr.udp.srcPort"
F_JOB_INDEX = "meta.job_index"
F_RID = "sm.egress_rid"
F_ETH_DST = "hdr.ethernet.dstAddr"

# registers and counters
BITMAPS = "SwitchIngress.bitmap.bitmaps"
COUNTS = "SwitchIngress.completion.counts"
EXPONENTS = "SwitchIngress.exponent.exponents"
NEXT_MIN = "SwitchIngress.next_min.next_min"
NONFINITE = "SwitchIngress.nonfinite.nonfinite"
ACC = "SwitchIngress.accumulate.acc{}"
INGRESS_LOSS = "SwitchIngress.loss.ingress_loss"
EGRESS_LOSS = "SwitchEgress.loss.egress_loss"
JOB_COUNTERS = "SwitchIngress.stats.job_counters"
EGRESS_COUNTERS = "SwitchEgress.stats.egress_counters"

# p4reduce/contracts/spec.py (constants.p4 is generated from it)
AGG_PORT = contracts.AGG_PORT
POOL_SLOTS = contracts.POOL_SLOTS
MAX_WORKERS = contracts.MAX_WORKERS
MAX_JOB_INDEX = contracts.MAX_JOBS - 1
MAX_JOB_ID = contracts.MAX_JOB_ID
MAX_JOB_KEY = contracts.MAX_KEY
FLOOD_MGID = contracts.FLOOD_MGID
JOB_MGID_BASE = contracts.JOB_MGID_BASE
PORTS = contracts.PORTS
MAX_PORT = contracts.PORTS - 1
COUNT_MASK = contracts.COUNT_MASK
COUNT_HAS_DATA = contracts.COUNT_HAS_DATA
NEXT_END = contracts.NEXT_END
# control messages (docs/protocol.md, "Control messages")
MSG_CONTROL = contracts.MSG_CONTROL
CTL_CLEAR = contracts.CTL_CLEAR
CTL_PEEK = contracts.CTL_PEEK
CPU_PORT = contracts.CPU_PORT  # CPU_PORT_NUMBER: the switch must be started with --cpu-port 510
FLAG_RESULT = contracts.FLAG_RESULT
FLAG_NO_PAYLOAD = contracts.FLAG_NO_PAYLOAD
# the nonfinite register's bits per cell (docs/protocol.md, "Non-finite values")
NONFINITE_BITS = {
    contracts.NF_NAN: "nan",
    contracts.NF_POS_INF: "+inf",
    contracts.NF_NEG_INF: "-inf",
}


def nonfinite_names(bits: int) -> list[str]:
    """The names of a cell's non-finite bits (``nan``, ``+inf``, ``-inf``; reserved bits
    as hex), in bit order; [] for a finite cell."""
    names = [n for b, n in NONFINITE_BITS.items() if bits & b]
    rest = bits & ~sum(NONFINITE_BITS)
    return names + ([f"0x{rest:02x}"] if rest else [])


# job_counters[job_index * INGRESS_STRIDE + event]: the events the controller reports
INGRESS_EVENTS = {e.code: e.counter for e in contracts.INGRESS_EVENTS if e.counter}
INGRESS_STRIDE = contracts.INGRESS_STRIDE
# egress_counters[job_index * EGRESS_STRIDE + event]
EGRESS_EVENTS = {e.code: e.counter for e in contracts.EGRESS_EVENTS if e.counter}
EGRESS_STRIDE = contracts.EGRESS_STRIDE


def kind(schema: Schema) -> str:
    """ "sparse" when the pipeline keeps the running minimum of next, else "dense"."""
    return "sparse" if schema.has_register(NEXT_MIN) else "dense"


def lanes(schema: Schema) -> int:
    """K, the elements per packet: one accumulator register per lane."""
    k = 0
    while schema.has_register(ACC.format(k)):
        k += 1
    return k


def check(schema: Schema, source: str | None = None) -> None:
    """Refuse a pipeline that is not a p4reduce program (one line naming what is missing).

    ``source``: the P4Info file being pushed, named in the message (the fault is the file's,
    not the switch's); None for the pipeline the switch already runs."""
    for name in (WORKERS, REPLICAS, SWITCH_IPV4):
        if name not in schema.tables:
            if source is not None:
                raise ControllerError(
                    f"{source} is not a p4reduce program: no table {name} "
                    "(push build/dense or build/sparse)"
                )
            raise ControllerError(
                f"the switch runs a pipeline without table {name}: not a p4reduce program "
                "(push build/dense or build/sparse)"
            )
