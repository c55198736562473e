"""Pure parts of the controller: bytestrings, address parsing, members, the job table's
validation and allocators, loss thresholds."""

from __future__ import annotations

import pytest
from ctl_helpers import members
from p4reduce.controller import Conflict, InvalidArgument, Job, Member, NotFound, addr, loss
from p4reduce.controller.jobs import JobTable, check_members
from p4reduce.controller.p4info import decode, encode


def test_bytestrings_are_canonical() -> None:
    assert encode(0, 16) == b"\x00"
    assert encode(1, 48) == b"\x01"
    assert encode(0x1234, 32) == b"\x12\x34"
    assert encode(511, 9) == b"\x01\xff"
    assert decode(b"\x00\x00\x12\x34") == 0x1234
    with pytest.raises(InvalidArgument, match="does not fit in 9 bits"):
        encode(512, 9, "port")
    with pytest.raises(InvalidArgument):
        encode(-1, 8)


@pytest.mark.parametrize(
    "text", ["02:00:00:00:00:0a", "02-00-00-00-00-0A", "02000000000a", "2:0:0:0:0:a"]
)
def test_mac_spellings(text: str) -> None:
    assert addr.mac_str(addr.mac(text)) == "02:00:00:00:00:0a"


@pytest.mark.parametrize(
    "text", ["02:00:00:00:00", "zz:00:00:00:00:00", "", "02:00:00:00:00:00:00"]
)
def test_bad_macs(text: str) -> None:
    with pytest.raises(InvalidArgument, match="bad MAC"):
        addr.mac(text)


def test_addresses_and_numbers() -> None:
    assert addr.ipv4_str(addr.ipv4("10.0.0.1")) == "10.0.0.1"
    with pytest.raises(InvalidArgument, match="bad IPv4 address '10.0.0.256'"):
        addr.ipv4("10.0.0.256")
    assert addr.prefix("10.1.0.0/16") == (0x0A010000, 16)
    with pytest.raises(InvalidArgument, match="host bits"):
        addr.prefix("10.1.0.1/16")
    assert addr.udp_port("0x10") == 16
    with pytest.raises(InvalidArgument, match="UDP port 0 is outside 1..65535"):
        addr.udp_port(0)
    with pytest.raises(InvalidArgument, match="switch port 512"):
        addr.switch_port("512")
    with pytest.raises(InvalidArgument, match="bad rank True"):
        addr.number(True, "rank", 0, 3)
    with pytest.raises(InvalidArgument, match="bad rank 1.5"):
        addr.number(1.5, "rank", 0, 3)
    assert addr.hostport("127.0.0.1:0") == ("127.0.0.1", 0)
    with pytest.raises(InvalidArgument, match="HOST:PORT"):
        addr.hostport("nohost")
    assert addr.hostport("[::1]:9559") == ("::1", 9559)


def test_member_parse() -> None:
    m = Member.parse("3:10.0.0.4:5003:02:00:00:00:00:04:7")
    assert m == Member(3, "10.0.0.4", 5003, "02:00:00:00:00:04", 7)
    assert Member.parse("3:10.0.0.4:5003:02-00-00-00-00-04:7") == m
    assert Member.parse("3:10.0.0.4:5003:020000000004:7") == m
    for bad, msg in [
        ("3:10.0.0.4:5003:7", "bad member"),
        ("x:10.0.0.4:5003:02:00:00:00:00:04:7", "bad rank 'x'"),
        ("3:10.0.0.400:5003:02:00:00:00:00:04:7", "bad IPv4 address of rank 3"),
        ("3:10.0.0.4:70000:02:00:00:00:00:04:7", "UDP port of rank 3 70000"),
        ("3:10.0.0.4:5003:02:00:00:00:00:zz:7", "bad MAC address of rank 3"),
        ("3:10.0.0.4:5003:02:00:00:00:00:04:600", "switch port of rank 3 600"),
        ("32:10.0.0.4:5003:02:00:00:00:00:04:7", "rank 32 is outside 0..31"),
    ]:
        with pytest.raises(InvalidArgument, match=msg):
            Member.parse(bad)
    with pytest.raises(InvalidArgument, match="member without mac, switch_port"):
        Member.from_dict({"rank": 0, "ip": "10.0.0.1", "udp_port": 1})


