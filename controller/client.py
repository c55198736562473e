"""The worker's side of registration: a small HTTP client of the registration service
(service.py), with the standard library only.

    from p4reduce.controller.client import RegistrationClient

    reg = RegistrationClient("http://127.0.0.1:9560", secret=job_secret)
    a = reg.join(7, rank=0, n=4, ip="10.0.0.1", udp_port=5000, mac="02:00:00:00:00:01",
                 switch_port=1)           # blocks until all 4 joined; a.slot_base, a.k, ...
    reg.barrier(7, rank=0)                # blocks until all 4 arrived
    reg.leave(7, rank=0)

Every request carries ``Authorization: Bearer`` with the job's secret (``secret``; the first
join of a job sets it) or the operator token (``operator_token``, needed to list all jobs).
With an ``https://`` URL the service's certificate is checked against ``ca`` (default: the
system's CAs), and ``cert``/``key`` are presented when the service asks for a client
certificate (docs/controller.md, "Credentials", "TLS").

Failures raise ``RegistrationError`` with the service's one-line message and HTTP status
(None when the service could not be reached).
"""

from __future__ import annotations

import json
import ssl
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from typing import Any

DEFAULT_URL = "http://127.0.0.1:9560"


class RegistrationError(Exception):
    def __init__(self, message: str, status: int | None = None, broken: bool = False) -> None:
        super().__init__(message)
        self.status = status
        # the service took the request and the connection broke before its answer (the
        # service stopped or was killed meanwhile)
        self.broken = broken


@dataclass
class Timeouts:
    initial_ms: int
    max_ms: int
    retries: int


@dataclass
class Assignment:
    """What a worker needs to run its job, as the join answered it."""

    job_id: int
    job_index: int
    rank: int
    n: int
    slot_base: int
    slot_count: int
    k: int
    program: str
    switch_ip: str
    switch_mac: str | None
    agg_port: int
    mgid: int
    job_key: int  # carried in every packet (docs/protocol.md, "Job keys")
    timeouts: Timeouts
    members: list[dict[str, Any]] = field(default_factory=list)
    # the service's count of switch reconciliations when it answered (docs/failures.md)
    switch_epoch: int = 0

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Assignment:
        fields = {k: d[k] for k in cls.__dataclass_fields__ if k in d and k != "timeouts"}
        return cls(timeouts=Timeouts(**d["timeouts"]), **fields)


