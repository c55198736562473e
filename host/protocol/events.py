"""What the protocol core hands back: actions, per-call statistics and errors.

The core is a pure state machine (docs/host.md): the transport feeds it events (``start``,
``on_packet``, ``on_timer``, ``resume``) with the current time as a number, and carries out
the actions it returns, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``data`` (the UDP payload) to the switch's ``AGG_PORT``."""

    data: bytes
    slot: int
    retransmit: bool = False


@dataclass(frozen=True, slots=True)
class SetTimer:
    """Call ``on_timer`` once the clock reaches ``deadline``; replaces any earlier request.
    ``deadline`` is None when the call needs no timer any more."""

    deadline: float | None


@dataclass(frozen=True, slots=True)
class Done:
    """The call finished: ``result`` has the input's shape, float32 or int32."""

    result: np.ndarray
    stats: CallStats


@dataclass(frozen=True, slots=True)
class Failed:
    """The call stopped. ``error`` is a ``CallTimeout`` (the call can be resumed, see
    ``Call.resume``) or a ``ProtocolError`` (it cannot; the job needs a reset)."""

    error: CallError
    stats: CallStats


Action = Send | SetTimer | Done | Failed


@dataclass
class CallStats:
    """Counters of one call. Packets and bytes are UDP payloads."""

    packets_sent: int = 0  # every transmission, retransmissions included
    retransmissions: int = 0  # resends of an identical packet (timeouts and resume)
    bytes_sent: int = 0
    packets_received: int = 0  # everything handed to on_packet
    bytes_received: int = 0
    results: int = 0  # results accepted (each completes one outstanding packet)
    unicast_results: int = 0  # of those, answers to a retransmission (FLAG_RETRANSMIT)
    duplicates: int = 0  # results of this call for a use already consumed, or not outstanding
    stale: int = 0  # results of another call (packetId)
    foreign: int = 0  # results of another job, job key or message type
    malformed: int = 0  # wrong length or flags (wire.check_result)
    late: int = 0  # results of this call while it was failed or finished
    clamped_blocks: int = 0  # blocks whose agreed exponent was below their own

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True, slots=True)
class StuckSlot:
    """A slot whose packet got no result in time."""

    slot: int
    set: int
    block: int
    priming: bool  # the header-only first exchange (dense float and sparse)
    attempts: int  # transmissions of this packet
    waiting: float  # seconds since its first transmission

    def __str__(self) -> str:
        what = "priming of block" if self.priming else "block"
        return (
            f"slot {self.slot} (set {self.set}, {what} {self.block}, "
            f"{self.attempts} sends over {self.waiting:.3g} s)"
        )


class CallError(Exception):
    """A call that cannot finish as it stands."""

    def __init__(self, message: str, call_id: int) -> None:
        super().__init__(message)
        self.call_id = call_id


class CallTimeout(CallError, TimeoutError):
    """Some slots got no result within the retry policy. ``stuck`` names them (slot, set,
    block); ``in_flight`` lists every slot still waiting (stuck ones included)."""

    def __init__(
        self,
        message: str,
        call_id: int,
        stuck: tuple[StuckSlot, ...],
        in_flight: tuple[StuckSlot, ...],
    ) -> None:
        super().__init__(message, call_id)
        self.stuck = stuck
        self.in_flight = in_flight

    @property
    def stuck_slots(self) -> list[int]:
        return [s.slot for s in self.stuck]

    @property
    def stuck_blocks(self) -> list[int]:
        return [s.block for s in self.stuck]


class ProtocolError(CallError):
    """A result that passed every check yet contradicts the protocol (for instance workers
    that disagree on the tensor's size). The call is dead; the job needs a reset."""


class SessionBusy(RuntimeError):
    """A new call on a session whose previous call has not finished (or failed and was
    neither resumed to the end nor reset)."""