def test_member_validation() -> None:
    ms = members(3)
    assert check_members(reversed(ms)) == ms
    with pytest.raises(Conflict, match="rank 1 given twice"):
        check_members([ms[0], ms[1], ms[1]])
    with pytest.raises(InvalidArgument, match="rank 2 missing"):
        check_members(ms[:2], n=3)
    with pytest.raises(InvalidArgument, match="rank 2 is outside 0..1"):
        check_members(ms, n=2)
    with pytest.raises(InvalidArgument, match="worker count n 33 is outside 1..32"):
        check_members(
            [Member.make(r, f"10.0.1.{r}", 5000, "02:00:00:00:00:01", 1) for r in range(32)], n=33
        )
    twin = Member(1, ms[0].ip, ms[0].udp_port, ms[1].mac, 2)
    with pytest.raises(Conflict, match="ranks 0 and 1 both send from 10.0.0.1:5000"):
        check_members([ms[0], twin])
    with pytest.raises(InvalidArgument, match="worker count n 0"):
        check_members([])


def _job(jid: int, index: int, base: int, count: int) -> Job:
    return Job(jid, index, 1, base, count, members(1))


def test_slot_allocation_first_fit() -> None:
    t = JobTable()
    assert t.allocate_slots(100) == 0
    t.add(_job(1, 1, 0, 100))
    t.add(_job(2, 2, 200, 100))
    assert t.allocate_slots(100) == 100  # the gap fits exactly
    assert t.allocate_slots(101) == 300
    assert t.allocate_slots(50, base=150) == 150
    with pytest.raises(Conflict, match=r"slots 150..250 overlap job 2 \(slots 200..299\)"):
        t.allocate_slots(101, base=150)
    with pytest.raises(InvalidArgument, match="run past the pool"):
        t.allocate_slots(10, base=8190)
    with pytest.raises(InvalidArgument, match="slot count 0 is outside 1..8192"):
        t.allocate_slots(0)
    t.add(_job(3, 3, 300, 8192 - 300))
    with pytest.raises(
        Conflict, match="no 101 contiguous free slots.*100 free in all, largest run 100"
    ):
        t.allocate_slots(101)
    assert t.free_slots() == 100


def test_job_index_allocation_reuses_lowest() -> None:
    t = JobTable([_job(1, 1, 0, 1), _job(2, 2, 1, 1), _job(3, 3, 2, 1)])
    t.remove(2)
    assert t.allocate_index() == 2
    full = JobTable([_job(i, i, i, 1) for i in range(1, 256)])
    with pytest.raises(Conflict, match="all 255 job indexes"):
        full.allocate_index()
    assert JobTable(used_indexes=[1]).allocate_index() == 2


def test_plan_validates() -> None:
    t = JobTable()
    job = t.plan(7, members(4), 16)
    assert (job.job_index, job.slot_base, job.slot_count, job.mgid, job.n) == (1, 0, 16, 257, 4)
    t.add(job)
    with pytest.raises(Conflict, match="job 7 exists already"):
        t.plan(7, members(1), 1)
    with pytest.raises(InvalidArgument, match="job id 0 is outside 1..65535"):
        t.plan(0, members(1), 1)
    with pytest.raises(InvalidArgument, match="job id 65536"):
        t.plan(65536, members(1), 1)
    with pytest.raises(NotFound, match="unknown job 9"):
        t.get(9)
    assert t.plan(8, members(1), 1).slot_base == 16


def test_loss_threshold() -> None:
    assert loss.threshold(0) == 0
    assert loss.threshold(0.5) == 2**31
    assert loss.threshold(1) == 2**32 - 1
    assert loss.threshold(1e-12) == 0
    for bad in (-0.1, 1.01, float("nan")):
        with pytest.raises(InvalidArgument, match="outside 0..1"):
            loss.threshold(bad)


def test_controller_does_not_import_the_switch() -> None:
    """docs/architecture.md: the controller reaches a switch only through P4Runtime."""
    import subprocess
    import sys

    code = (
        "import sys, p4reduce.controller, p4reduce.controller.cli;"
        "bad = sorted(m for m in sys.modules if m.startswith(('p4reduce.switch', 'p4reduce.host')));"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