class RegistrationClient:
    def __init__(
        self,
        url: str = DEFAULT_URL,
        timeout: float = 120.0,
        *,
        secret: str | None = None,
        operator_token: str | None = None,
        ca: str | None = None,
        cert: str | None = None,
        key: str | None = None,
    ) -> None:
        """``timeout``: how long a join or barrier may wait for the other workers (seconds);
        ``secret``: the job's secret; ``operator_token``: the operator's (used when no
        secret is given, and always for ``jobs``); ``ca``, ``cert``, ``key``: TLS files."""
        self.url = url.rstrip("/")
        if "://" not in self.url:
            self.url = "http://" + self.url
        self.timeout = timeout
        self.secret = secret
        self.operator_token = operator_token
        self._ssl: ssl.SSLContext | None = None
        if self.url.startswith("https://"):
            try:
                self._ssl = ssl.create_default_context(cafile=ca)
                if cert is not None:
                    self._ssl.load_cert_chain(cert, key)
            except (OSError, ssl.SSLError) as err:
                raise RegistrationError(f"cannot load the TLS files: {err}") from None
        elif ca is not None or cert is not None:
            raise RegistrationError(f"TLS files given for {self.url}: use an https:// URL")

    def _call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None,
        wait: float,
        operator: bool = False,
    ) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        cred = (
            self.operator_token or self.secret if operator else self.secret or self.operator_token
        )
        if cred is not None:
            req.add_header("Authorization", f"Bearer {cred}")
        try:
            with urllib.request.urlopen(req, timeout=wait + 10.0, context=self._ssl) as resp:
                return json.loads(resp.read() or b"null")
        except urllib.error.HTTPError as err:
            try:
                message = json.loads(err.read()).get("error") or err.reason
            except (ValueError, AttributeError):
                message = str(err.reason)
            raise RegistrationError(str(message), err.code) from None
        except (urllib.error.URLError, OSError) as err:  # refused, reset, TLS, timeout
            reason = getattr(err, "reason", err)
            raise RegistrationError(
                f"registration service unreachable at {self.url}: {reason}",
                broken=isinstance(reason, (ConnectionResetError, BrokenPipeError)),
            ) from None

    def join(
        self,
        job_id: int,
        rank: int,
        n: int,
        ip: str,
        udp_port: int,
        mac: str,
        switch_port: int,
        slots: int | None = None,
        timeout: float | None = None,
        rejoin: bool = False,
    ) -> Assignment:
        """``rejoin``: this worker was restarted with all the others of a running job
        (torchrun --max-restarts): the job is re-formed once every rank joined again."""
        wait = self.timeout if timeout is None else timeout
        body: dict[str, Any] = {
            "rank": rank,
            "n": n,
            "ip": ip,
            "udp_port": udp_port,
            "mac": mac,
            "switch_port": switch_port,
            "timeout": wait,
        }
        if slots is not None:
            body["slots"] = slots
        if rejoin:
            body["rejoin"] = True
        deadline = time.monotonic() + wait
        restarting = False
        while True:
            try:
                answer = self._call("POST", f"/v1/jobs/{job_id}/join", body, wait)
                return Assignment.from_dict(answer)
            except RegistrationError as err:
                # the service went away while this join waited (a restart): the same join
                # again until it is back, which finds the pending registration it kept
                # (serve --state); a service refusing the first connection fails at once
                restarting = restarting or err.broken
                left = deadline - time.monotonic()
                if err.status is not None or not restarting or left <= 0:
                    raise
                time.sleep(min(0.2, left))
                body["timeout"] = max(left, 0.1)

    def barrier(
        self, job_id: int, rank: int, name: str = "default", timeout: float | None = None
    ) -> int:
        """Wait until every rank of the job reached barrier ``name``; returns its generation."""
        wait = self.timeout if timeout is None else timeout
        body = {"rank": rank, "name": name, "timeout": wait}
        return int(self._call("POST", f"/v1/jobs/{job_id}/barrier", body, wait)["generation"])

    def recover(self, job_id: int, rank: int, next_call: int, timeout: float | None = None) -> int:
        """The recovery round after a failed call: wait until every rank of the job asked and
        the switch cleared the job's slots; returns the call number all ranks go on from."""
        return int(self.recover_round(job_id, rank, next_call, timeout=timeout)["next_call"])

    def recover_round(
        self,
        job_id: int,
        rank: int,
        next_call: int,
        done: int | None = None,
        timeout: float | None = None,
        switch_wait: float = 0.0,
    ) -> dict[str, Any]:
        """``recover`` with the whole answer: ``next_call``, and with ``done`` (the calls
        this rank completed) ``min_done`` and ``max_done`` over every rank of the round.
        ``switch_wait``: how long the round may wait for a switch that went away to be
        back with the job (controller/reconcile.py) before it fails."""
        wait = self.timeout if timeout is None else timeout
        body: dict[str, Any] = {"rank": rank, "next_call": next_call, "timeout": wait}
        if done is not None:
            body["done"] = done
        if switch_wait > 0:
            body["switch_wait"] = switch_wait
        return self._call("POST", f"/v1/jobs/{job_id}/recover", body, wait)

    def leave(self, job_id: int, rank: int) -> dict[str, Any]:
        return self._call("POST", f"/v1/jobs/{job_id}/leave", {"rank": rank}, 30.0)

    def jobs(self) -> list[dict[str, Any]]:
        """Every job the service knows: needs the operator token."""
        return self._call("GET", "/v1/jobs", None, 30.0, operator=True)["jobs"]

    def job(self, job_id: int) -> dict[str, Any]:
        return self._call("GET", f"/v1/jobs/{job_id}", None, 30.0)

    def slot_state(self, job_id: int, first: int = 0, count: int = 1) -> list[dict[str, Any]]:
        """The switch's state of slots first .. first+count-1 of the job (which ranks are in)."""
        path = f"/v1/jobs/{job_id}/slots?first={first}&count={count}"
        return self._call("GET", path, None, 30.0)["slots"]

    def health(self) -> dict[str, Any]:
        return self._call("GET", "/v1/health", None, 30.0)
