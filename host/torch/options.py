"""``P4ReduceOptions``: how a p4reduce process group (or DDP hook state) reaches the switch.

    dist.init_process_group("p4reduce", pg_options=P4ReduceOptions(url="http://10.0.0.254:9560"))

Without ``url`` the group's rank 0 starts a loopback stack (embedded switch and registration
service) for the group on this machine. docs/torch.md lists every field.
"""

from __future__ import annotations

import dataclasses
import zlib
from dataclasses import dataclass

from ... import contracts
from ..protocol import RetryPolicy

MODES = ("dense", "sparse", "auto")
PROGRAMS = ("dense", "sparse")
MAX_JOB_ID = 0xFFFF  # the aggregation header's job id field is 16 bits


@dataclass(frozen=True)
class P4ReduceOptions:
    """Options of a p4reduce group, passed as ``pg_options`` (or to ``HookState.create``).

    Every rank passes its own object: ``udp_port``, ``switch_port`` and ``mac`` describe
    this process, the other fields must agree across the group's ranks.
    """

    url: str | None = None
    """The registration service (``p4reduce-ctl serve``). None: rank 0 of the group starts
    an embedded switch and a service on 127.0.0.1 for the group, stopped with it."""
    job_id: int | None = None
    """The job id at the switch. None: 1. A group created by ``new_group`` adds its index
    (the default group is 0), a ``HookState`` the number of states made before it."""
    bind_ip: str = "127.0.0.1"
    """The address of this rank's UDP socket, registered with the service."""
    udp_port: int = 0
    """This rank's UDP port; 0 picks a free one. Fix it when the switch was started with
    ``-i N@udp:HOST:PORT`` peers."""
    switch_port: int | None = None
    """The switch port this rank's traffic arrives on; None: group rank + 1 (the numbering
    of ``p4reduce-switch -i N@udp:...``). Ignored for the loopback stack."""
    mac: str | None = None
    """This rank's MAC, for a switch on a real network; None: one made from the address."""
    mode: str = "dense"
    """``AllreduceSession.allreduce`` mode: "dense", "sparse" or "auto"."""
    slots: int | None = None
    """Slots of the job (packets in flight per worker); None: the service's default."""
    retry: RetryPolicy | None = None
    """Retransmission policy; None: the service's. Its ``give_up_after`` bounds how long a
    collective waits for a dead switch or a missing rank."""
    timeout: float = 120.0
    """Bound of each wait while a group starts (address exchange, stack start, join) and
    of the loopback teardown's wait for the other ranks."""
    chunk_elements: int = 1 << 20
    """A tensor larger than this is reduced as several calls of at most this many elements
    (bounded temporaries; the calls still run back to back)."""
    program: str | None = None
    """The loopback stack's P4 program; None: "dense" for ``mode="dense"``, else "sparse"."""
    k: int = 64
    """Elements per packet of the loopback stack's program (64, 256 or 1024; K = 1024 sends
    4,162-byte frames, fine on loopback, a jumbo MTU elsewhere)."""
    engine: str = "native"
    """The protocol core of this rank's session: "native" (C, the default) or "python"."""
    threads: int = 1
    """The native driver's threads per collective, each over its own share of the job's
    slots (docs/host.md, "Several driver threads"); 1, the default, runs one."""
    nonfinite: str = "propagate"
    """NaN/±Inf in a floating tensor: "propagate" (the default, as gloo: every rank gets each
    block of K elements that held one back as NaN or the infinity, so an AMP grad scaler
    skips the step everywhere) or "raise" (``NonFiniteError`` on that rank before anything
    is sent; the other ranks then time out)."""
    switch_float64: bool = False
    """Reduce float64 tensors through the switch too (as float32, with float32-level
    precision); by default they go over gloo. float16 and bfloat16 always go through the
    switch."""
    secret: str | None = dataclasses.field(default=None, repr=False)
    """The job's secret at the registration service (docs/controller.md, "Credentials").
    None: ``$P4REDUCE_JOB_SECRET``, else rank 0 draws one; rank 0 hands it to the others
    through the group's store."""
    tls_ca: str | None = None
    """For an ``https://`` url: the CA file the service's certificate is checked against."""
    tls_cert: str | None = None
    tls_key: str | None = None
    """For an ``https://`` url: this rank's client certificate and key (PEM), when the
    service asks for one."""

    @property
    def tls(self) -> dict[str, str] | None:
        """The TLS files as ``RegistrationClient`` takes them (None: none given)."""
        d = {"ca": self.tls_ca, "cert": self.tls_cert, "key": self.tls_key}
        given = {k: v for k, v in d.items() if v is not None}
        return given or None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"P4ReduceOptions.mode {self.mode!r}: one of {', '.join(MODES)}")
        if self.program is not None and self.program not in PROGRAMS:
            raise ValueError(
                f"P4ReduceOptions.program {self.program!r}: one of {', '.join(PROGRAMS)}"
            )
        if self.mode == "sparse" and self.program == "dense":
            raise ValueError("P4ReduceOptions: mode 'sparse' needs the sparse program")
        if self.job_id is not None and not 1 <= self.job_id <= MAX_JOB_ID:
            raise ValueError(f"P4ReduceOptions.job_id {self.job_id}: 1 .. {MAX_JOB_ID}")
        if not 0 <= self.udp_port <= 0xFFFF:
            raise ValueError(f"P4ReduceOptions.udp_port {self.udp_port}: 0 .. 65535")
        if self.switch_port is not None and not 0 <= self.switch_port <= contracts.CPU_PORT:
            raise ValueError(
                f"P4ReduceOptions.switch_port {self.switch_port}: 0 .. {contracts.CPU_PORT}"
            )
        if self.slots is not None and self.slots < 1:
            raise ValueError(f"P4ReduceOptions.slots {self.slots}: at least 1")
        if not self.timeout > 0:
            raise ValueError(f"P4ReduceOptions.timeout {self.timeout}: positive")
        if self.chunk_elements < 1:
            raise ValueError(f"P4ReduceOptions.chunk_elements {self.chunk_elements}: at least 1")
        if self.engine not in ("native", "python"):
            raise ValueError(f"P4ReduceOptions.engine {self.engine!r}: 'native' or 'python'")
        if not isinstance(self.threads, int) or not 1 <= self.threads <= 64:
            raise ValueError(f"P4ReduceOptions.threads {self.threads!r}: 1 .. 64")
        if self.nonfinite not in ("propagate", "raise"):
            raise ValueError(
                f"P4ReduceOptions.nonfinite {self.nonfinite!r}: 'propagate' or 'raise'"
            )
        if self.k not in contracts.K_CHOICES:
            raise ValueError(f"P4ReduceOptions.k {self.k}: 64, 256 or 1024")

    @property
    def loopback_program(self) -> str:
        if self.program is not None:
            return self.program
        return "dense" if self.mode == "dense" else "sparse"

    def job_id_for(self, offset: int) -> int:
        """The job id of the group (or hook state) ``offset`` places after the first."""
        job = (self.job_id or 1) + offset
        if not 1 <= job <= MAX_JOB_ID:
            raise ValueError(
                f"job id {self.job_id or 1} + {offset} is beyond {MAX_JOB_ID}: pass "
                f"P4ReduceOptions(job_id=...) for this group"
            )
        return job

    def for_subgroup(self) -> P4ReduceOptions:
        """The options a ``new_group`` without ``pg_options`` inherits from the default
        group: the same, except a free UDP port (the default group's is taken)."""
        return dataclasses.replace(self, udp_port=0)


def group_offset(group_name: str) -> int:
    """A group's index from its torch name: "0" for the default group, "1", "2", … for
    ``new_group`` in creation order; a hashed name (``use_local_synchronization``) maps
    to a stable number above them."""
    if group_name.isdigit():
        return int(group_name)
    return 1024 + zlib.crc32(group_name.encode()) % 16384
