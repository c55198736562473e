"""The registration service over HTTP, with the worker-side client, on an embedded switch."""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from ctl_helpers import SWITCH_IP, SWITCH_MAC, Switch, member, members
from p4reduce.controller import (
    Controller,
    InvalidArgument,
    RegistrationClient,
    RegistrationError,
    RegistrationService,
    Timeouts,
    credentials,
    program,
)
from p4reduce.controller import slots as slots_mod
from p4reduce.controller.p4rt import MODIFY

SECRET = "the-secret-of-the-test-jobs"
OPERATOR = "the-operator-token-of-the-tests"


@pytest.fixture
def service(ctl: Controller) -> Iterator[RegistrationService]:
    svc = RegistrationService(
        ctl,
        port=0,
        default_slots=16,
        join_timeout=10.0,
        timeouts=Timeouts(50, 800, 5),
        operator_token=OPERATOR,
    )
    svc.start()
    try:
        yield svc
    finally:
        svc.stop()


@pytest.fixture
def client(service: RegistrationService) -> RegistrationClient:
    return RegistrationClient(service.url, timeout=10.0, secret=SECRET, operator_token=OPERATOR)


def _join(client: RegistrationClient, job_id: int, rank: int, n: int, **kw: Any) -> Any:
    m = member(rank)
    return client.join(job_id, rank, n, m.ip, m.udp_port, m.mac, m.switch_port, **kw)


def test_concurrent_joins_install_once(
    service: RegistrationService, client: RegistrationClient, ctl: Controller
) -> None:
    n = 6
    with ThreadPoolExecutor(n) as pool:
        got = list(pool.map(lambda r: _join(client, 7, r, n), range(n)))
    assert service.installs == 1
    assert [a.rank for a in got] == list(range(n))
    assert {(a.slot_base, a.slot_count, a.job_index, a.mgid) for a in got} == {(0, 16, 1, 257)}
    a = got[3]
    assert (a.k, a.program, a.n, a.switch_ip, a.switch_mac, a.agg_port) == (
        64,
        "dense",
        n,
        SWITCH_IP,
        SWITCH_MAC,
        48864,
    )
    assert (a.timeouts.initial_ms, a.timeouts.max_ms, a.timeouts.retries) == (50, 800, 5)
    assert [m["rank"] for m in a.members] == list(range(n))
    (job,) = ctl.list_jobs()
    assert job.job_id == 7 and job.members == members(n)
    listing = client.jobs()
    assert listing[0]["state"] == "ready" and listing[0]["job"]["slot_count"] == 16
    assert client.job(7)["joined"] == list(range(n))
    # a second job gets its own range
    with ThreadPoolExecutor(2) as pool:
        two = list(pool.map(lambda r: _join(client, 8, r, 2, slots=4), range(2)))
    assert {(x.slot_base, x.slot_count, x.job_index) for x in two} == {(16, 4, 2)}


def test_join_errors(service: RegistrationService, client: RegistrationClient) -> None:
    pending = threading.Thread(
        target=lambda: pytest.raises(RegistrationError, _join, client, 7, 0, 2, timeout=5)
    )
    pending.start()
    _wait_for(lambda: client.jobs() and client.jobs()[0]["joined"] == [0])
    m = member(0, udp_base=6000)  # rank 0 again, from another address: a second worker
    with pytest.raises(RegistrationError, match="rank 0 already joined job 7") as e:
        client.join(7, 0, 2, m.ip, m.udp_port, m.mac, m.switch_port, timeout=1)
    assert e.value.status == 409
    with pytest.raises(RegistrationError, match="job 7 has n = 2, not 3") as e:
        _join(client, 7, 1, 3, timeout=1)
    assert e.value.status == 409
    with pytest.raises(RegistrationError, match="bad IPv4 address of rank 1") as e:
        client.join(7, 1, 2, "10.0.0.999", 5001, "02:00:00:00:00:02", 2, timeout=1)
    assert e.value.status == 400
    with pytest.raises(RegistrationError, match="bad MAC address of rank 1"):
        client.join(7, 1, 2, "10.0.0.2", 5001, "nope", 2, timeout=1)
    with pytest.raises(RegistrationError, match="rank 5 is outside 0..1"):
        _join(client, 7, 5, 2, timeout=1)
    service.stop()  # the waiting join is answered (503) and its thread ends
    pending.join(5)
    assert not pending.is_alive()


