"""The numpy API: ``AllreduceSession`` sums arrays over a job's workers through the switch.

    from p4reduce.host import AllreduceSession

    with AllreduceSession.join("http://127.0.0.1:9560", job_id=7, rank=r, n=4,
                               secret=job_secret) as s:   # the same secret on every rank
        y = s.allreduce(x)                       # float32 or int32, any shape
        s.allreduce(g, op="avg", out=g)          # in place
        f = s.allreduce_async(h, mode="auto")    # a Future; calls run in submission order
        s.barrier()
        f.result()

After a call fails (``AllreduceTimeout``: a worker or the switch was gone), the next call
first runs the recovery round with every other worker (``recover``), so the session stays
usable; ``resume`` instead finishes the failed call once everyone is back.

A session owns one UDP socket (``transport.UdpTransport``), one protocol core
(``protocol.Session``) and, once ``allreduce_async`` is used, one background thread.
docs/host.md ("The numpy API") describes errors, recovery, ``mode="auto"`` and statistics.
"""

from __future__ import annotations

import concurrent.futures
import logging
import math
import os
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..controller.client import Assignment, RegistrationClient, RegistrationError, Timeouts
from ..controller.credentials import JOB_SECRET_ENV
from . import replay, wire
from .auto import (  # noqa: F401 - AUTO_FLOAT_SAVING is re-exported (tests, docs)
    AUTO_FLOAT_SAVING,
    AUTO_MIN_ROUNDS,
    AUTO_RECHECK,
    AutoCache,
    census_union,
    census_vector,
    decide_auto,
    result_union,
)
from .protocol import CallStats, CallTimeout, Done, RetryPolicy, Session, SessionBusy
from .protocol.call import Call
from .protocol.events import StuckSlot
from .quantize import block_count, block_exponents, to_blocks
from .replay import ReplayLog
from .runner import Cancelled, run_call
from .transport import UdpTransport

log = logging.getLogger("p4reduce.host")

OPS = ("sum", "avg")
# float16 travels as float32 (every float16 is a float32: the block exponents and the
# quantization are those of its own values) and the result is rounded back to float16.
DTYPES = (np.dtype(np.float32), np.dtype(np.float16), np.dtype(np.int32))
MODES = ("dense", "sparse", "auto")


# how long a transparent retry waits for a lost switch when give_up_after is infinite
MAX_SWITCH_WAIT = 600.0

# stuck slots whose switch state a timeout error reports (one HTTP request each)
_DIAGNOSED_SLOTS = 4


@dataclass
class AllreduceStats:
    """Traffic and time of allreduce calls. Packets and bytes are UDP payloads (the
    aggregation header and elements), both directions, retransmissions included;
    ``seconds`` is the wall time inside the calls; ``elements`` the tensor elements
    reduced (the agreement round of ``mode="auto"`` adds traffic and time, not elements)."""

    calls: int = 0
    packets_sent: int = 0
    packets_received: int = 0
    retransmissions: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    seconds: float = 0.0
    elements: int = 0

    def goodput_gbps(self) -> float:
        """Tensor bytes reduced per second, in Gbit/s: elements × 4 × 8 / seconds / 1e9."""
        return self.elements * 32 / self.seconds / 1e9 if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        d["goodput_gbps"] = self.goodput_gbps()
        return d

    def _add(self, other: AllreduceStats) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))

    def _add_call(self, now: CallStats, before: dict[str, int] | None) -> None:
        """Add a core call's counters (minus what was already added from it)."""
        b = before or {}
        self.packets_sent += now.packets_sent - b.get("packets_sent", 0)
        self.packets_received += now.packets_received - b.get("packets_received", 0)
        self.retransmissions += now.retransmissions - b.get("retransmissions", 0)
        self.bytes_sent += now.bytes_sent - b.get("bytes_sent", 0)
        self.bytes_received += now.bytes_received - b.get("bytes_received", 0)


class AllreduceTimeout(CallTimeout):
    """A call got no result for some slots within the retry policy (``TimeoutError``).
    ``stuck`` / ``stuck_slots`` / ``stuck_blocks`` name them; ``missing_ranks`` the ranks
    the switch's bitmaps show have not contributed to them (None when that could not be
    read). The session keeps the call: the next call recovers first (``recover``), or
    ``resume()`` finishes it once every worker is back (docs/host.md, "After a failed call")."""

    missing_ranks: list[int] | None = None


class SessionFailed(SessionBusy):
    """A new call on a session whose previous call failed and that could not recover
    (no registration service, ``auto_recover=False``, or the recovery round failed);
    names that call and its error."""


@dataclass
class _Pending:
    """A failed core call and what the user's call still has to do once it completes."""

    call: Call
    then: Callable[[np.ndarray], np.ndarray]
    user: _UserCall
    accounted: dict[str, int]


