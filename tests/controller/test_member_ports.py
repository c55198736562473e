"""Issue 34: job members are checked against the switch's ports (p4reduce/portmap.py). A
member on a port the switch lacks, or whose address is not its UDP port's peer, is refused
in one line naming both, by ``Controller.create_job``, ``p4reduce-ctl job create`` (exit 1)
and the registration service at the join itself; nothing is installed. A switch that does
not answer the port read (BMv2, or a Device without a port map) is not checked."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from ctl_helpers import Switch, member, members
from p4reduce.controller import (
    Controller,
    InvalidArgument,
    RegistrationClient,
    RegistrationService,
    credentials,
)
from p4reduce.controller.cli import main
from p4reduce.controller.client import RegistrationError
from p4reduce.controller.service import Timeouts
from p4reduce.switch.process.portinfo import UnknownSenderReport

from p4reduce import portmap
from p4reduce.portmap import PortMap

SECRET = "the-secret-of-the-port-tests"
# the workers ctl_helpers.member(r) describes: 10.0.0.(r+1):(5000+r) on switch port r+1
PEERS = {1: ("10.0.0.1", 5000), 2: ("10.0.0.2", 5001), 3: ("10.0.0.3", 5002)}


@pytest.fixture
def ports(switch: Switch) -> PortMap:
    pm = PortMap(PEERS, {4: "veth4"}, unknown_sender=7, listen="127.0.0.1:48864")
    switch.device.port_map = lambda: pm
    return pm


def test_the_port_entries_round_trip() -> None:
    pm = PortMap({1: ("10.0.0.1", 5000)}, {2: "eth2"}, unknown_sender=3, listen="0.0.0.0:9")
    assert portmap.decode(portmap.encode(pm)) == pm
    assert portmap.wanted(portmap.request())


def test_the_controller_reads_the_ports(ctl: Controller, ports: PortMap) -> None:
    assert ctl.port_map() == ports


def test_a_switch_without_port_entries_is_not_checked(ctl: Controller) -> None:
    assert ctl.port_map() is None  # the Device refuses the extern read, as BMv2 would
    stray = member(0)
    stray = type(stray)(**{**stray.__dict__, "udp_port": 6000})
    job = ctl.create_job(7, [stray, member(1)], slot_count=8)
    assert [m.udp_port for m in job.members] == [6000, 5001]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"switch_port": 9}, "rank 1: the switch has no port 9 (its ports: 1, 2, 3, 4)"),
        (
            {"udp_port": 5009},
            "rank 1: 10.0.0.2:5009 is not the peer of switch port 2, 10.0.0.2:5001 is "
            "(p4reduce-switch -i 2@udp:10.0.0.2:5001): the switch would drop its datagrams",
        ),
        (
            {"ip": "10.0.0.3", "udp_port": 5002},
            "rank 1: 10.0.0.3:5002 is not the peer of switch port 2 (it is port 3's)",
        ),
    ],
)
def test_create_job_refuses_a_member_the_switch_does_not_know(
    ctl: Controller, ports: PortMap, change: dict[str, Any], message: str
) -> None:
    bad = type(member(1))(**{**member(1).__dict__, **change})
    with pytest.raises(InvalidArgument) as err:
        ctl.create_job(7, [member(0), bad], slot_count=8)
    assert message in str(err.value)
    assert ctl.list_jobs() == []
    ctl.create_job(7, members(2), slot_count=8)  # the right ones pass
    assert [j.job_id for j in ctl.list_jobs()] == [7]


def test_an_interface_port_takes_any_address(ctl: Controller, ports: PortMap) -> None:
    m = type(member(3))(**{**member(3).__dict__, "ip": "192.168.1.9", "udp_port": 7})
    ctl.create_job(7, [*members(3), m], slot_count=8)  # port 4 is veth4: no peer to match


def test_job_create_exits_1_with_one_line(
    ctl: Controller, ports: PortMap, switch: Switch, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--grpc-addr", switch.addr, "--election-id", "2", "job", "create", "--job", "7"]
    argv += ["--slots", "8", "--member", "0:10.0.0.1:5000:02:00:00:00:00:01:1"]
    argv += ["--member", "1:10.0.0.2:5001:02:00:00:00:00:02:5"]
    ctl.close()  # p4reduce-ctl becomes the primary
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "p4reduce-ctl: error: rank 1: the switch has no port 5 (its ports: 1, 2, 3, 4)\n"
    assert main(["--grpc-addr", switch.addr, "--election-id", "2", "job", "list"]) == 0
    assert "no jobs" in capsys.readouterr().out


@pytest.fixture
def client(ctl: Controller) -> Iterator[RegistrationClient]:
    svc = RegistrationService(ctl, port=0, default_slots=8, join_timeout=10.0,
                              timeouts=Timeouts(50, 800, 5))  # fmt: skip
    svc.start()
    try:
        yield RegistrationClient(svc.url, timeout=10.0, secret=SECRET)
    finally:
        svc.stop()


def test_a_join_from_a_stranger_is_refused_at_once(
    client: RegistrationClient, ports: PortMap, ctl: Controller
) -> None:
    t0 = time.monotonic()
    with pytest.raises(RegistrationError) as err:  # rank 0 of 2: nobody else joins
        client.join(7, 0, 2, "10.0.0.1", 5555, "02:00:00:00:00:01", 1)
    assert time.monotonic() - t0 < 5  # not after the join timeout (10 s)
    assert "rank 0: 10.0.0.1:5555 is not the peer of switch port 1, 10.0.0.1:5000 is" in str(
        err.value
    )
    assert err.value.status == 400
    assert ctl.list_jobs() == []


class _Counters:
    def __init__(self) -> None:
        self.rx_dropped: dict[str, int] = {}


class _Loop:
    """Stands for the native I/O loop: only its adapter counters are read."""

    def __init__(self) -> None:
        self.adapter = object()
        self.counters = _Counters()

    def adapter_counters(self) -> _Counters:
        return self.counters


class _Dataplane:
    def __init__(self) -> None:
        self.loop = _Loop()


def test_unknown_senders_are_logged_at_a_rate_limit(caplog: pytest.LogCaptureFixture) -> None:
    dp = _Dataplane()
    report = UnknownSenderReport({}, dp, interval=10.0)
    assert not report.check(0.0)  # nothing dropped
    dp.loop.counters.rx_dropped["unknown_sender"] = 3
    with caplog.at_level("WARNING", logger="p4reduce.switch"):
        assert report.check(1.0)
        dp.loop.counters.rx_dropped["unknown_sender"] = 5
        assert not report.check(5.0)  # within the interval
        assert report.check(11.0)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 2
    assert "dropped 3 datagram(s) from senders no -i N@udp:HOST:PORT names (3 in all)" in lines[0]
    assert "dropped 2 datagram(s)" in lines[1] and "(5 in all)" in lines[1]


def test_a_join_to_a_job_made_by_job_create_says_what_to_do(ctl: Controller) -> None:
    # as p4reduce-ctl job create makes it (with a secret); a service started later adopts it
    ctl.create_job(8, members(2), slot_count=8, verifier=credentials.verifier(SECRET))
    with RegistrationService(ctl, port=0) as svc:
        c = RegistrationClient(svc.url, timeout=10.0, secret=SECRET)
        m = member(0)
        with pytest.raises(RegistrationError) as err:
            c.join(8, 0, 2, m.ip, m.udp_port, m.mac, m.switch_port, timeout=5)
    assert str(err.value).endswith(
        "rank 0 already joined job 8, which is ready and takes no joins (a job made by "
        "'p4reduce-ctl job create' counts as fully joined): delete it first ('p4reduce-ctl "
        "job delete --job 8') or join another job id"
    )
    assert err.value.status == 409
