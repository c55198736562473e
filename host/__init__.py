"""The host agent: quantization, the streaming protocol, the UDP transport and the numpy API.

    from p4reduce.host import AllreduceSession

    with AllreduceSession.join("http://127.0.0.1:9560", job_id=7, rank=0, n=4,
                               secret=job_secret) as s:
        y = s.allreduce(x)

docs/host.md describes every part: ``wire`` (the packet codec), ``quantize`` (block floating
point), ``protocol`` (the sans-I/O core), ``transport`` (UDP), ``runner`` (the event loop
around one call) and ``api`` (``AllreduceSession``).

The names below are imported on first use, so importing the pure parts
(``p4reduce.host.wire``, ``.quantize``, ``.protocol``) loads no socket, thread or HTTP code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "AllreduceSession": "api",
    "AllreduceStats": "api",
    "AllreduceTimeout": "api",
    "SessionFailed": "api",
    "decide_auto": "api",
    "retry_from_timeouts": "api",
    "CallTimeout": "protocol",
    "ProtocolError": "protocol",
    "RetryPolicy": "protocol",
    "SessionBusy": "protocol",
    "NonFiniteError": "quantize",
    "Cancelled": "runner",
    "run_call": "runner",
    "UdpTransport": "transport",
}

__all__ = [
    "AllreduceSession",
    "AllreduceStats",
    "AllreduceTimeout",
    "CallTimeout",
    "Cancelled",
    "NonFiniteError",
    "ProtocolError",
    "RetryPolicy",
    "SessionBusy",
    "SessionFailed",
    "UdpTransport",
    "decide_auto",
    "retry_from_timeouts",
    "run_call",
]

if TYPE_CHECKING:
    from .api import (
        AllreduceSession,
        AllreduceStats,
        AllreduceTimeout,
        SessionFailed,
        decide_auto,
        retry_from_timeouts,
    )
    from .protocol import CallTimeout, ProtocolError, RetryPolicy, SessionBusy
    from .quantize import NonFiniteError
    from .runner import Cancelled, run_call
    from .transport import UdpTransport


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