@dataclass
class _UserCall:
    """One allreduce as the user asked it, with the statistics it has gathered so far."""

    array: np.ndarray  # what travels: float32 or int32
    op: str
    out: np.ndarray | None
    stats: AllreduceStats
    t0: float
    dtype: np.dtype = np.dtype(np.float32)  # the caller's (float16 is rounded back to it)
    landed: bool = False  # the call's result rows are ``out`` itself: nothing to copy
    exponents: np.ndarray | None = None  # filled with the call's agreed block exponents


def retry_from_timeouts(t: Timeouts) -> RetryPolicy:
    """The registration service's worker timeouts as a ``RetryPolicy``: the first wait is
    ``initial_ms``, doubling up to ``max_ms``; after ``retries`` resends of one packet the
    last wait ends and the call fails (``give_up_after`` = the sum of those waits)."""
    first = max(t.initial_ms, 1) / 1000.0
    cap = max(t.max_ms / 1000.0, first)
    retries = max(int(t.retries), 0)
    waits, w = [], first
    for _ in range(retries + 1):
        waits.append(w)
        w = min(w * 2.0, cap)
    return RetryPolicy(
        initial_timeout=first,
        multiplier=2.0,
        max_timeout=cap,
        give_up_after=sum(waits),
        max_attempts=retries + 1,
    )


def _default_mac(ip: str, port: int) -> str:
    """A locally administered unicast MAC made from the socket's address. On loopback the
    adapter ignores MACs; on a real network pass the interface's MAC."""
    a, b, c, d = (int(x) for x in ip.split("."))
    return f"02:{c:02x}:{d:02x}:{a ^ b:02x}:{port >> 8:02x}:{port & 0xFF:02x}"


