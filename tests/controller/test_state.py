"""Durable controller state (controller/state.py) and reconciliation (controller/reconcile.py):
a restarted service resumes from its SQLite file, a restarted switch gets its pipeline and
jobs back exactly as before, and a foreign database or pipeline is refused in one line."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from ctl_helpers import Switch, member
from p4reduce.controller import (
    Controller,
    RegistrationClient,
    RegistrationError,
    RegistrationService,
)
from p4reduce.controller.cli import main as ctl_main
from p4reduce.controller.jobs import read_jobs
from p4reduce.controller.state import StateError, StateStore
from p4reduce.switch.p4runtime import Device, P4RuntimeServer

SECRET = "the-secret-of-the-state-tests"


def _join(url: str, job_id: int, rank: int, n: int, timeout: float = 20.0) -> Any:
    m = member(rank)
    c = RegistrationClient(url, timeout=timeout, secret=SECRET)
    return c.join(job_id, rank, n, m.ip, m.udp_port, m.mac, m.switch_port)


def _until(cond: Callable[[], Any], timeout: float, what: str) -> float:
    t0 = time.monotonic()
    while not cond():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)
    return time.monotonic() - t0


def _restart(switch: Switch) -> None:
    """The switch process dies and starts again on the same address: empty, no pipeline."""
    assert switch.server is not None
    switch.server.stop()
    switch.device = Device(1)
    switch.server = P4RuntimeServer(switch.device, switch.addr)
    switch.server.start()


def test_store_round_trip_and_foreign_switch(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    store = StateStore(db)
    store.bind_switch("127.0.0.1:9559", 1)
    store.save_pipeline(b"info", b"config")
    store.save_job(7, "joining", 2, 16, b"v", [member(0)], set(), None)
    store.close()
    again = StateStore(db)
    again.bind_switch("127.0.0.1:9559", 1)  # the same switch: fine
    (row,) = again.jobs()
    assert (row.job_id, row.state, row.n, row.slot_count, row.verifier) == (
        7,
        "joining",
        2,
        16,
        b"v",
    )
    assert row.members == [member(0)] and row.job is None
    assert again.pipeline() is not None and again.pipeline().device_config == b"config"
    with pytest.raises(StateError, match="belongs to the switch at 127.0.0.1:9559 device 1"):
        again.bind_switch("127.0.0.1:9600", 1)
    again.close()
    (tmp_path / "junk.db").write_bytes(b"not a database" * 100)
    with pytest.raises(StateError, match="junk.db"):
        StateStore(tmp_path / "junk.db")


def test_service_restart_resumes_jobs_and_pending_joins(
    ctl: Controller, switch: Switch, tmp_path: Path
) -> None:
    db = tmp_path / "state.db"
    svc = RegistrationService(ctl, port=0, default_slots=16, store=StateStore(db))
    svc.start()
    try:
        with ThreadPoolExecutor(2) as pool:
            a0, a1 = pool.map(lambda r: _join(svc.url, 7, r, 2), range(2))
        pending = ThreadPoolExecutor(1).submit(_join, svc.url, 8, 0, 2, 3.0)
        _until(lambda: 8 in svc.registry.entries, 10, "job 8 pending")
    finally:
        svc.stop()
    with pytest.raises(Exception):  # noqa: B017 - the join's wait ended with the service
        pending.result(10)
    ctl.close()
    # a new service process: a new connection, the same file
    ctl2 = Controller(switch.addr).connect()
    svc2 = RegistrationService(ctl2, port=0, default_slots=16, store=StateStore(db))
    svc2.start()
    try:
        assert svc2.registry.entries[7].state == "ready"
        assert svc2.registry.entries[7].job.key == a0.job_key == a1.job_key
        assert sorted(svc2.registry.entries[8].members) == [0]  # the pending join survived
        # the job's secret still works, and the pending job completes with rank 1 alone
        got = _join(svc2.url, 8, 1, 2)
        assert got.n == 2 and got.slot_base == 16
        # a rank whose join answer the restart cut off asks again and gets its assignment
        again = _join(svc2.url, 7, 1, 2)
        assert (again.job_key, again.slot_base) == (a1.job_key, a1.slot_base)
    finally:
        svc2.stop()
        ctl2.close()


def test_switch_restart_reinstalls_jobs_as_before(
    ctl: Controller, switch: Switch, tmp_path: Path
) -> None:
    svc = RegistrationService(ctl, port=0, default_slots=16, store=StateStore(tmp_path / "s.db"))
    svc.start()
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda r: _join(svc.url, 7, r, 2), range(2)))
        before = read_jobs(ctl.conn, ctl.schema).get(7)
        epoch = svc.switch_epoch
        _restart(switch)
        try:
            took = _until(lambda: svc.switch_epoch > epoch, 10, "reconciliation")
        except AssertionError:
            raise AssertionError(f"{ctl.warnings} primary={ctl.conn.primary}") from None
        assert took < 5.0  # the bound, from the switch answering again
        print(f"reconciled {took:.2f} s after the switch came back")
        with Controller(switch.addr, election_id=9, arbitrate=False).connect() as look:
            after = look.get_job(7)
            assert look.static_config().switch_ip == "10.0.0.254"
        assert (after.job_index, after.slot_base, after.slot_count, after.key, after.mgid) == (
            before.job_index,
            before.slot_base,
            before.slot_count,
            before.key,
            before.mgid,
        )
        assert after.members == before.members and after.verifier == before.verifier
    finally:
        svc.stop()


def test_switch_back_with_another_program_is_not_touched(
    ctl: Controller, switch: Switch, programs: dict[str, Path]
) -> None:
    svc = RegistrationService(ctl, port=0, default_slots=16)
    svc.start()
    try:
        with ThreadPoolExecutor(2) as pool:
            list(pool.map(lambda r: _join(svc.url, 7, r, 2), range(2)))
        _restart(switch)
        with Controller(switch.addr, election_id=9).connect() as other:
            other.push(programs["sparse"])
        _until(lambda: any("another pipeline" in w for w in ctl.warnings), 10, "the foreign line")
        line = next(w for w in ctl.warnings if "another pipeline" in w)
        assert "\n" not in line and "not re-installed" in line
        with Controller(switch.addr, election_id=9, arbitrate=False).connect() as look:
            assert look.list_jobs() == []
    finally:
        svc.stop()


def test_cli_refuses_a_database_of_another_switch(
    switch: Switch, programs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "state.db"
    store = StateStore(db)
    store.bind_switch("127.0.0.1:1", 1)
    store.close()
    code = ctl_main(
        ["--grpc-addr", switch.addr, "serve", "--listen", "127.0.0.1:0", "--state", str(db),
         "--program", str(programs["dense"]), "--switch-ip", "10.0.0.254",
         "--switch-mac", "02:00:00:00:00:fe"]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1
    assert err[0].startswith("p4reduce-ctl: error: state database") and "127.0.0.1:1" in err[0]


def test_recovery_round_reports_completed_calls() -> None:
    """The fewest and most calls the round's ranks completed (host/replay.py decides with
    them); a rank that timed out of the round takes its count back."""
    from p4reduce.controller.registry import Registry

    reg = Registry()
    for r in range(3):
        reg.join(7, member(r), 3)
    reg.installed(7, reg.get(7).job or _job(reg))
    gen, done = reg.recover_arrive(7, 0, 100, done=5)
    assert not done
    reg.recover_arrive(7, 2, 90, done=9)
    reg.recover_depart(7, 2, gen)  # gave up: its count goes too
    reg.recover_arrive(7, 1, 100, done=6)
    gen2, complete = reg.recover_arrive(7, 2, 101, done=6)
    assert complete and gen2 == gen
    reg.recovered(7, gen, None)
    assert reg.recovery_outcome(7, gen) == 101
    assert reg.get(7).recovery.done_range[gen] == (5, 6)


def _job(reg: Any) -> Any:
    from p4reduce.controller.jobs import Job

    e = reg.get(7)
    return Job(7, 1, e.n, 0, e.slot_count, [e.members[r] for r in sorted(e.members)])


def test_every_worker_restarted_rejoins_and_the_job_is_re_formed(ctl: Controller) -> None:
    """torchrun --max-restarts restarts every worker, on new ports: each joins again with
    rejoin; once all did, the job is installed anew for the new addresses. A lone rejoin
    waits for the others and says so."""
    svc = RegistrationService(ctl, port=0, default_slots=16)
    svc.start()
    try:
        with ThreadPoolExecutor(2) as pool:
            old = list(pool.map(lambda r: _join(svc.url, 7, r, 2), range(2)))
        c = RegistrationClient(svc.url, timeout=20, secret=SECRET)

        def rejoin(rank: int, timeout: float = 20) -> Any:
            m = member(rank, udp_base=6000)
            return c.join(7, rank, 2, m.ip, m.udp_port, m.mac, m.switch_port, timeout=timeout,
                          rejoin=True)  # fmt: skip

        with pytest.raises(RegistrationError, match="waited 1 s for ranks 1 to join again"):
            rejoin(0, timeout=1)
        with ThreadPoolExecutor(2) as pool:
            new = list(pool.map(rejoin, range(2)))
        assert [m["udp_port"] for m in new[0].members] == [6000, 6001]
        assert new[0].job_key == new[1].job_key != old[0].job_key
        on_switch = ctl.refresh().get(7)
        assert [m.udp_port for m in on_switch.members] == [6000, 6001]
        assert on_switch.key == new[0].job_key
    finally:
        svc.stop()
