"""One rank's place in one group's switch job: its UDP socket, its ``AllreduceSession``, and
on rank 0 of a group without a URL the loopback stack.

Set-up (``connect``): every rank binds its socket; without a URL the ranks exchange their
addresses over the group's store, rank 0 starts the stack with those addresses as the
switch's UDP peers (switch port r + 1 is rank r) and publishes its URL or why it failed;
then every rank joins the job at the registration service with the job's secret, which rank 0
publishes on the store (its own ``P4ReduceOptions.secret`` or ``$P4REDUCE_JOB_SECRET``, else a
fresh one; docs/torch.md, "Credentials"). Teardown (``Endpoint.close``):
every rank leaves the job; rank 0 waits (bounded) until the others have left, then stops
the stack.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import socket
import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import torch.distributed as dist

from ...controller.client import RegistrationError
from ...controller.credentials import JOB_SECRET_ENV, new_secret
from ..api import AllreduceSession
from . import loopback
from .errors import P4ReduceError
from .options import P4ReduceOptions
from .recovery import Recovery
from .rendezvous import Rendezvous

if TYPE_CHECKING:
    from ...stack.loopback import LoopbackStack

log = logging.getLogger("p4reduce.torch")

_TEARDOWN_POLL = 0.05  # seconds between looks at the store while rank 0 waits for leaves
_STOPPED_WAIT = 2.0  # how long a failed join looks for rank 0's reason to stop the stack


@dataclass(eq=False)  # identity: endpoints live in a set
class Endpoint:
    """This rank's session in the job of one group (or hook state) ``what``."""

    what: str
    job_id: int
    url: str
    session: AllreduceSession
    rdv: Rendezvous
    options: P4ReduceOptions
    stack: LoopbackStack | None = None  # rank 0 of a loopback group only
    recovery: Recovery | None = None  # the boundary step before each collective
    closed: bool = field(default=False, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    @property
    def rank(self) -> int:
        return self.rdv.rank

    def close(self, wait_for_peers: bool = True) -> None:
        """Leave the job; on the stack's rank, wait at most ``options.timeout`` for the
        others to leave (``wait_for_peers``), then stop the stack. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
        _open.discard(self)
        try:
            self.session.close()
        finally:
            if self.stack is None:
                # Tell the stack's rank this one is done with the switch (best effort: the
                # store may be gone when the default group went first).
                with contextlib.suppress(RuntimeError):
                    self.rdv.set(f"left/{self.rank}", True)
            else:
                if wait_for_peers:
                    self._wait_for_leaves()
                loopback.stop(self.stack)

    def _wait_for_leaves(self) -> None:
        others = [f"left/{r}" for r in range(self.rdv.n) if r != self.rank]
        deadline = time.monotonic() + self.options.timeout
        while others and time.monotonic() < deadline:
            try:
                others = [k for k in others if not self.rdv.present(k)]
            except RuntimeError:
                return  # the store is gone: nobody can tell us any more
            if others:
                time.sleep(_TEARDOWN_POLL)
        if others:
            ranks = ", ".join(k.rsplit("/", 1)[1] for k in others)
            log.warning(
                "%s: ranks %s did not leave within %g s; stopping the loopback stack anyway",
                self.what,
                ranks,
                self.options.timeout,
            )


# Endpoints not yet closed, closed at interpreter exit (before the atexit hook of
# loopback.py, registered earlier, stops any stack left): leaving the job first keeps the
# service's table clean when the stack lives on another rank.
_open: set[Endpoint] = set()


@atexit.register
def _close_all() -> None:
    for ep in list(_open):
        try:
            ep.close(wait_for_peers=False)
        except Exception:  # noqa: BLE001 - exiting: close the others regardless
            log.exception("%s: closing at exit failed", ep.what)


def connect(rdv: Rendezvous, options: P4ReduceOptions, job_id: int, what: str) -> Endpoint:
    """Join job ``job_id`` as rank ``rdv.rank`` of ``rdv.n`` (see the module docstring).
    Raises ``P4ReduceError`` naming the part that failed."""
    rank, n = rdv.rank, rdv.n
    sock = _bind(options, what, rank)
    stack: LoopbackStack | None = None
    try:
        if options.url is None:
            url, stack = _loopback(rdv, sock, options, what)
            switch_port: int | None = rank + 1  # the stack's numbering
        else:
            url, switch_port = options.url, options.switch_port
        secret = _job_secret(rdv, options)
        try:
            session = AllreduceSession.join(
                url,
                job_id,
                rank,
                n,
                sock=sock,
                bind_ip=options.bind_ip,
                mac=options.mac,
                switch_port=switch_port,
                slots=options.slots,
                timeout=options.timeout,
                retry=options.retry,
                auto_recover=True,  # recovery.py recovers first, at an agreed collective
                engine=options.engine,
                nonfinite=options.nonfinite,
                threads=options.threads,
                secret=secret,
                tls=options.tls,
                # torchrun --max-restarts started every worker again: re-form the job
                rejoin=int(os.environ.get("TORCHELASTIC_RESTART_COUNT") or 0) > 0,
            )
        except RegistrationError as err:
            raise _join_error(rdv, options, what, job_id, url, err) from err
    except BaseException as err:
        sock.close()
        if stack is not None:
            # The others' joins fail when the stack goes: tell them why first.
            with contextlib.suppress(RuntimeError):
                rdv.set("stopped", {"error": str(err) or type(err).__name__})
            loopback.stop(stack)
        raise
    recovery = Recovery(dist.PrefixStore("recovery/", rdv.store), rank, n, options.timeout, what)
    ep = Endpoint(what, job_id, url, session, rdv, options, stack, recovery)
    _open.add(ep)
    log.info("%s: rank %d of %d joined job %d at %s", what, rank, n, job_id, url)
    return ep


def _job_secret(rdv: Rendezvous, options: P4ReduceOptions) -> str:
    """The job's secret, the same on every rank: rank 0 takes its own (the option, else the
    environment, else a fresh one) and publishes it on the group's store; the other ranks
    use their own when they have one, else rank 0's."""
    own = options.secret or os.environ.get(JOB_SECRET_ENV) or None
    if rdv.rank == 0:
        secret = own or new_secret()
        rdv.set("job_secret", secret)
        return secret
    if own is not None:
        return own
    return str(rdv.get("job_secret", "rank 0's job secret"))