def test_join_timeout_withdraws(client: RegistrationClient, service: RegistrationService) -> None:
    t0 = time.monotonic()
    with pytest.raises(
        RegistrationError, match=r"job 7: timed out after 0.3 s waiting for ranks 1, 2 to join"
    ) as e:
        _join(client, 7, 0, 3, timeout=0.3)
    assert e.value.status == 504 and time.monotonic() - t0 < 3
    assert client.jobs() == []  # the rank was withdrawn: joining again works
    with ThreadPoolExecutor(3) as pool:
        got = list(pool.map(lambda r: _join(client, 7, r, 3), range(3)))
    assert len({a.slot_base for a in got}) == 1 and service.installs == 1


def test_install_failure_reaches_every_waiter(client: RegistrationClient, ctl: Controller) -> None:
    ctl.create_job(7, [member(0, 9000)], 8)  # created behind the service's back
    with ThreadPoolExecutor(2) as pool:
        futures = [pool.submit(_join, client, 7, r, 2) for r in range(2)]
        errors = []
        for f in futures:
            with pytest.raises(RegistrationError) as e:
                f.result()
            errors.append((e.value.status, str(e.value)))
    assert all(status == 409 and "job 7 exists already" in msg for status, msg in errors)
    assert client.jobs() == []


def test_barrier(client: RegistrationClient) -> None:
    with ThreadPoolExecutor(3) as pool:
        list(pool.map(lambda r: _join(client, 7, r, 3), range(3)))
    with pytest.raises(RegistrationError, match="unknown job 8") as e:
        client.barrier(8, 0)
    assert e.value.status == 404
    released: list[int] = []

    def arrive(rank: int) -> int:
        gen = client.barrier(7, rank, "epoch")
        released.append(rank)
        return gen

    with ThreadPoolExecutor(3) as pool:
        first = [pool.submit(arrive, r) for r in (0, 1)]
        _wait_for(lambda: _arrived(client, 7, "epoch") == 2)
        time.sleep(0.2)
        assert released == []  # nobody passes before the last rank arrives
        last = pool.submit(arrive, 2)
        assert [f.result(5) for f in first + [last]] == [0, 0, 0]
    assert sorted(released) == [0, 1, 2]
    with pytest.raises(
        RegistrationError, match=r"timed out after 0.2 s at barrier 'epoch' waiting for ranks 1, 2"
    ) as e:
        client.barrier(7, 0, "epoch", timeout=0.2)
    assert e.value.status == 504
    # the timed-out arrival was taken back: a full round passes with generation 1
    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(lambda r: client.barrier(7, r, "epoch"), range(3))) == [1, 1, 1]


def _arrived(client: RegistrationClient, job_id: int, name: str) -> int:
    barrier = client.job(job_id)["barriers"].get(name)
    return len(barrier["arrived"]) if barrier else 0


def test_recovery_clears_the_slots(client: RegistrationClient, ctl: Controller) -> None:
    """POST /v1/jobs/{id}/recover: nobody passes before every rank asked; then the job's
    slots are zero and every rank gets the largest next call; a lone rank times out naming
    the others (504)."""
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda r: _join(client, 7, r, 2, slots=4), range(2)))
    job = ctl.get_job(7)
    bitmaps = ctl.schema.register(program.BITMAPS).id
    ctl.conn.write([(MODIFY, slots_mod._cell(bitmaps, job.slot_base + 1, b"\x01"))], "dirty")
    assert ctl.slots(7, 1, 1)[1][0].to_dict()["sets"][0]["ranks"] == [0]
    with ThreadPoolExecutor(2) as pool:
        first = pool.submit(client.recover, 7, 0, 3)
        _wait_for(lambda: client.job(7)["recovery"]["arrived"] == [0])
        assert ctl.slots(7, 1, 1)[1][0].to_dict()["sets"][0]["ranks"] == [0]  # not yet
        assert client.recover(7, 1, 8) == 8
        assert first.result(5) == 8
    assert ctl.slots(7, 1, 1)[1][0].to_dict()["sets"][0]["ranks"] == []
    with pytest.raises(
        RegistrationError, match=r"timed out after 0.2 s in recovery waiting for ranks 1"
    ) as e:
        client.recover(7, 0, 8, timeout=0.2)
    assert e.value.status == 504
    with pytest.raises(RegistrationError, match="recover needs rank and next_call") as e:
        client._call("POST", "/v1/jobs/7/recover", {"rank": 0}, 5)
    assert e.value.status == 400


def test_leave_deletes_job(client: RegistrationClient, ctl: Controller, switch: Switch) -> None:
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda r: _join(client, 7, r, 2), range(2)))
    assert client.leave(7, 1) == {"job_id": 7, "rank": 1, "deleted": False, "left": [1]}
    with pytest.raises(RegistrationError, match="rank 1 has already left job 7"):
        client.leave(7, 1)
    assert client.barrier(7, 0, timeout=2) == 0  # only rank 0 remains
    assert client.leave(7, 0)["deleted"] is True
    assert client.jobs() == [] and ctl.list_jobs() == []
    with Controller(switch.addr, arbitrate=False) as fresh:
        assert fresh.list_jobs() == []
    with pytest.raises(RegistrationError, match="unknown job 7") as e:
        client.leave(7, 0)
    assert e.value.status == 404


