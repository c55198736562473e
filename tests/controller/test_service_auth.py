"""Credentials and limits of the registration service (docs/controller.md, "Credentials",
"Limits"): every request about a job without a credential (401), with a wrong one (403) and
with the right one; the wrong ones change nothing, at the service or on the switch. Then a
flood against each limit, each answered with its own status and one line, after which the
service still serves the legitimate job."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from ctl_helpers import member
from p4reduce.controller import (
    Controller,
    Limits,
    RegistrationClient,
    RegistrationError,
    RegistrationService,
    credentials,
)

SECRET_A = "secret-of-tenant-a-0123456789"
SECRET_B = "secret-of-tenant-b-9876543210"
OPERATOR = "operator-token-0123456789abcdef"


def call(
    svc: RegistrationService, method: str, path: str, body: Any = None, cred: str | None = None
) -> tuple[int, dict[str, Any], dict[str, str]]:
    """(status, JSON body, headers) of one raw request."""
    data = (
        None if body is None else (body if isinstance(body, bytes) else json.dumps(body).encode())
    )
    req = urllib.request.Request(svc.url + path, data=data, method=method)
    if cred is not None:
        req.add_header("Authorization", f"Bearer {cred}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read()), dict(r.headers)
    except urllib.error.HTTPError as err:
        raw = err.read()
        assert raw.count(b"\n") == 1, raw  # one line
        return err.code, json.loads(raw), dict(err.headers)


def state(svc: RegistrationService, ctl: Controller) -> Any:
    """Everything a request could change: the registry and the switch's jobs and slots."""
    with svc.cond:
        reg = json.dumps(svc.registry.to_list(), sort_keys=True)
    jobs = [j.to_dict_with_key() for j in ctl.refresh().sorted()]
    slots = [[s.to_dict() for s in ctl.slots(j["job_id"], 0, j["slot_count"])[1]] for j in jobs]
    return reg, jobs, slots


@pytest.fixture
def svc(ctl: Controller) -> Iterator[RegistrationService]:
    s = RegistrationService(
        ctl, port=0, default_slots=4, join_timeout=10.0, operator_token=OPERATOR
    )
    s.start()
    try:
        yield s
    finally:
        s.stop()


def join_all(svc: RegistrationService, job: int, n: int, secret: str, base: int = 5000) -> None:
    c = RegistrationClient(svc.url, timeout=10, secret=secret)

    def one(r: int) -> Any:
        m = member(r, base + r)
        return c.join(job, r, n, m.ip, m.udp_port, m.mac, m.switch_port)

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(one, range(n)))


