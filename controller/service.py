"""The registration service: HTTP + JSON on 127.0.0.1 (``http.server``), over a
``Controller`` that holds the switch and a ``Registry``.

    POST /v1/jobs/{id}/join      {"rank", "n", "ip", "udp_port", "mac", "switch_port",
                                  "slots"?, "timeout"?}  -> the job's assignment, once all n
                                  ranks joined and the job is installed
    POST /v1/jobs/{id}/barrier   {"rank", "name"?, "timeout"?} -> {"released": true, ...}
                                  once every rank (that has not left) arrived
    POST /v1/jobs/{id}/recover   {"rank", "next_call", "timeout"?} -> {"next_call", ...} once
                                  every rank (that has not left) asked and the job's slots
                                  were cleared: the recovery after a failed call
    POST /v1/jobs/{id}/leave     {"rank"} -> {"deleted": bool}; the last leave deletes the job
    GET  /v1/jobs                every job the service knows (joining, installing, ready)
    GET  /v1/jobs/{id}           one of them
    GET  /v1/jobs/{id}/slots?first=A&count=C   the switch's state of those slots (ranks in,
                                 missing, count, exponent, complete) for diagnosing a stuck call
    GET  /v1/health              {"status": "ok", "switch": {...}}

Every request about a job carries ``Authorization: Bearer <the job's secret>`` (or the
operator token); listing all jobs needs the operator token; health needs nothing
(docs/controller.md, "Credentials"). The first join of a job sets its secret.

Errors answer with the status of the ``ControllerError`` (400, 401, 403, 404, 409, 413, 429,
501, 502, 503, 504, 507) and ``{"error": "one line"}``. docs/controller.md has the request and
response fields; http_server.py the limits and TLS.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
import urllib.parse
from dataclasses import asdict, dataclass
from typing import Any

from . import credentials, program
from .api import Controller
from .errors import (
    Conflict,
    ControllerError,
    Forbidden,
    InvalidArgument,
    NoPipeline,
    NotFound,
    Timeout,
    Unauthenticated,
)
from .http_server import Handler, Limits, Server, TlsConfig, WaitGate
from .jobs import Job, Member
from .reconcile import Outcome, Watcher, foreign_pipeline, reconcile
from .registry import FAILED, INSTALLING, JOINING, READY, Entry, Registry
from .state import StateError, StateStore, StoredPipeline
from .static_config import StaticConfig

DEFAULT_LISTEN = "127.0.0.1:9560"
MAX_WAIT = 3600.0
_JOB_PATH = re.compile(r"^/v1/jobs/(\d+)(?:/(join|barrier|recover|leave|slots))?/?$")


@dataclass
class Timeouts:
    """Retransmission settings handed to workers: the first timeout, its cap (doubling in
    between), and how many retransmissions of one packet before giving up.

    The defaults report a dead switch, a dead worker or a rank that does not come within
    8.5 s (0.1 + 0.2 + 0.4 + 0.8 + 7 × 1.0): failure detection in seconds on loopback and on
    any link of 1 Gbit/s or more. docs/controller.md ("Worker timeouts") says how to scale
    them to a slower link or switch."""

    initial_ms: int = 100
    max_ms: int = 1000
    retries: int = 10

    def give_up_seconds(self) -> float:
        """How long a worker waits for one packet's result before its call fails: the sum
        of the first wait and the ``retries`` waits after each resend."""
        w, total = max(self.initial_ms, 1), 0
        cap = max(self.max_ms, w)
        for _ in range(max(self.retries, 0) + 1):
            total += w
            w = min(w * 2, cap)
        return total / 1000.0


class Stopping(ControllerError):
    status = 503


class RegistrationService:
    def __init__(
        self,
        controller: Controller,
        host: str = "127.0.0.1",
        port: int = 9560,
        switch_ip: str | None = None,
        switch_mac: str | None = None,
        agg_port: int = program.AGG_PORT,
        default_slots: int = 64,
        join_timeout: float = 120.0,
        timeouts: Timeouts | None = None,
        operator_token: str | None = None,
        limits: Limits | None = None,
        tls: TlsConfig | None = None,
        store: StateStore | None = None,
        watch: bool = True,
    ) -> None:
        """``store``: the durable desired state (controller/state.py; None keeps it in memory
        only); ``watch``: reconnect and reconcile when the switch goes away (reconcile.py)."""
        self.controller = controller
        self.store = store
        self.watch = watch
        self.watcher: Watcher | None = None
        self.pipeline: StoredPipeline | None = None  # the pipeline the jobs run on
        self.static: StaticConfig | None = None
        self.switch_epoch = 0  # reconciliations that repaired a switch which lost state
        self.reconciliations = 0  # every reconnection (waiters of a lost switch watch it)
        # (job, generation) -> why re-forming the job failed, for every rank that waited
        self._reform_errors: dict[tuple[int, int], ControllerError] = {}
        self.host, self.port = host, port
        self.switch_ip, self.switch_mac = switch_ip, switch_mac
        self.agg_port = agg_port
        self.join_timeout = join_timeout
        self.timeouts = timeouts or Timeouts()
        self.registry = Registry(default_slots)
        self.cond = threading.Condition()
        self.closing = False
        self.httpd: Server | None = None
        self._thread: threading.Thread | None = None
        self.installs = 0  # jobs installed through joins (tests check "exactly once")
        self.operator_token = (
            None
            if operator_token is None
            else credentials.check_secret(operator_token, "operator token")
        )
        self.limits = limits or Limits()
        self.tls = tls
        self._tls_context = tls.context() if tls is not None else None  # fails before listening
        self.gate = WaitGate(self.limits.max_waiting_per_client)
        self._verified: dict[bytes, bool] = {}  # (verifier, H(secret)) -> matches: a cache
        self._verified_lock = threading.Lock()

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> tuple[str, int]:
        """Resume from the state database (if any), adopt the jobs already on the switch,
        start watching the switch, then listen; returns the bound address."""
        self._resume()
        if self.switch_ip is None and self.static is not None:
            self.switch_ip, self.switch_mac = self.static.switch_ip, self.static.switch_mac
        if self.switch_ip is None:
            raise InvalidArgument(
                "the switch has no IPv4 address (switch_ipv4 is empty): pass --switch-ip and "
                "--switch-mac"
            )
        service = self

        class _Bound(Handler):
            svc = service

        self.httpd = Server((self.host, self.port), _Bound, self.limits, self._tls_context)
        self.port = self.httpd.server_address[1]
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.1}, name="p4reduce-ctl-http"
        )
        self._thread.start()
        if self.watch:
            self.watcher = Watcher(
                self.controller, self._desired, self._reconciled, self.controller._warn
            )
            self.watcher.start()
        return self.host, self.port

    # ------------------------------------------------------------------ durable state
    def _resume(self) -> None:
        """The desired state at start: the pipeline the switch runs (or the stored one,
        pushed again when the switch has none), the static configuration, the stored jobs
        (re-installed where the switch lost them) and the jobs found on the switch."""
        ctl, store = self.controller, self.store
        stored = None
        if store is not None:
            store.bind_switch(ctl.conn.addr, ctl.conn.device_id)
            stored = store.pipeline()
        try:
            p4info, config = ctl.pipeline_config()
        except NoPipeline:
            if stored is None:
                raise
        else:
            running = StoredPipeline(p4info.SerializeToString(deterministic=True), config)
            if not config:  # a target that does not return its device config
                ctl._warn(
                    "the switch does not return its device config: after a restart of the "
                    "switch its pipeline must be pushed again by hand (p4reduce-ctl push)"
                )
            elif stored is not None and stored.ident != running.ident:
                assert store is not None
                raise StateError(
                    f"state database {store.path}: " + foreign_pipeline(running.ident, stored.ident)
                )
            if stored is None and config:
                stored = running
                if store is not None:
                    store.save_pipeline(running.p4info, running.device_config)
        self.pipeline = stored
        self.static = store.static_config() if store is not None else None
        if self.static is None and ctl.has_pipeline():
            self.static = ctl.static_config()
            if store is not None and self.static.switch_ip is not None:
                store.save_static(self.static)
        if store is not None:
            for row in store.jobs():
                self.registry.restore(
                    row.job_id, row.n, row.slot_count, row.members, row.left, row.job, row.verifier
                )
        outcome = reconcile(ctl, self.pipeline, self.static, self._ready_jobs())
        if outcome.problem is not None:
            raise StateError(outcome.problem)
        if outcome.installed or outcome.pushed:
            ctl._warn(f"resumed from {store.path if store else 'memory'}: {outcome.summary()}")
        for job in ctl.list_jobs():
            if job.job_id not in self.registry.entries:
                self.registry.adopt(job)
                self._persist(job.job_id)

    def _ready_jobs(self) -> list[Job]:
        return [
            e.job for e in self.registry.entries.values() if e.state == READY and e.job is not None
        ]

    def _desired(self) -> tuple[StoredPipeline | None, StaticConfig | None, list[Job]]:
        with self.cond:
            return self.pipeline, self.static, self._ready_jobs()

    def _reconciled(self, outcome: Outcome) -> None:
        with self.cond:
            if outcome.pushed or outcome.installed:  # the switch had lost state
                self.switch_epoch += 1
            self.reconciliations += 1
            self.cond.notify_all()

    def _persist(self, job_id: int) -> None:
        """Write job ``job_id``'s registry entry to the state database (its row deleted when
        the registry no longer tracks it); call before acting on the change."""
        if self.store is None:
            return
        e = self.registry.entries.get(job_id)
        if e is None:
            self.store.delete_job(job_id)
            return
        self.store.save_job(
            job_id,
            e.state,
            e.n,
            e.slot_count,
            e.verifier,
            list(e.members.values()),
            e.left,
            e.job,
        )

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://{self.host}:{self.port}"

    def stop(self) -> None:
        """Wake every waiting request (503), stop listening, join every thread."""
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        if self.watcher is not None:
            self.watcher.stop()
            self.watcher = None
        if self.httpd is not None:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def __enter__(self) -> RegistrationService:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ------------------------------------------------------------------ operations
    def _wait(self, done: Any, timeout: float) -> bool:
        """Wait (holding ``cond``) until ``done()`` or the deadline; raises when stopping."""
        deadline = time.monotonic() + timeout
        while not done():
            if self.closing:
                raise Stopping("the registration service is stopping")
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.cond.wait(left)
        return True

    def _timeout(self, body: dict[str, Any], default: float) -> float:
        t = body.get("timeout", default)
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t <= MAX_WAIT:
            raise InvalidArgument(f"bad timeout {t!r} (want seconds in (0, {MAX_WAIT:g}])")
        return float(t)

    # ------------------------------------------------------------------ credentials
    def _is_operator(self, cred: str | None) -> bool:
        return credentials.same_token(cred, self.operator_token)

    def _matches(self, cred: str, verifier: bytes) -> bool:
        """credentials.matches, with successful and failed checks cached (PBKDF2 is slow on
        purpose; the cache key holds only a hash of the credential)."""
        key = verifier + hashlib.sha256(cred.encode()).digest()
        with self._verified_lock:
            hit = self._verified.get(key)
        if hit is None:
            hit = credentials.matches(cred, verifier)
            with self._verified_lock:
                if len(self._verified) >= 4096:  # bounded: wrong guesses cannot grow it
                    self._verified.clear()
                self._verified[key] = hit
        return hit

    # A check costs one PBKDF2 (tens of ms) the first time a credential is seen, so it runs
    # outside ``cond``: a flood of wrong guesses must not hold the lock every request needs.
    # It returns the entry it checked against; the operation then confirms, under ``cond``,
    # that the job is still that entry (``_confirm``) before it changes anything.

    def _authorize(self, job_id: int, cred: str | None) -> Entry | None:
        """Raise unless ``cred`` is the operator token or job ``job_id``'s secret (call
        without ``cond``). 401 without a credential, 404 for an unknown job, 403 else.
        Returns the entry checked (None: the operator, who may use any)."""
        if cred is None:
            raise Unauthenticated(
                f"job {job_id}: no credentials (send Authorization: Bearer <the job's secret>)"
            )
        if self._is_operator(cred):
            return None
        with self.cond:
            entry = self.registry.entries.get(job_id)
        if entry is None:
            raise NotFound(f"unknown job {job_id}")
        if entry.verifier is None:
            raise Forbidden(
                f"job {job_id} has no secret (it was created without one): only the operator "
                "token may use it"
            )
        if not self._matches(cred, entry.verifier):
            raise Forbidden(f"job {job_id}: wrong credentials (not the job's secret)")
        return entry

    def _confirm(self, job_id: int, checked: Entry | None) -> None:
        """With ``cond`` held: the job is still the entry the credential was checked against
        (it could have been deleted and joined anew, with another secret, in between)."""
        if checked is not None and self.registry.entries.get(job_id) is not checked:
            raise Conflict(f"job {job_id} changed while its credentials were checked: try again")

    def _authorize_join(self, job_id: int, cred: str | None) -> tuple[Entry | None, bytes | None]:
        """For a join (without ``cond``): (the entry checked, None) for a known job, or
        (None, the verifier of the first joiner's secret) for a new one."""
        jid = int(job_id)
        with self.cond:
            known = jid in self.registry.entries
        if known:
            return self._authorize(jid, cred), None
        if cred is None:
            raise Unauthenticated(
                f"job {jid}: no credentials (the first join of a job brings its secret: send "
                "Authorization: Bearer <the job's secret>)"
            )
        if self._is_operator(cred):
            raise InvalidArgument(
                f"job {jid}: the operator token is not a job secret; the first join of a job "
                "brings the job's own secret"
            )
        return None, credentials.verifier(credentials.check_secret(cred))

    def _operator(self, cred: str | None, what: str) -> None:
        if cred is None:
            raise Unauthenticated(f"{what} needs the operator token (Authorization: Bearer)")
        if self.operator_token is None:
            raise Forbidden(
                f"{what} needs the operator token, and this service has none "
                "(p4reduce-ctl serve --operator-token-file)"
            )
        if not self._is_operator(cred):
            raise Forbidden(f"{what}: wrong credentials (not the operator token)")

    # ------------------------------------------------------------------ operations
    def join(self, job_id: int, body: dict[str, Any], cred: str | None = None) -> dict[str, Any]:
        n = body.get("n")
        if n is None:
            raise InvalidArgument("join without n (the job's worker count)")
        member = Member.from_dict(body)
        self.controller.check_ports([member])  # at once, not when the last rank arrives
        timeout = self._timeout(body, self.join_timeout)
        if body.get("rejoin") is True:
            with self.cond:
                entry = self.registry.entries.get(int(job_id))
                running = entry is not None and entry.state == READY
            if running:
                return self._rejoin(int(job_id), member, n, timeout, cred)
        for _ in range(3):  # again when the job appeared or changed during the check
            checked, verifier = self._authorize_join(job_id, cred)
            with self.cond:
                if self.closing:
                    raise Stopping("the registration service is stopping")
                current = self.registry.entries.get(int(job_id))
                if (verifier is not None and current is not None) or (
                    checked is not None and current is not checked
                ):
                    continue
                if verifier is None and checked is None and current is None:
                    continue  # the operator joined a job that went away meanwhile
                outcome = self.registry.join(
                    job_id, member, n, body.get("slots"), verifier, self.limits.max_jobs
                )
                entry = outcome.entry
                self._persist(entry.job_id)  # a pending registration survives a restart
                break
        else:
            raise Conflict(f"job {job_id} kept changing while its credentials were checked")
        if outcome.complete:
            try:
                job = self.controller.plan_job(
                    entry.job_id, outcome.members, entry.slot_count, entry.n, entry.verifier
                )
                with self.cond:
                    entry.job = job
                    self._persist(entry.job_id)  # the plan is durable before it is installed
                self.controller.restore_job(job)
            except ControllerError as err:
                with self.cond:
                    self.registry.install_failed(entry.job_id, err)
                    self._persist(entry.job_id)
                    self.cond.notify_all()
                raise
            with self.cond:
                self.installs += 1
                self.registry.installed(entry.job_id, job)
                self._persist(entry.job_id)
                self.cond.notify_all()
        with self.cond:
            if not self._wait(lambda: entry.state not in (JOINING, INSTALLING), timeout):
                missing = entry.waiting_for
                self.registry.withdraw(entry.job_id, member.rank)
                self._persist(entry.job_id)
                self.cond.notify_all()
                raise Timeout(
                    f"job {entry.job_id}: timed out after {timeout:g} s waiting for "
                    f"rank{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))} to join"
                )
            if entry.state == FAILED:
                err = ControllerError(f"job {entry.job_id} could not be installed: {entry.error}")
                err.status = entry.error.status if entry.error is not None else 500
                raise err
            assert entry.job is not None
            return self.assignment(entry.job, member.rank)

    def _rejoin(
        self, job_id: int, member: Member, n: Any, timeout: float, cred: str | None
    ) -> dict[str, Any]:
        """A join of a running job by a restarted worker (``"rejoin": true``): once every
        rank joined again, the job is installed anew for the new members (a new key, its
        slots cleared) and each gets its assignment (docs/failures.md)."""
        checked = self._authorize(job_id, cred)
        with self.cond:
            self._confirm(job_id, checked)
            gen, complete = self.registry.rejoin(job_id, member, n)
            entry = self.registry.get(job_id)
        if complete:
            job, error = None, None
            try:
                members = [entry.reform.members[r] for r in sorted(entry.reform.members)]
                try:
                    self.controller.delete_job(job_id)
                except NotFound:
                    pass  # the switch lost it meanwhile
                job = self.controller.plan_job(
                    job_id, members, entry.slot_count, entry.n, entry.verifier
                )
                with self.cond:
                    if self.store is not None:
                        self.store.save_job(
                            job_id, READY, entry.n, entry.slot_count, entry.verifier,
                            members, set(), job,
                        )  # fmt: skip
                self.controller.restore_job(job)
                self.installs += 1
            except ControllerError as err:
                job, error = None, err
            with self.cond:
                self.registry.reformed(job_id, gen, job, error)
                if error is not None:  # the old job is gone: its id is free again
                    self._reform_errors[(job_id, gen)] = error
                    self.registry.install_failed(job_id, error)
                self._persist(job_id)
                self.cond.notify_all()

        def done() -> bool:
            return self.registry.reform_outcome(job_id, gen) is not None

        with self.cond:
            if not self._wait(done, timeout):
                e = self.registry.entries.get(job_id)
                missing = sorted(set(range(e.n)) - set(e.reform.members)) if e else []
                self.registry.reform_depart(job_id, member.rank, gen)
                raise Timeout(
                    f"job {job_id} is running: rank {member.rank} joined it again and waited "
                    f"{timeout:g} s for ranks {', '.join(map(str, missing))} to join again "
                    "(a restart of every worker re-forms the job)"
                )
            outcome = self.registry.reform_outcome(job_id, gen)
            if isinstance(outcome, ControllerError):
                raise self._reform_errors.get((job_id, gen), outcome)
            e = self.registry.get(job_id)
            assert e.job is not None
            return self.assignment(e.job, member.rank)

    def assignment(self, job: Job, rank: int) -> dict[str, Any]:
        return {
            "job_id": job.job_id,
            "job_index": job.job_index,
            "rank": rank,
            "n": job.n,
            "slot_base": job.slot_base,
            "slot_count": job.slot_count,
            "k": self.controller.k,
            "program": self.controller.kind,
            "switch_ip": self.switch_ip,
            "switch_mac": self.switch_mac,
            "agg_port": self.agg_port,
            "mgid": job.mgid,
            "job_key": job.key,
            "switch_epoch": self.switch_epoch,
            "timeouts": asdict(self.timeouts),
            "members": [m.to_dict() for m in job.members],
        }

    def barrier(self, job_id: int, body: dict[str, Any], cred: str | None = None) -> dict[str, Any]:
        name = body.get("name", "default")
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"bad barrier name {name!r}")
        if "rank" not in body:
            raise InvalidArgument("barrier without rank")
        timeout = self._timeout(body, self.join_timeout)
        checked = self._authorize(job_id, cred)
        with self.cond:
            self._confirm(job_id, checked)
            gen, released = self.registry.arrive(job_id, body["rank"], name)
            if released:
                self.cond.notify_all()
            elif not self._wait(lambda: self.registry.released(job_id, name, gen), timeout):
                entry = self.registry.entries.get(job_id)
                b = entry.barriers.get(name) if entry else None
                missing = sorted(
                    set(range(entry.n)) - b.arrived - entry.left if entry and b else set()
                )
                self.registry.depart(job_id, int(body["rank"]), name, gen)
                raise Timeout(
                    f"job {job_id}: timed out after {timeout:g} s at barrier {name!r} waiting "
                    f"for ranks {', '.join(map(str, missing))}"
                )
            return {"job_id": job_id, "name": name, "generation": gen, "released": True}

    def recover(self, job_id: int, body: dict[str, Any], cred: str | None = None) -> dict[str, Any]:
        """The recovery round after a failed call (docs/controller.md): every rank stops
        sending and asks; the last to arrive clears the job's slots; all resume from the
        largest next call any of them reported."""
        if "rank" not in body or "next_call" not in body:
            raise InvalidArgument("recover needs rank and next_call")
        timeout = self._timeout(body, self.join_timeout)
        checked = self._authorize(job_id, cred)
        with self.cond:
            self._confirm(job_id, checked)
            gen, complete = self.registry.recover_arrive(
                job_id, body["rank"], body["next_call"], body.get("done")
            )
        if complete:  # the switch may be away: wait for it as long as the rank asks
            self._clear_for_recovery(job_id, gen, self._switch_wait(body, timeout))

        def done() -> bool:
            return self.registry.recovery_outcome(job_id, gen) is not None

        with self.cond:
            if not self._wait(done, timeout):
                entry = self.registry.entries.get(job_id)
                missing = sorted(
                    set(range(entry.n)) - set(entry.recovery.arrived) - entry.left if entry else ()
                )
                self.registry.recover_depart(job_id, int(body["rank"]), gen)
                raise Timeout(
                    f"job {job_id}: timed out after {timeout:g} s in recovery waiting for "
                    f"ranks {', '.join(map(str, missing))}"
                )
            outcome = self.registry.recovery_outcome(job_id, gen)
            entry = self.registry.entries.get(job_id)
            done = entry.recovery.done_range.get(gen) if entry is not None else None
        if isinstance(outcome, ControllerError):
            raise outcome
        answer: dict[str, Any] = {
            "job_id": job_id,
            "generation": gen,
            "next_call": outcome,
            "cleared": True,
            "switch_epoch": self.switch_epoch,
        }
        if done is not None:  # the fewest and most calls the ranks had completed
            answer["min_done"], answer["max_done"] = done
        return answer

    @staticmethod
    def _switch_wait(body: dict[str, Any], timeout: float) -> float:
        """``switch_wait``: how long a recovery round may wait for a lost switch to come back
        (the host's give_up_after; default 0: fail at once, as before)."""
        w = body.get("switch_wait", 0)
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not 0 <= w <= MAX_WAIT:
            raise InvalidArgument(f"bad switch_wait {w!r} (want seconds in [0, {MAX_WAIT:g}])")
        return min(float(w), timeout)

    def _clear_for_recovery(self, job_id: int, generation: int, wait: float = 0.0) -> None:
        """Clear the job's slots for recovery round ``generation``. When the switch is away
        (the clear fails and the watcher is reconnecting), wait up to ``wait`` seconds for
        it to come back and be reconciled (its slots are then clean), and clear again."""
        error: ControllerError | None = None
        deadline = time.monotonic() + wait
        while True:
            seen = self.reconciliations
            try:
                self.controller.clear_slots(job_id)
                error = None
                break
            except ControllerError as err:
                error = err
            except Exception as err:  # noqa: BLE001 - the round must end for every rank
                error = ControllerError(f"clearing the slots of job {job_id} failed: {err}")
            left = deadline - time.monotonic()
            if self.watcher is None or left <= 0:
                break
            with self.cond:
                try:
                    self._wait(lambda n=seen: self.reconciliations != n, left)
                except Stopping as err:
                    error = err
                    break
        with self.cond:
            self.registry.recovered(job_id, generation, error)
            self.cond.notify_all()

    def leave(self, job_id: int, body: dict[str, Any], cred: str | None = None) -> dict[str, Any]:
        if "rank" not in body:
            raise InvalidArgument("leave without rank")
        checked = self._authorize(job_id, cred)
        with self.cond:
            self._confirm(job_id, checked)
            entry, last = self.registry.leave(job_id, body["rank"])
            self._persist(job_id)
            recovering = None if last else self.registry.recovery_after_leave(job_id)
            self.cond.notify_all()
        if recovering is not None:
            self._clear_for_recovery(job_id, recovering)
        if last:
            try:
                self.controller.delete_job(job_id)
            except NotFound:
                pass
        return {
            "job_id": job_id,
            "rank": int(body["rank"]),
            "deleted": last,
            "left": sorted(entry.left),
        }

    def list_jobs(self, cred: str | None = None) -> list[dict[str, Any]]:
        """Every job: the operator's view only (jobs, members and addresses of all tenants)."""
        with self.cond:
            self._operator(cred, "listing all jobs")
            return self.registry.to_list()

    def get_job(self, job_id: int, cred: str | None = None) -> dict[str, Any]:
        checked = self._authorize(job_id, cred)
        with self.cond:
            self._confirm(job_id, checked)
            return self.registry.get(job_id).to_dict()

    def slot_state(
        self, job_id: int, query: dict[str, list[str]], cred: str | None = None
    ) -> dict[str, Any]:
        """The switch's state of a job's slots, read over P4Runtime (Controller.slots)."""
        checked = self._authorize(job_id, cred)
        with self.cond:
            self._confirm(job_id, checked)
        try:
            first = int(query.get("first", ["0"])[0])
            count = int(query["count"][0]) if "count" in query else None
        except ValueError:
            raise InvalidArgument("first and count must be integers") from None
        if first < 0 or (count is not None and count < 1):
            raise InvalidArgument("first must be >= 0 and count >= 1")
        job, states = self.controller.slots(job_id, first, count)
        return {"job_id": job.job_id, "slots": [st.to_dict() for st in states]}

    def health(self) -> dict[str, Any]:
        with self.cond:
            ready = sum(1 for e in self.registry.entries.values() if e.state == READY)
            pending = len(self.registry.entries) - ready
        return {
            "status": "ok",
            "switch": {
                "grpc_addr": self.controller.conn.addr,
                "device_id": self.controller.conn.device_id,
                "primary": self.controller.conn.primary,
                "switch_ip": self.switch_ip,
                "agg_port": self.agg_port,
                # lost and not reconciled yet; reconciliations so far (docs/failures.md)
                "up": self.watcher is None or self.watcher.switch_up,
                "epoch": self.switch_epoch,
                # datagrams the switch's UDP adapter dropped from senders no port stands
                # for (None: the switch does not say); a worker's timeout names a rise
                "unknown_sender": self._unknown_senders(),
            },
            "jobs": {"ready": ready, "pending": pending},
        }

    def _unknown_senders(self) -> int | None:
        if self.watcher is not None and not self.watcher.switch_up:
            return None  # no read of a switch known to be down
        try:
            ports = self.controller.port_map()
        except ControllerError:
            return None
        return None if ports is None else ports.unknown_sender

    # ------------------------------------------------------------------ HTTP
    def dispatch(self, req: Handler, method: str) -> tuple[int, Any]:
        """One request (http_server.Handler calls this): (status, JSON body)."""
        path = req.path.split("?", 1)[0]
        cred = req.credential
        body = req.body() if method == "POST" else {}
        req.request_received()
        if path.rstrip("/") == "/v1/health" and method == "GET":
            return 200, self.health()
        if path.rstrip("/") == "/v1/jobs" and method == "GET":
            return 200, {"jobs": self.list_jobs(cred)}
        m = _JOB_PATH.match(path)
        if m is None:
            return 404, {"error": f"no such endpoint: {method} {path}"}
        job_id, op = int(m.group(1)), m.group(2)
        if op is None and method == "GET":
            return 200, self.get_job(job_id, cred)
        if op == "slots" and method == "GET":
            query = urllib.parse.parse_qs(req.path.partition("?")[2])
            return 200, self.slot_state(job_id, query, cred)
        if op is not None and op != "slots" and method == "POST":
            fn = getattr(self, op)
            if op == "leave":
                return 200, fn(job_id, body, cred)
            with self.gate.hold(req.client):  # join, barrier, recover may wait
                return 200, fn(job_id, body, cred)
        return 405, {"error": f"{method} is not allowed on {path}"}