def _join_error(
    rdv: Rendezvous,
    options: P4ReduceOptions,
    what: str,
    job_id: int,
    url: str,
    err: RegistrationError,
) -> P4ReduceError:
    me = f"{what}, rank {rdv.rank} of {rdv.n}"
    if err.status is not None:
        return P4ReduceError(
            f"{me}: joining job {job_id} at {url} was refused (HTTP {err.status}): {err}"
        )
    if options.url is None and rdv.rank != 0:
        # The loopback service went away under this join: rank 0 stopped its stack, and
        # said why just before.
        try:
            why = rdv.get("stopped", "rank 0's reason", timeout=_STOPPED_WAIT)["error"]
        except P4ReduceError:
            why = None
        if why is not None:
            return P4ReduceError(f"{me}: rank 0 stopped the loopback stack: {why}")
    return P4ReduceError(f"{me}: joining job {job_id} at {url} failed: {err}")


def _bind(options: P4ReduceOptions, what: str, rank: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.bind((options.bind_ip, options.udp_port))
    except OSError as err:
        sock.close()
        raise P4ReduceError(
            f"{what}, rank {rank}: cannot bind a UDP socket to "
            f"{options.bind_ip}:{options.udp_port}: {err}"
        ) from err
    return sock


def _loopback(
    rdv: Rendezvous, sock: socket.socket, options: P4ReduceOptions, what: str
) -> tuple[str, LoopbackStack | None]:
    """The URL of the group's loopback stack, started here on rank 0."""
    ip, port = sock.getsockname()[:2]
    if ip == "0.0.0.0":
        ip = "127.0.0.1"
    me = {"host": socket.gethostname(), "ip": ip, "port": port}
    peers = rdv.all_gather("peer", me, "every rank's UDP address")
    if rdv.rank != 0:
        answer = rdv.get("stack", "rank 0 to start the loopback stack", timeout=2 * options.timeout)
        if "error" in answer:
            raise P4ReduceError(
                f"{what}, rank {rdv.rank}: rank 0 could not start the loopback stack: "
                f"{answer['error']}"
            )
        return str(answer["url"]), None
    try:
        hosts = sorted({str(p["host"]) for p in peers})
        if len(hosts) > 1:
            raise P4ReduceError(
                f"{what}: no registration service URL given, and the ranks run on "
                f"{len(hosts)} machines ({', '.join(hosts)}); a loopback stack serves one "
                f"machine: start a switch and p4reduce-ctl serve, and pass "
                f"P4ReduceOptions(url=...)"
            )
        stack = loopback.start([(str(p["ip"]), int(p["port"])) for p in peers], options, what)
    except BaseException as err:
        with contextlib.suppress(RuntimeError):
            rdv.set("stack", {"error": str(err) or type(err).__name__})
        raise
    rdv.set("stack", {"url": stack.url})
    return stack.url, stack