def test_every_request_without_wrong_and_right_credentials(
    svc: RegistrationService, ctl: Controller
) -> None:
    join_all(svc, 7, 2, SECRET_A)  # tenant A
    join_all(svc, 8, 2, SECRET_B, base=6000)  # tenant B
    # a job still forming: rank 0 of job 9 waits for rank 1
    forming = RegistrationClient(svc.url, timeout=10, secret=SECRET_A)
    m0, m1 = member(0, 7000), member(1, 7001)
    with ThreadPoolExecutor(1) as pool:
        waiting = pool.submit(forming.join, 9, 0, 2, m0.ip, m0.udp_port, m0.mac, m0.switch_port)
        deadline = time.monotonic() + 5
        while 9 not in svc.registry.entries and time.monotonic() < deadline:
            time.sleep(0.01)
        join9 = {**m1.to_dict(), "n": 2, "timeout": 5}
        requests = [
            ("POST", "/v1/jobs/9/join", join9),
            ("POST", "/v1/jobs/7/barrier", {"rank": 0, "timeout": 5}),
            ("POST", "/v1/jobs/7/recover", {"rank": 0, "next_call": 3, "timeout": 5}),
            ("POST", "/v1/jobs/7/leave", {"rank": 0}),
            ("GET", "/v1/jobs/7", None),
            ("GET", "/v1/jobs/7/slots?first=0&count=2", None),
        ]
        before = state(svc, ctl)
        for method, path, body in requests:
            status, answer, headers = call(svc, method, path, body)
            assert status == 401, (path, answer)
            assert "no credentials" in answer["error"] and headers["WWW-Authenticate"]
            for wrong in (SECRET_B, SECRET_A + "x", "x" * 40, OPERATOR[:-1]):
                status, answer, _ = call(svc, method, path, body, wrong)
                assert status == 403, (path, wrong, answer)
                assert "wrong credentials" in answer["error"], answer
            assert state(svc, ctl) == before, f"{method} {path} with a wrong credential"
        # listing every job is the operator's alone
        assert call(svc, "GET", "/v1/jobs")[0] == 401
        assert call(svc, "GET", "/v1/jobs", cred=SECRET_A)[0] == 403
        status, listing, _ = call(svc, "GET", "/v1/jobs", cred=OPERATOR)
        assert status == 200 and [j["job_id"] for j in listing["jobs"]] == [7, 8, 9]
        # an unknown job with a credential is 404; health needs nothing
        assert call(svc, "GET", "/v1/jobs/99", cred=SECRET_A)[0] == 404
        assert call(svc, "GET", "/v1/health")[0] == 200
        assert state(svc, ctl) == before
        # the right credential: every request goes through
        assert call(svc, "POST", "/v1/jobs/9/join", join9, SECRET_A)[0] == 200
        assert waiting.result(10).job_id == 9
    assert call(svc, "GET", "/v1/jobs/7", cred=SECRET_A)[1]["joined"] == [0, 1]
    assert call(svc, "GET", "/v1/jobs/7/slots?first=0&count=2", cred=SECRET_A)[0] == 200
    with ThreadPoolExecutor(2) as pool:
        got = list(
            pool.map(
                lambda r: call(svc, "POST", "/v1/jobs/7/barrier", {"rank": r}, SECRET_A)[0],
                range(2),
            )
        )
    assert got == [200, 200]
    # the operator may act on any job; tenant A's leave deletes only its own job
    assert call(svc, "POST", "/v1/jobs/8/leave", {"rank": 0}, OPERATOR)[0] == 200
    assert call(svc, "POST", "/v1/jobs/7/leave", {"rank": 0}, SECRET_A)[0] == 200
    assert call(svc, "POST", "/v1/jobs/7/leave", {"rank": 1}, SECRET_A)[1]["deleted"] is True
    assert [j.job_id for j in ctl.refresh().sorted()] == [8, 9]


def test_secrets_of_a_new_job(svc: RegistrationService) -> None:
    body = {**member(0).to_dict(), "n": 1}
    status, answer, _ = call(svc, "POST", "/v1/jobs/5/join", body, "short")
    assert status == 400 and "job secret of 5 characters" in answer["error"]
    status, answer, _ = call(svc, "POST", "/v1/jobs/5/join", body, OPERATOR)
    assert status == 400 and "the operator token is not a job secret" in answer["error"]
    assert 5 not in svc.registry.entries
    assert call(svc, "POST", "/v1/jobs/5/join", body, SECRET_A)[0] == 200
    # the secret's verifier is on the switch with the job's entries; never the secret
    (job,) = svc.controller.refresh().sorted()
    assert credentials.matches(SECRET_A, job.verifier)
    assert SECRET_A.encode() not in (job.verifier or b"")
    assert call(svc, "POST", "/v1/jobs/5/leave", {"rank": 0}, SECRET_B)[0] == 403
    assert call(svc, "POST", "/v1/jobs/5/leave", {"rank": 0}, SECRET_A)[0] == 200