class AllreduceSession:
    """A worker's side of one job: allreduce numpy arrays through the switch.

    ``assignment``: the registration service's answer for this worker. ``sock``: the UDP
    socket registered for it (bound; the session owns it from now on), or None to bind
    ``(bind_ip, the registered port)``. ``retry``: the retransmission policy (by default
    from ``assignment.timeouts``). ``registration``: the client used for ``barrier`` and
    for leaving the job on ``close``; without one, ``barrier`` and ``recover`` are
    unavailable and ``close`` does not leave. ``auto_recover``: a call after a failed one
    first runs ``recover`` (the default); False makes it raise ``SessionFailed`` instead.
    ``engine``: the protocol core the calls run on, ``"native"`` (the C core, the default;
    the Python one with a one-line warning when it was not built) or ``"python"``.
    ``nonfinite``: what NaN/±Inf in a float array do: ``"propagate"`` (the default, like
    gloo: every worker gets each block that held one back as NaN or the infinity, within
    the call) or ``"raise"`` (``NonFiniteError`` before anything is sent).
    ``threads``: the native driver's threads per call, each over its own share of the
    job's slots (docs/host.md, "Several driver threads"); 1, the default, runs one.
    ``transparent_retry``: a call whose results stop coming because the switch lost its
    state runs again from this worker's own input once the job is back (docs/host.md,
    "Transparent retry"; needs the registration service, the same on every worker);
    False fails it with ``AllreduceTimeout`` as before.
    """

    def __init__(
        self,
        assignment: Assignment,
        sock: socket.socket | None = None,
        *,
        bind_ip: str = "127.0.0.1",
        retry: RetryPolicy | None = None,
        registration: RegistrationClient | None = None,
        auto_recover: bool = True,
        engine: str = "native",
        nonfinite: str = "propagate",
        threads: int = 1,
        transparent_retry: bool = True,
    ) -> None:
        a = assignment
        if a.program not in ("dense", "sparse"):
            raise ValueError(f"program {a.program!r}: dense or sparse expected")
        if sock is None:
            me = [m for m in a.members if m.get("rank") == a.rank]
            if not me:
                raise ValueError(f"the assignment names no member with rank {a.rank}")
            bind = (bind_ip, int(me[0]["udp_port"]))
        else:
            bind = (bind_ip, 0)
        self.assignment = a
        self.rank = a.rank
        self.n = a.n
        self.job_id = a.job_id
        self.k = a.k
        self.program = a.program
        self.retry = retry if retry is not None else retry_from_timeouts(a.timeouts)
        self.registration = registration
        # the switch's count of datagrams from unknown senders now: a timeout names a rise
        self._unknown_senders_at_join = self._unknown_senders()
        self.auto_recover = auto_recover
        self.recoveries = 0  # recovery rounds this session went through
        # a call stuck because the switch lost its state is run again once the job is back
        # (host/replay.py); False: it fails with AllreduceTimeout, as before
        self.transparent_retry = transparent_retry
        self.retried = 0  # calls run again after a lost switch
        self._replay = ReplayLog()
        self._switch_epoch = a.switch_epoch  # the service's reconciliations we know of
        self.switch = (a.switch_ip, a.agg_port)
        self.session = Session(
            rank=a.rank,
            n=a.n,
            job_id=a.job_id,
            job_key=a.job_key,
            slots=a.slot_count,
            k=a.k,
            msg_type=wire.MSG_DENSE,
            retry=self.retry,
            engine=engine,
            nonfinite=nonfinite,
            threads=threads,
        )  # checks n, rank, slots, K, nonfinite, threads before the socket is taken
        self.nonfinite = nonfinite
        self.engine = self.session.engine  # "python" when the native core is not built
        self.transport = UdpTransport(self.switch, sock=sock, bind=bind)
        self.left: dict[str, Any] | None = None  # the service's answer to the leave
        self.leave_error: RegistrationError | None = None
        self.last_mode: str | None = None  # "dense" or "sparse": what the last call used
        self._stats = AllreduceStats()
        self._last = AllreduceStats()
        self._stats_lock = threading.Lock()
        self._lock = threading.RLock()  # one call at a time on the socket and the core
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._executor_lock = threading.Lock()
        self._closing = threading.Event()
        self._closed = False
        self._pending: _Pending | None = None
        self._broken: BaseException | None = None
        # mode="auto": the decision per shape, changed only by completed calls (host/auto.py)
        self._auto_cache = AutoCache(AUTO_RECHECK)
        self.censuses = 0  # agreement rounds this session ran for mode="auto"

    # ------------------------------------------------------------ construction

    @classmethod
    def join(
        cls,
        url: str,
        job_id: int,
        rank: int,
        n: int,
        *,
        sock: socket.socket | None = None,
        bind_ip: str = "127.0.0.1",
        mac: str | None = None,
        switch_port: int | None = None,
        slots: int | None = None,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        auto_recover: bool = True,
        secret: str | None = None,
        tls: dict[str, str] | None = None,
        engine: str = "native",
        nonfinite: str = "propagate",
        threads: int = 1,
        transparent_retry: bool = True,
        rejoin: bool = False,
    ) -> AllreduceSession:
        """Join job ``job_id`` at the registration service ``url`` as ``rank`` of ``n``.

        ``secret`` is the job's secret, shared by all its ranks (default: the environment
        variable ``P4REDUCE_JOB_SECRET``); the first rank to join sets it, the service
        refuses the others without it (docs/controller.md, "Credentials"). ``tls``: the
        ``ca``/``cert``/``key`` files for an ``https://`` service.

        The socket is bound first (``sock`` as given, or a new one on ``bind_ip`` with a
        free port) and its address registered; blocks until all ``n`` ranks joined (at
        most ``timeout`` seconds). ``switch_port`` defaults to ``rank + 1`` (the switch
        port the worker's peer is on), ``mac`` to one made from the socket's address
        (ignored on loopback; pass the interface's MAC on a real network). ``rejoin``:
        every worker of the running job was restarted (torchrun --max-restarts): once all
        joined again, the job is re-formed for their new addresses (docs/failures.md). Raises
        ``RegistrationError`` when the service refuses or cannot be reached."""
        own = sock is None
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            if sock.getsockname()[1] == 0:
                sock.bind((bind_ip, 0))
            ip, port = sock.getsockname()[:2]
            if ip == "0.0.0.0":
                ip = bind_ip
            if ip == "0.0.0.0":
                raise ValueError(
                    "the socket is bound to 0.0.0.0: pass bind_ip, the address to register"
                )
            if secret is None:
                secret = os.environ.get(JOB_SECRET_ENV) or None
            if secret is None:
                raise ValueError(
                    f"job {job_id}: no job secret: pass secret= (the same on every rank) or "
                    f"set {JOB_SECRET_ENV}"
                )
            reg = RegistrationClient(url, timeout=timeout, secret=secret, **(tls or {}))
            a = reg.join(
                job_id,
                rank=rank,
                n=n,
                ip=ip,
                udp_port=port,
                mac=mac or _default_mac(ip, port),
                switch_port=rank + 1 if switch_port is None else switch_port,
                slots=slots,
                timeout=timeout,
                rejoin=rejoin,
            )
            return cls(
                a,
                sock,
                bind_ip=bind_ip,
                retry=retry,
                registration=reg,
                auto_recover=auto_recover,
                engine=engine,
                nonfinite=nonfinite,
                threads=threads,
                transparent_retry=transparent_retry,
            )
        except BaseException:
            if own:
                sock.close()
            raise

    # ------------------------------------------------------------ calls

    def allreduce(
        self,
        array: np.ndarray,
        op: str = "sum",
        mode: str = "dense",
        out: np.ndarray | None = None,
        exponents: np.ndarray | None = None,
    ) -> np.ndarray:
        """The sum (``op="sum"``) or mean (``"avg"``, float32 only) of ``array`` over the
        job's workers; float32, float16 or int32, any shape, the same size on every worker
        (float16 travels as float32 and the result is rounded back to float16 once).

        ``mode``: ``"dense"`` (every block travels), ``"sparse"`` (only blocks non-zero on
        some worker; the sparse program only), ``"auto"`` (decided identically on every
        worker, see docs/host.md). ``out``: an array of the same shape and dtype to write
        the result into (``out=array`` for in place); returns the result. Until the call
        returns, ``out`` holds nothing meaningful (a failed call may leave part of a
        result in it, never in ``array``).

        NaN/±Inf: each block (K elements) that holds one on some worker comes back as NaN,
        or as the infinity when all its non-finite inputs were that infinity, on every
        worker (the session's ``nonfinite="raise"`` refuses them instead).

        Raises before anything is sent: ``TypeError`` (dtype), ``ValueError`` (NaN/±Inf
        with ``nonfinite="raise"``, more elements than the block field allows, an unknown op or mode,
        sparse on the dense program, a bad or read-only ``out``). A non-contiguous or
        read-only ``array`` is fine: it is only read (copied into blocks); an empty one
        gives an empty result without a packet, on every worker alike (as gloo). A call without
        an answer in time raises ``AllreduceTimeout`` (a ``TimeoutError``).

        ``exponents``: a writeable uint8 array of one element per block (ceil(size / K)),
        filled with the agreed exponent each block was quantized with (float32 and float16;
        0 for blocks no worker sent), from which a worker computes its own quantization
        error (``p4reduce.host.compress`` feeds it back, docs/compression.md)."""
        if self._executor is not None:
            # Keep submission order with calls already queued in the background.
            return self.allreduce_async(array, op, mode, out, exponents).result()
        with self._lock:
            return self._allreduce(array, op, mode, out, exponents)

    def allreduce_async(
        self,
        array: np.ndarray,
        op: str = "sum",
        mode: str = "dense",
        out: np.ndarray | None = None,
        exponents: np.ndarray | None = None,
    ) -> concurrent.futures.Future[np.ndarray]:
        """``allreduce`` on the session's background thread; calls (synchronous ones too,
        from then on) run in submission order. Neither ``array`` nor ``out`` may change
        until the future is done. Argument errors are raised here, at submission."""
        a, out = self._check_args(array, op, mode, out)
        self._check_exponents(a, exponents)
        return self._submit(self._allreduce, a, op, mode, out, exponents)

    def resume(self) -> np.ndarray:
        """Finish the call that failed with ``AllreduceTimeout``: resend its outstanding
        packets with a fresh retry budget and run it (and what the user's call still had
        to do) to the end. Correct once every worker is back and running or resuming the
        same call; returns that call's result."""
        if self._executor is not None:
            return self._submit(self._resume).result()
        with self._lock:
            return self._resume()

    def recover(self, timeout: float | None = None) -> None:
        """The recovery round after a failed call: drop the failed call, wait (at most
        ``timeout`` s, by default the registration client's) until every worker of the job
        that has not left asked too, let the controller clear the job's slots, and go on from
        the call number all agreed on. Every worker whose call failed must recover (the next
        call does it by itself unless ``auto_recover=False``); a worker whose call succeeded
        joins in when its next call fails. Raises ``RegistrationError`` when the round fails
        (a worker did not come, the switch cannot clear registers); the session stays failed."""
        if self._executor is not None:
            self._submit(self._recover, timeout).result()
            return
        with self._lock:
            self._recover(timeout)

    def submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        """Run ``fn(*args)`` on the session's background thread, in order with the calls
        submitted before and after it, holding the session's lock (so from ``fn`` use the
        ``*_here`` methods, never the queuing ones). The torch backend runs its recovery
        check this way at each collective's boundary."""
        return self._submit(fn, *args)

    @property
    def failure(self) -> str | None:
        """Why the next call cannot simply run (a failed or broken call), else None."""
        return self._failure()

    def recover_here(self, timeout: float | None = None) -> None:
        """``recover`` for code already running on the session's thread (``submit``)."""
        self._recover(timeout)

    def reset(self, next_call: int | None = None) -> None:
        """Forget a failed call and put every slot back at set 0, as at job creation.
        Only correct after the job's slot range was cleared at the switch (the job
        deleted and created again) and when every worker resets alike, with the same
        ``next_call``; closing every session and joining again does all of that."""
        with self._lock:
            self._pending = None
            self._broken = None
            self._auto_cache.clear()
            self.session.reset(next_call=next_call)
            self.transport.discard()  # queued sends and results of the forgotten calls

    def barrier(self, name: str = "default") -> None:
        """Wait until every worker of the job reached barrier ``name`` (after this
        session's calls submitted before it have finished)."""
        if self.registration is None:
            raise RuntimeError(
                "barrier needs the registration service: create the session with join()"
            )
        if self._executor is not None:
            self._submit(self._barrier, name).result()
        else:
            self._barrier(name)

    @property
    def stats(self) -> AllreduceStats:
        """Cumulative statistics of every completed call (a copy)."""
        with self._stats_lock:
            s = AllreduceStats()
            s._add(self._stats)
            return s

    @property
    def last_stats(self) -> AllreduceStats:
        """Statistics of the last completed call (a copy)."""
        with self._stats_lock:
            s = AllreduceStats()
            s._add(self._last)
            return s

    @property
    def auto_recheck(self) -> int:
        """``mode="auto"`` runs its census (agreement round) on the first call of a shape
        and then on every ``auto_recheck``-th call of it (default AUTO_RECHECK); 1: on
        every call. Set it alike on every worker, between calls."""
        return self._auto_cache.recheck

    @auto_recheck.setter
    def auto_recheck(self, calls: int) -> None:
        if calls < 1:
            raise ValueError(f"auto_recheck = {calls}: at least 1 (a census every call)")
        self._auto_cache.recheck = calls

    @property
    def transport_counters(self) -> dict[str, object]:
        return self.transport.counters.snapshot()

    def close(self) -> None:
        """Stop: queued async calls are cancelled and a running one interrupted (its future
        raises ``Cancelled``); then leave the job at the registration service (the last
        rank to leave deletes the job) and close the socket. Idempotent. A failed leave is
        logged and kept in ``leave_error``, not raised."""
        if self._closed:
            return
        self._closed = True
        self._closing.set()
        with self._executor_lock:
            ex = self._executor
        if ex is not None:
            ex.shutdown(wait=True, cancel_futures=True)
        with self._lock:
            if self.registration is not None:
                try:
                    self.left = self.registration.leave(self.job_id, self.rank)
                except RegistrationError as exc:
                    self.leave_error = exc
                    log.warning("job %d rank %d: leave failed: %s", self.job_id, self.rank, exc)
            self.transport.close()

    def __enter__(self) -> AllreduceSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return (
            f"AllreduceSession(job {self.job_id}, rank {self.rank} of {self.n}, "
            f"{self.program}, K {self.k}, {self.session.slots} slots, {self.transport!r}, {state})"
        )

    # ------------------------------------------------------------ internals

    def _submit(self, fn: Callable[..., Any], *args: Any) -> concurrent.futures.Future[Any]:
        self._check_open()
        with self._executor_lock:
            if self._executor is None:
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix=f"p4reduce-job{self.job_id}-rank{self.rank}"
                )
            return self._executor.submit(self._locked, fn, *args)

    def _locked(self, fn: Callable[..., Any], *args: Any) -> Any:
        with self._lock:
            return fn(*args)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError(f"job {self.job_id} rank {self.rank}: the session is closed")

    def _check_args(
        self, array: np.ndarray, op: str, mode: str, out: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        a = np.asarray(array)
        if a.dtype not in DTYPES:
            raise TypeError(
                f"allreduce of a {a.dtype} array: float32, float16 or int32 expected (float64 "
                f"would lose precision through the switch: convert with astype if that is fine)"
            )
        limit = (wire.NEXT_END - 1) * self.k
        if a.size > limit:
            raise ValueError(
                f"allreduce of {a.size} elements: the block field allows at most "
                f"{wire.NEXT_END - 1} blocks of K = {self.k} ({limit} elements); split it"
            )
        if op not in OPS:
            raise ValueError(f"op {op!r}: one of {', '.join(OPS)}")
        if op == "avg" and a.dtype == np.int32:
            raise TypeError("op 'avg' of an int32 array: use op='sum' and divide as you need")
        if mode not in MODES:
            raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
        if mode == "sparse" and self.program != "sparse":
            raise ValueError(
                f"mode 'sparse' on job {self.job_id}, which runs the dense program "
                f"(the switch would drop sparse messages as malformed): use mode 'dense' or 'auto'"
            )
        if out is not None:
            if not isinstance(out, np.ndarray):
                raise TypeError(f"out must be a numpy array, not {type(out).__name__}")
            if out.shape != a.shape or out.dtype != a.dtype:
                raise ValueError(
                    f"out is {out.dtype} {out.shape}, the input {a.dtype} {a.shape}: they must match"
                )
            if not out.flags.writeable:
                raise ValueError("out is read-only")
        return a, out

    def _check_exponents(self, a: np.ndarray, exponents: np.ndarray | None) -> None:
        if exponents is None:
            return
        nb = block_count(a.size, self.k)
        if not isinstance(exponents, np.ndarray) or exponents.dtype != np.uint8:
            raise TypeError("exponents must be a uint8 numpy array (one element per block)")
        if exponents.shape != (nb,) or not exponents.flags.writeable:
            raise ValueError(
                f"exponents is {exponents.shape}{'' if exponents.flags.writeable else ', read-only'}"
                f": a writeable ({nb},) array expected ({a.size} elements, K = {self.k})"
            )

    def _allreduce_once(
        self,
        array: np.ndarray,
        op: str,
        mode: str,
        out: np.ndarray | None,
        exponents: np.ndarray | None = None,
    ) -> np.ndarray:
        self._check_open()
        a, out = self._check_args(array, op, mode, out)
        self._check_exponents(a, exponents)
        self._check_idle()
        dtype = a.dtype
        if dtype == np.float16:
            a = a.astype(np.float32)  # exact
        user = _UserCall(
            a, op, out, AllreduceStats(calls=1, elements=a.size), time.monotonic(), dtype
        )
        user.exponents = exponents
        if mode == "auto":
            return self._auto(a, user)
        msg = wire.MSG_SPARSE if mode == "sparse" else wire.MSG_DENSE
        return self._run(a, msg, user, lambda r: self._finish(user, r))

    def _allreduce(
        self, array: np.ndarray, op: str, mode: str, out: np.ndarray | None, *rest: Any
    ) -> np.ndarray:
        """One user's call: ``_allreduce_once``, run again after a lost switch while
        ``transparent_retry`` (host/replay.py) keeps a copy of its input for later."""
        if not self.transparent_retry or self.registration is None:
            result = self._allreduce_once(array, op, mode, out, *rest)
            self._replay.done += 1
            return result
        src = np.asarray(array)
        # validate before keeping the copy: a refused call (a 1 TiB broadcast view, a wrong
        # dtype) must fail with its own message, not in the copy
        self._check_open()
        self._check_args(src, op, mode, out)
        saved = src.astype(np.float32) if src.dtype == np.float16 else src.copy()
        while True:
            try:
                # the input stays intact through a failed call (``_landing``): each try
                # starts from it
                result = self._allreduce_once(array, op, mode, out, *rest)
                break
            except AllreduceTimeout as err:
                if not self._retry_after(err):
                    raise
        self._replay.completed(saved, op, mode)
        return result

    def _retry_after(self, err: AllreduceTimeout) -> bool:
        """After a call timed out: the recovery round, which waits up to the retry policy's
        give_up_after for a switch that went away to be back with the job; True when the
        call can run again (every worker runs the same calls from the agreed one on)."""
        assert self.registration is not None
        if not self._switch_lost():
            return False  # a worker is missing, not the switch: the call fails as before
        wait = self._switch_wait()
        deadline = time.monotonic() + wait + self.registration.timeout
        while True:
            self.transport.discard()  # stop sending: nothing of the call may follow the clear
            try:
                answer = self.registration.recover_round(
                    self.job_id,
                    self.rank,
                    self.session.next_call,
                    done=self._replay.done,
                    timeout=max(deadline - time.monotonic(), 1.0),
                    switch_wait=wait,
                )
                break
            except RegistrationError as e:
                # 409: this rank's earlier wait in the round still counts; ask again
                if e.status != 409 or time.monotonic() >= deadline:
                    log.warning("job %d rank %d: no retry: %s", self.job_id, self.rank, e)
                    return False
                time.sleep(0.1)
        self._switch_epoch = int(answer.get("switch_epoch", self._switch_epoch))
        self._after_round(int(answer["next_call"]))
        step = replay.plan(
            self._replay.done,
            answer.get("min_done"),
            answer.get("max_done"),
            self._replay.last is not None,
        )
        if step == replay.CANNOT:
            self._replay.done = int(answer.get("max_done", self._replay.done))
            self._replay.last = None
            log.warning("job %d rank %d: no retry: %s", self.job_id, self.rank, err)
            return False
        if step == replay.REDO_LAST:
            last = self._replay.last
            assert last is not None
            try:  # another worker still needs the sums of our last completed call
                self._allreduce_once(last.array, last.op, last.mode, None)
            except AllreduceTimeout:
                return False
        self.retried += 1
        log.info(
            "job %d rank %d: the switch lost call %d: running it again",
            self.job_id,
            self.rank,
            self._replay.done,
        )
        return True

    def _switch_lost(self) -> bool:
        """Did the switch go away since this session last knew it (the service says it is
        down, or reconciled it since)? Only then is a stuck call run again."""
        assert self.registration is not None
        try:
            sw = self.registration.health()["switch"]
        except (RegistrationError, KeyError, TypeError) as e:
            log.warning("job %d rank %d: no retry: %s", self.job_id, self.rank, e)
            return False
        return not sw.get("up", True) or int(sw.get("epoch", 0)) != self._switch_epoch

    def _failure(self) -> str | None:
        p = self._pending
        if p is not None:
            return f"call {p.call.call_id} failed ({p.call.error})"
        if self._broken is not None:
            return f"a call broke the session ({self._broken})"
        return None

    def _check_idle(self) -> None:
        failure = self._failure()
        if failure is None:
            return
        me = f"job {self.job_id} rank {self.rank}"
        if not self.auto_recover or self.registration is None:
            raise SessionFailed(
                f"{me}: {failure}; recover() with every worker, resume() the call once every "
                f"worker is back, or close every session and join again"
            )
        try:
            self._recover(None)
        except RegistrationError as err:
            raise SessionFailed(f"{me}: {failure}, and the recovery round failed: {err}") from None

    def _recover(self, timeout: float | None) -> None:
        self._check_open()
        if self.registration is None:
            raise RuntimeError(
                "recover needs the registration service: create the session with join()"
            )
        # Stop sending first: the slots are cleared only once every worker is in this round,
        # and nothing of the failed call may reach them afterwards.
        self.transport.discard()
        answer = self.registration.recover_round(
            self.job_id,
            self.rank,
            self.session.next_call,
            done=self._replay.done,
            timeout=timeout,
            # a switch that went away may still be coming back: wait for it as a retry would
            switch_wait=self._switch_wait() if self.transparent_retry else 0.0,
        )
        agreed = int(answer["next_call"])
        # the failed call is dropped on every worker: all count the same calls from here
        self._replay.done = int(answer.get("max_done", self._replay.done))
        self._replay.last = None
        self._after_round(agreed)
        log.info("job %d rank %d: recovered, going on from call %d", self.job_id, self.rank, agreed)

    def _switch_wait(self) -> float:
        """How long a recovery round may wait for a lost switch to be back: the retry
        policy's give_up_after (``MAX_SWITCH_WAIT`` when that is infinite)."""
        wait = self.retry.give_up_after
        return wait if math.isfinite(wait) else MAX_SWITCH_WAIT

    def _after_round(self, next_call: int) -> None:
        """A recovery round's end: the failed call is dropped and the session goes on from
        the agreed ``next_call`` (alike on every worker: each goes through the round)."""
        self._pending = None
        self._broken = None
        self._auto_cache.clear()
        self.session.reset(next_call=next_call)
        self.transport.discard()  # results of the failed call that arrived meanwhile
        self.recoveries += 1

    def _run(
        self,
        tensor: np.ndarray,
        msg_type: int,
        user: _UserCall,
        then: Callable[[np.ndarray], np.ndarray],
    ) -> np.ndarray:
        """Create a core call (raising TypeError / ValueError before anything is sent) and
        drive it; on success continue with ``then``."""
        ses = self.session
        ses.msg_type = msg_type  # no call is pending (checked), so this one may switch it
        call = ses.allreduce(tensor, out=self._landing(tensor, user))
        user.landed = call.into_out
        self.last_mode = "sparse" if msg_type == wire.MSG_SPARSE else "dense"
        return self._drive(call, then, user, resume=False, accounted=None)

    @staticmethod
    def _landing(tensor: np.ndarray, user: _UserCall) -> np.ndarray | None:
        """The caller's ``out`` when the call's results may land in it as they arrive
        (saving a pass over the result at the end, docs/host.md "Buffers"): the call is for
        the caller's tensor itself (not auto's census), in its dtype, and ``out`` is not
        the input, which must stay intact until the call succeeds (a failed call must not
        have overwritten it)."""
        out = user.out
        if out is None or tensor is not user.array or out.dtype != tensor.dtype:
            return None
        if np.may_share_memory(out, tensor):
            return None
        return out

    def _drive(
        self,
        call: Call,
        then: Callable[[np.ndarray], np.ndarray],
        user: _UserCall,
        *,
        resume: bool,
        accounted: dict[str, int] | None,
    ) -> np.ndarray:
        try:
            end = run_call(call, self.transport, resume=resume, cancel=self._closing)
        except Cancelled:
            self._broken = Cancelled(f"call {call.call_id} was cancelled")
            raise
        user.stats._add_call(call.stats, accounted)
        if isinstance(end, Done) and user.exponents is not None and call.is_float:
            if call.nblocks == user.exponents.size:  # not auto's census of the blocks
                user.exponents[:] = call.agreed_exponents()
        if isinstance(end, Done):
            result = then(end.result)
            call.release(result)  # the sums back to the pool, unless result is them
            return result
        err = end.error
        if isinstance(err, CallTimeout):
            self._pending = _Pending(call, then, user, call.stats.as_dict())
            raise self._timeout(err, call) from None
        self._broken = err
        raise err

    def _timeout(self, err: CallTimeout, call: Call) -> AllreduceTimeout:
        ip, port = self.switch
        got = call.stats.results
        why = (
            f" Nothing came back from the switch at {ip}:{port} during this call: is it "
            f"running, and is this worker registered?"
            if call.stats.packets_received == 0
            else f" ({got} results arrived from {ip}:{port} before that.)"
        )
        missing, state = self._missing_ranks(err.stuck)
        state += self._unknown_senders_hint()
        msg = (
            f"{err}{why}{state} The next call recovers with the other workers first "
            f"(or resume() this one once every worker is back)."
        )
        timeout = AllreduceTimeout(msg, err.call_id, err.stuck, err.in_flight)
        timeout.missing_ranks = missing
        return timeout

    def _unknown_senders(self) -> int | None:
        """The switch UDP adapter's count of datagrams from senders no port stands for, as
        the registration service's health tells (None: unknown; never fatal)."""
        if self.registration is None:
            return None
        try:
            count = self.registration.health()["switch"].get("unknown_sender")
        except Exception:  # noqa: BLE001 - a diagnosis must not fail the session
            return None
        return count if isinstance(count, int) else None

    def _unknown_senders_hint(self) -> str:
        """A sentence when the switch dropped datagrams from unknown senders since the join:
        then this worker's (or another's) datagrams likely never reached the pipeline."""
        before, now = self._unknown_senders_at_join, self._unknown_senders()
        if before is None or now is None or now <= before:
            return ""
        return (
            f" The switch dropped {now - before} datagram(s) from unknown senders since this "
            f"worker joined (p4reduce-ctl stats): is every worker's socket bound to the "
            f"address it registered, its switch port's peer (-i N@udp:HOST:PORT)?"
        )

    def _missing_ranks(self, stuck: tuple[StuckSlot, ...]) -> tuple[list[int] | None, str]:
        """Which ranks the switch has not seen in the stuck slots, as its registers tell
        (asked through the registration service; a few slots at most, never fatal)."""
        if self.registration is None or not stuck:
            return None, ""
        missing: set[int] = set()
        seen = []
        try:
            for st in stuck[:_DIAGNOSED_SLOTS]:
                states = self.registration.slot_state(self.job_id, first=st.slot, count=1)
                cell = next(c for c in states[0]["sets"] if c["set"] == st.set)
                missing.update(cell["missing"])
                seen.append(f"slot {st.slot} set {st.set}: ranks {cell['ranks']} in")
        except Exception as exc:  # noqa: BLE001 - a diagnosis must not hide the timeout
            return None, f" (the switch's slot state could not be read: {exc})"
        ranks = sorted(missing)
        who = f"ranks {ranks} have not contributed" if ranks else "every rank contributed"
        return ranks, f" Switch state: {who} ({'; '.join(seen)})."

    def _resume(self) -> np.ndarray:
        self._check_open()
        p = self._pending
        if p is None:
            raise RuntimeError(f"job {self.job_id} rank {self.rank}: no failed call to resume")
        self._pending = None
        return self._drive(p.call, p.then, p.user, resume=True, accounted=p.accounted)

    def _finish(self, user: _UserCall, result: np.ndarray) -> np.ndarray:
        if user.op == "avg":
            np.divide(result, np.float32(self.n), out=result)
        if user.dtype != result.dtype and user.out is None:
            result = result.astype(user.dtype)  # float16: rounded once, from the float32 sum
        if user.out is not None:
            if not user.landed:
                np.copyto(user.out, result)
            result = user.out
        st = user.stats
        st.seconds = time.monotonic() - user.t0
        with self._stats_lock:
            self._last = st
            self._stats._add(st)
        return result

    def _barrier(self, name: str) -> None:
        self._check_open()
        assert self.registration is not None
        self.registration.barrier(self.job_id, self.rank, name)

    # ------------------------------------------------------------ mode="auto"

    def _auto(self, a: np.ndarray, user: _UserCall) -> np.ndarray:
        """``mode="auto"`` (docs/host.md): dense without asking anyone on the dense program
        or for a tensor of at most AUTO_MIN_ROUNDS rounds of the job's slots (both depend
        only on what every worker shares); else the cached decision for this shape, or a
        census first when the cache has none (the first call, every ``auto_recheck``-th).
        With ``nonfinite="raise"`` the census checks for NaN/±Inf before anything is sent."""
        nb = block_count(a.size, self.k)
        if self.program != "sparse" or nb <= AUTO_MIN_ROUNDS * self.session.slots:
            return self._run(a, wire.MSG_DENSE, user, lambda r: self._finish(user, r))
        key = (a.shape, user.dtype.str)
        msg = self._auto_cache.decision(key)
        if msg is not None:
            return self._run(a, msg, user, lambda r: self._after_auto(user, key, r, False))
        blocks = to_blocks(a, self.k)
        if a.dtype == np.float32 and self.nonfinite == "raise":
            nonzero = block_exponents(blocks) != 0  # raises NonFiniteError before the census
        else:
            # for float32 the same as exponent != 0; a block holding NaN/±Inf counts as
            # non-zero, so it travels (nonfinite="propagate")
            nonzero = blocks.any(axis=1)
        self.censuses += 1
        return self._run(
            census_vector(nonzero),
            wire.MSG_DENSE,
            user,
            lambda sums: self._after_census(user, key, sums),
        )

    def _after_census(self, user: _UserCall, key: Any, sums: np.ndarray) -> np.ndarray:
        """Every worker gets the same ``sums``, so every worker decides alike."""
        a = user.array
        nb = block_count(a.size, self.k)
        msg = decide_auto(census_union(sums, nb), nb, self.session.slots, a.dtype == np.float32)
        return self._run(a, msg, user, lambda r: self._after_auto(user, key, r, True))

    def _after_auto(
        self, user: _UserCall, key: Any, result: np.ndarray, census: bool
    ) -> np.ndarray:
        """The union seen in the result (bit-identical on every worker) decides the next
        call of this shape."""
        a = user.array
        nb = block_count(a.size, self.k)
        union = result_union(result, self.k)
        msg = decide_auto(union, nb, self.session.slots, a.dtype == np.float32)
        self._auto_cache.learn(key, msg, census=census)
        return self._finish(user, result)
