"""The host's protocol core: a pure state machine, no sockets, threads or clocks.

A ``Session`` (per worker, per job) makes a call per tensor; the transport drives the
call with events and carries out the actions it returns::

    call = session.allreduce(tensor)
    actions = call.start(now)                 # Send(...) per slot, SetTimer(deadline)
    actions = call.on_packet(datagram, now)   # a result: next Send, or Done(result)
    actions = call.on_timer(now)              # resends, or Failed(CallTimeout)

Time is whatever number the transport passes in (seconds); deadlines come back in the
same unit. docs/host.md describes the design.
"""

from .call import Call
from .dense import DenseCall
from .events import (
    Action,
    CallError,
    CallStats,
    CallTimeout,
    Done,
    Failed,
    ProtocolError,
    Send,
    SessionBusy,
    SetTimer,
    StuckSlot,
)
from .retry import RetryPolicy
from .session import Session
from .sparse import SparseCall

__all__ = [
    "Action",
    "Call",
    "CallError",
    "CallStats",
    "CallTimeout",
    "DenseCall",
    "Done",
    "Failed",
    "ProtocolError",
    "RetryPolicy",
    "Send",
    "Session",
    "SessionBusy",
    "SetTimer",
    "SparseCall",
    "StuckSlot",
]