def test_adopts_jobs_on_switch(ctl: Controller) -> None:
    """Jobs already on the switch are adopted with their secret's verifier (the workers
    entries' metadata): the secret works; a job created without one is the operator's."""
    ctl.create_job(9, members(2), 8, verifier=credentials.verifier(SECRET))
    ctl.create_job(10, members(2, udp_base=6000), 8)
    with RegistrationService(ctl, port=0, operator_token=OPERATOR) as svc:
        c = RegistrationClient(svc.url, secret=SECRET)
        op = RegistrationClient(svc.url, operator_token=OPERATOR)
        assert [j["state"] for j in op.jobs()] == ["ready", "ready"]
        with pytest.raises(RegistrationError, match="rank 0 already joined job 9"):
            _join(c, 9, 0, 2)
        with pytest.raises(RegistrationError, match="job 10 has no secret") as e:
            c.leave(10, 0)
        assert e.value.status == 403
        assert c.leave(9, 0)["deleted"] is False
        assert c.leave(9, 1)["deleted"] is True
        assert op.leave(10, 0)["deleted"] is False
        assert op.leave(10, 1)["deleted"] is True
        assert ctl.list_jobs() == []


def test_http_errors_and_health(service: RegistrationService) -> None:
    def call(method: str, path: str, body: bytes | None = None) -> tuple[int, Any]:
        req = urllib.request.Request(service.url + path, data=body, method=method)
        req.add_header("Authorization", f"Bearer {SECRET}")
        try:
            with urllib.request.urlopen(req, timeout=5) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    status, body = call("GET", "/v1/health")
    assert status == 200 and body["status"] == "ok" and body["switch"]["primary"] is True
    assert call("POST", "/v1/jobs/7/join", b"{not json")[0] == 400
    assert call("POST", "/v1/jobs/7/join", b"[1]") == (
        400,
        {"error": "request body is not a JSON object"},
    )
    assert call("POST", "/v1/jobs/7/join", b'{"rank": 0}') == (
        400,
        {"error": "join without n (the job's worker count)"},
    )
    assert (
        call(
            "POST",
            "/v1/jobs/7/join",
            json.dumps({**member(0).to_dict(), "n": 1, "timeout": -1}).encode(),
        )[0]
        == 400
    )
    assert call("GET", "/v1/nothing")[0] == 404
    assert call("GET", "/v1/jobs/7/join")[0] == 405
    assert call("GET", "/v1/jobs/7") == (404, {"error": "unknown job 7"})
    assert call(
        "POST", "/v1/jobs/0/join", json.dumps({**member(0).to_dict(), "n": 1}).encode()
    ) == (
        400,
        {"error": "job id 0 is outside 1..65535"},
    )


def test_service_needs_switch_address(switch: Switch, programs: Any) -> None:
    with Controller(switch.addr) as c:
        c.push(programs["dense"])
        with pytest.raises(InvalidArgument, match="the switch has no IPv4 address"):
            RegistrationService(c, port=0).start()


def test_client_unreachable() -> None:
    c = RegistrationClient("127.0.0.1:1", timeout=1)
    with pytest.raises(
        RegistrationError, match="registration service unreachable at http://127.0.0.1:1"
    ) as e:
        c.jobs()
    assert e.value.status is None
    assert program.AGG_PORT == 48864


def _wait_for(cond: Any, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.02)
    raise AssertionError("condition not reached")


def test_slot_state_endpoint(service: RegistrationService, client: RegistrationClient) -> None:
    """GET /v1/jobs/{id}/slots reads the switch's slot state for a stuck-call diagnosis."""
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda r: _join(client, 9, r, 2, slots=4), range(2)))
    (slot,) = client.slot_state(9, first=2, count=1)
    assert slot["slot"] == 2 and [c["set"] for c in slot["sets"]] == [0, 1]
    assert all(c["ranks"] == [] and c["missing"] == [0, 1] for c in slot["sets"])
    assert len(client.slot_state(9, first=0, count=4)) == 4
    with pytest.raises(RegistrationError) as err:
        client.slot_state(10)
    assert err.value.status == 404
    req = urllib.request.Request(service.url + "/v1/jobs/9/slots?first=x")
    req.add_header("Authorization", f"Bearer {SECRET}")
    with pytest.raises(urllib.error.HTTPError) as http:
        urllib.request.urlopen(req, timeout=5)
    assert http.value.code == 400