def test_credential_units(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    v = credentials.verifier(SECRET_A)
    assert credentials.matches(SECRET_A, v) and not credentials.matches(SECRET_B, v)
    assert not credentials.matches(None, v) and not credentials.matches(SECRET_A, None)
    assert not credentials.matches(SECRET_A, b"garbage")
    assert credentials.verifier(SECRET_A) != v  # salted
    assert credentials.bearer("Bearer  abc ") == "abc" and credentials.bearer("Basic abc") is None
    f = tmp_path / "token"
    f.write_text(OPERATOR + "\n")
    assert credentials.from_file_or_env(f, "P4R_TEST_TOKEN", "operator token") == OPERATOR
    monkeypatch.setenv("P4R_TEST_TOKEN", SECRET_B)
    assert credentials.from_file_or_env(None, "P4R_TEST_TOKEN", "operator token") == SECRET_B
    monkeypatch.delenv("P4R_TEST_TOKEN")
    assert credentials.from_file_or_env(None, "P4R_TEST_TOKEN", "operator token") is None
    with pytest.raises(Exception, match=r"cannot read the operator token file .*missing"):
        credentials.from_file_or_env(tmp_path / "missing", "X", "operator token")


def call_from(
    src: str, svc: RegistrationService, method: str, path: str, body: Any, cred: str | None
) -> tuple[int, dict[str, Any]]:
    """One request from source address ``src`` (another loopback address: another client)."""
    conn = http.client.HTTPConnection("127.0.0.1", svc.port, timeout=10, source_address=(src, 0))
    try:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"}
        if cred is not None:
            headers["Authorization"] = f"Bearer {cred}"
        conn.request(method, path, data, headers)
        r = conn.getresponse()
        raw = r.read()
        assert raw.count(b"\n") == 1, raw
        return r.status, json.loads(raw)
    finally:
        conn.close()


@pytest.fixture
def tight(ctl: Controller) -> Iterator[RegistrationService]:
    limits = Limits(
        max_body=512, max_waiting_per_client=3, max_jobs=3, max_connections=16, request_timeout=3.0
    )
    s = RegistrationService(ctl, port=0, default_slots=4, join_timeout=10.0, limits=limits)
    s.start()
    try:
        yield s
    finally:
        s.stop()


def _wait(cond: Any, timeout: float = 10.0, what: Any = None) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"condition not reached ({what and what()})"
        time.sleep(0.01)


def test_flood_against_the_limits_then_the_job_still_runs(tight: RegistrationService) -> None:
    """Tenant A (127.0.0.1) forms job 7 while other clients (127.0.0.2, .3, .4) flood the
    service past every limit; each flood gets its own status, and job 7 still forms, runs a
    barrier and leaves."""
    svc = tight
    c = RegistrationClient(svc.url, timeout=20, secret=SECRET_A)
    m = [member(r) for r in range(3)]
    with ThreadPoolExecutor(16) as pool:
        joins = [
            pool.submit(c.join, 7, r, 3, m[r].ip, m[r].udp_port, m[r].mac, m[r].switch_port)
            for r in range(2)
        ]
        _wait(lambda: svc.gate.waiting("127.0.0.1") == 2)

        # body size: 413, before anything is read into memory or parsed
        big = {"rank": 0, "name": "x" * 1000}
        status, answer = call_from("127.0.0.2", svc, "POST", "/v1/jobs/7/barrier", big, SECRET_B)
        size = len(json.dumps(big))
        assert (status, answer) == (
            413,
            {"error": f"request body of {size} bytes: the limit is 512"},
        )

        # waiting requests per client: 10 joins of a job that never forms; at most 3 wait
        # (until their 5 s run out: 504), the others get 429 at once
        def flood_join(i: int) -> tuple[int, dict[str, Any]]:
            body = {**member(i, 9000 + i).to_dict(), "n": 32, "timeout": 5}
            return call_from("127.0.0.2", svc, "POST", "/v1/jobs/50/join", body, SECRET_B)

        floods = [pool.submit(flood_join, i) for i in range(10)]
        got = [f.result(15) for f in floods]
        too_many = [a for st, a in got if st == 429]
        assert len(too_many) >= 4 and {st for st, _ in got} == {429, 504}, got
        assert all(
            a["error"].startswith(
                "client 127.0.0.2 already has 3 requests waiting (the limit is 3)"
            )
            for a in too_many
        )

        # job count: a third client fills the third job; every further new job gets 507
        assert set(svc.registry.entries) == {7}  # the waits of job 50 gave up
        held = [
            pool.submit(
                call_from, "127.0.0.3", svc, "POST", f"/v1/jobs/{job}/join",
                {**member(0, 8000 + job).to_dict(), "n": 2, "timeout": 3}, SECRET_B,
            )
            for job in (60, 61)
        ]  # fmt: skip
        _wait(lambda: len(svc.registry.entries) == 3)
        for job in range(62, 72):
            body = {**member(0, 8000 + job).to_dict(), "n": 2, "timeout": 1}
            status, answer = call_from(
                "127.0.0.3", svc, "POST", f"/v1/jobs/{job}/join", body, SECRET_B
            )
            assert status == 507, answer
            assert "already tracks 3 jobs (the limit is 3)" in answer["error"]
        assert [h.result(10)[0] for h in held] == [504, 504]

        # connections: idle sockets hold every request thread; one more request gets 503
        idle = [
            socket.create_connection(("127.0.0.1", svc.port), 5, source_address=("127.0.0.4", 0))
            for _ in range(16)
        ]
        try:
            _wait(
                lambda: svc.httpd is not None and svc.httpd._active >= 16,
                what=lambda: svc.httpd._active,
            )
            status, answer = call_from("127.0.0.4", svc, "GET", "/v1/health", b"", None)
            assert status == 503 and "16 requests in progress" in answer["error"]
        finally:
            for sock in idle:
                sock.close()
        _wait(lambda: call_from("127.0.0.1", svc, "GET", "/v1/health", b"", None)[0] == 200)

        # tenant A's job was never touched: it forms, passes a barrier, leaves
        assert set(svc.registry.entries) == {7}
        last = c.join(7, 2, 3, m[2].ip, m[2].udp_port, m[2].mac, m[2].switch_port)
        assert {f.result(10).slot_base for f in joins} == {last.slot_base}
        assert list(pool.map(lambda r: c.barrier(7, r), range(3))) == [0, 0, 0]
        assert [c.leave(7, r)["deleted"] for r in range(3)] == [False, False, True]
    assert svc.gate.waiting("127.0.0.1") == svc.gate.waiting("127.0.0.2") == 0


def test_slow_client_cannot_hold_a_thread(tight: RegistrationService) -> None:
    """A client that trickles its request (a byte a second, never a whole request) is cut off
    request_timeout (3 s) after it connected."""
    s = socket.create_connection(("127.0.0.1", tight.port), timeout=10)
    try:
        t0 = time.monotonic()
        data = b""
        for byte in b"POST /v1/jobs/7/join HTTP/1.1\r\nContent-Length: 100\r\n\r\n{":
            try:
                s.sendall(bytes([byte]))
            except OSError:
                break  # cut off
            s.settimeout(1.0)
            try:
                data = s.recv(4096)
            except TimeoutError:
                continue
            break  # answered or closed
        assert 2.5 < time.monotonic() - t0 < 8
        if data:
            assert b" 400 " in data.split(b"\r\n", 1)[0]
    finally:
        s.close()


def test_client_error_statuses_are_named(svc: RegistrationService) -> None:
    c = RegistrationClient(svc.url, timeout=5)
    with pytest.raises(RegistrationError, match="no credentials") as e:
        c.job(7)
    assert e.value.status == 401
    with pytest.raises(RegistrationError, match="listing all jobs: wrong credentials") as e:
        RegistrationClient(svc.url, timeout=5, secret=SECRET_A).jobs()
    assert e.value.status == 403
