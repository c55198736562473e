"""The controller library against the embedded switch over P4Runtime: push, static config,
jobs on the switch, counters, slot state, loss, reset."""

from __future__ import annotations

from pathlib import Path

import pytest
from ctl_helpers import (
    FLAG_NO_PAYLOAD,
    FLAG_RESULT,
    FLAG_RETRANSMIT,
    SWITCH_IP,
    Switch,
    agg_frame,
    first_value,
    key_of,
    member,
    members,
    result_header,
)
from p4reduce.controller import (
    Conflict,
    Controller,
    ControllerError,
    InvalidArgument,
    Member,
    NoPipeline,
    NotFound,
    StaticConfig,
    SwitchError,
    program,
)
from p4reduce.controller.jobs import multicast_group
from p4reduce.controller.p4rt import INSERT

from p4reduce.proto import p4runtime_pb2


def _table(ctl: Controller, name: str) -> list:
    return [
        ctl.schema.decode_entry(te)
        for te in ctl.conn.read([p4runtime_pb2.TableEntry(table_id=ctl.schema.table(name).id)])
    ]


def _groups(ctl: Controller) -> dict[int, list[tuple[int, int]]]:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = 0
    return {
        g.multicast_group_entry.multicast_group_id: sorted(
            (r.egress_port, r.instance) for r in g.multicast_group_entry.replicas
        )
        for g in ctl.conn.read([pre])
    }


# ---------------------------------------------------------------------- pipeline
def test_no_pipeline_then_push(switch: Switch, programs: dict[str, Path]) -> None:
    with Controller(switch.addr) as c:
        assert not c.has_pipeline()
        with pytest.raises(NoPipeline, match="no pipeline on device 1 .*run p4reduce-ctl push"):
            c.list_jobs()
        info = c.push(programs["dense"])
        assert (info["kind"], info["k"], info["program"]) == ("dense", 64, "dense")
        assert switch.device.cookie == info["cookie"]
        assert c.has_pipeline() and c.list_jobs() == []
    with Controller(switch.addr, arbitrate=False) as reader:  # a stateless reader sees it
        assert reader.kind == "dense" and reader.k == 64
        assert reader.info()["cookie"] == info["cookie"]


def test_push_errors(switch: Switch, tmp_path: Path) -> None:
    with Controller(switch.addr) as c:
        with pytest.raises(
            InvalidArgument, match=r"no compiled program .*nothing\.json \(run make build\)"
        ):
            c.push(tmp_path / "nothing")
        (tmp_path / "bad.json").write_text("{}")
        (tmp_path / "bad.p4info.txtpb").write_text("this is not a p4info")
        with pytest.raises(InvalidArgument, match="not a P4Info"):
            c.push(tmp_path / "bad")
        (tmp_path / "bad.p4info.txtpb").write_text("")
        with pytest.raises(ControllerError, match=r"bad\.p4info\.txtpb is not a p4reduce program"):
            c.push(tmp_path / "bad")


def test_connection_errors(switch: Switch) -> None:
    with pytest.raises(SwitchError, match=r"switch unreachable at 127.0.0.1:1: connection refused"):
        Controller("127.0.0.1:1").connect(connect_timeout=0.3)
    with Controller(switch.addr):
        with pytest.raises(SwitchError, match="election id 1 is held by another controller"):
            Controller(switch.addr).connect()
        with Controller(switch.addr, election_id=5) as higher:
            assert higher.conn.primary
    with pytest.raises(SwitchError, match="no device 9"):
        Controller(switch.addr, device_id=9).connect()


def test_backup_cannot_write(ctl: Controller, switch: Switch) -> None:
    with Controller(switch.addr, election_id=10) as newer:
        assert newer.conn.primary
        with pytest.raises(SwitchError, match="not the primary controller of device 1"):
            ctl.create_job(7, members(2), 4, key=key_of(7))
    # the newer controller left, so ctl is primary again
    ctl.create_job(7, members(2), 4, key=key_of(7))


# ---------------------------------------------------------------------- static config
def test_static_config(ctl: Controller, switch: Switch) -> None:
    cfg = ctl.static_config()
    assert (cfg.switch_ip, cfg.switch_mac) == (SWITCH_IP, "02:00:00:00:00:fe")
    assert [(h.port, h.mac) for h in cfg.hosts] == [
        (p, f"02:00:00:00:00:{p:02x}") for p in range(1, 5)
    ]
    assert _groups(ctl) == {program.FLOOD_MGID: [(1, 0), (2, 0), (3, 0), (4, 0)]}
    (local,) = _table(ctl, program.SWITCH_IPV4)
    assert local.match == {program.F_IPV4_DST: 0x0A0000FE} and local.action == program.IS_SWITCH
    assert local.params == {"mac": 0x0200000000FE}
    from p4reduce.controller import Host, Route

    again = StaticConfig(
        SWITCH_IP,
        "02:00:00:00:00:fd",
        (Host(1, "02:00:00:00:00:11"), Host(6, "02:00:00:00:00:06")),
        (Route.parse("10.1.0.0/16:3:02:00:00:00:00:fe:02:00:00:00:00:33"),),
    )
    ctl.install_static(again)  # existing entries are modified, new ones inserted
    cfg = ctl.static_config()
    assert cfg.switch_mac == "02:00:00:00:00:fd"
    assert (1, "02:00:00:00:00:11") in [(h.port, h.mac) for h in cfg.hosts]
    assert [(r.prefix, r.port, r.dst_mac) for r in cfg.routes] == [
        ("10.1.0.0/16", 3, "02:00:00:00:00:33")
    ]
    assert _groups(ctl)[program.FLOOD_MGID] == [(1, 0), (6, 0)]
    with pytest.raises(InvalidArgument, match="together"):
        ctl.install_static(StaticConfig(SWITCH_IP, None))
    # the switch answers ARP for its address with the configured MAC
    arp = (
        b"\xff" * 6
        + bytes.fromhex("020000000001")
        + b"\x08\x06"
        + bytes.fromhex("0001080006040001")
        + bytes.fromhex("020000000001")
        + bytes([10, 0, 0, 1])
        + b"\x00" * 6
        + bytes([10, 0, 0, 254])
    )
    out = switch.device.inject(1, arp)
    assert len(out) == 1 and out[0][0] == 1 and out[0][1][6:12] == bytes.fromhex("0200000000fd")


# ---------------------------------------------------------------------- jobs
def test_create_job_writes_entries(ctl: Controller, switch: Switch) -> None:
    job = ctl.create_job(7, members(3), 16, key=key_of(7))
    assert (job.job_index, job.slot_base, job.slot_count, job.mgid) == (1, 0, 16, 257)
    workers = sorted(_table(ctl, program.WORKERS), key=lambda d: d.params["worker_rank"])
    assert [d.match for d in workers] == [
        {program.F_JOB_ID: 7, program.F_IPV4_SRC: 0x0A000001 + r, program.F_UDP_SRC: 5000 + r}
        for r in range(3)
    ]
    assert [d.params for d in workers] == [
        {
            "job_index": 1,
            "worker_rank": r,
            "n_workers": 3,
            "worker_bit": 1 << r,
            "base": 0,
            "count": 16,
            "mgid": 257,
            "job_key": key_of(7),
        }
        for r in range(3)
    ]
    replicas = sorted(_table(ctl, program.REPLICAS), key=lambda d: d.match[program.F_RID])
    assert [(d.match[program.F_JOB_INDEX], d.match[program.F_RID], d.action) for d in replicas] == [
        (1, r, program.TO_WORKER) for r in range(3)
    ]
    assert replicas[2].params == {"mac": 0x020000000003, "ip": 0x0A000003, "udp_port": 5002}
    assert _groups(ctl)[257] == [(1, 0), (2, 1), (3, 2)]
    second = ctl.create_job(8, members(2, udp_base=6000), 4, key=key_of(8))
    assert (second.job_index, second.slot_base, second.mgid) == (2, 16, 258)


def test_list_reconstructs_from_switch(ctl: Controller, switch: Switch) -> None:
    a = ctl.create_job(7, members(3), 16, key=key_of(7))
    b = ctl.create_job(300, [member(0, 7000)], 8, slot_base=100, key=key_of(300))
    with Controller(switch.addr, arbitrate=False) as fresh:
        jobs = fresh.list_jobs()
        assert [j.to_dict() for j in jobs] == [a.to_dict(), b.to_dict()]
        assert fresh.jobs().free_slots() == 8192 - 24
    # a restarted controller allocates around what is there
    ctl.refresh()
    assert ctl.create_job(9, members(1, 8000), 84, key=key_of(9)).slot_base == 16
    assert ctl.create_job(10, members(1, 9000), 10, key=key_of(10)).slot_base == 108


def test_create_errors(ctl: Controller) -> None:
    ctl.create_job(7, members(2), 16, key=key_of(7))
    with pytest.raises(Conflict, match="job 7 exists already"):
        ctl.create_job(7, members(2, 6000), 16, key=key_of(7))
    with pytest.raises(Conflict, match=r"slots 10..19 overlap job 7 \(slots 0..15\)"):
        ctl.create_job(8, members(2, 6000), 10, slot_base=10, key=key_of(8))
    with pytest.raises(Conflict, match="rank 1 given twice"):
        ctl.create_job(8, [member(0), member(1), member(1, 6000)], 4, key=key_of(8))
    many = [Member(r, f"10.0.1.{r + 1}", 5000, "02:00:00:00:01:01", 1) for r in range(33)]
    with pytest.raises(InvalidArgument, match="worker count n 33 is outside 1..32"):
        ctl.create_job(8, many, 4, key=key_of(8))
    with pytest.raises(InvalidArgument, match="worker count n 33"):
        ctl.create_job(8, many[:32], 4, n=33, key=key_of(8))
    with pytest.raises(InvalidArgument, match="bad IPv4 address of rank 0"):
        ctl.create_job(
            8, [Member.make(0, "10.0.0", 5000, "02:00:00:00:00:01", 1)], 4, key=key_of(8)
        )
    with pytest.raises(InvalidArgument, match="slot count 9000"):
        ctl.create_job(8, members(1), 9000, key=key_of(8))
    assert [j.job_id for j in ctl.list_jobs()] == [7]
    assert len(_table(ctl, program.WORKERS)) == 2


def test_failed_install_rolls_back(ctl: Controller) -> None:
    ctl.conn.write([(INSERT, multicast_group(257, [(9, 0)]))])  # squat on the job's group
    with pytest.raises(ControllerError, match="multicast group 257: ALREADY_EXISTS"):
        ctl.create_job(7, members(2), 4, key=key_of(7))
    assert _table(ctl, program.WORKERS) == [] and _table(ctl, program.REPLICAS) == []
    assert ctl.list_jobs() == []


def test_delete_job(ctl: Controller, switch: Switch) -> None:
    ctl.create_job(7, members(2), 8, key=key_of(7))
    other = ctl.create_job(8, members(2, 6000), 8, key=key_of(8))
    for r in range(2):  # slot 3 of job 7 completes; slot 4 half full
        switch.device.inject(r + 1, agg_frame(7, r, 3))
    switch.device.inject(1, agg_frame(7, 0, 4, 1))
    assert switch.register(program.BITMAPS, 3) == 0b11
    assert switch.register(program.BITMAPS, 4) == 1 << 32
    assert switch.register(program.COUNTS, 9) == 0x81
    deleted = ctl.delete_job(7)
    assert deleted.job_id == 7
    assert [switch.register(program.BITMAPS, s) for s in range(8)] == [0] * 8
    assert [switch.register(program.COUNTS, c) for c in range(16)] == [0] * 16
    assert {d.match[program.F_JOB_ID] for d in _table(ctl, program.WORKERS)} == {8}
    assert {d.match[program.F_JOB_INDEX] for d in _table(ctl, program.REPLICAS)} == {2}
    assert set(_groups(ctl)) == {program.FLOOD_MGID, other.mgid}
    with pytest.raises(NotFound, match="unknown job 7"):
        ctl.delete_job(7)
    # packets of the deleted job are now unknown senders
    assert switch.device.inject(1, agg_frame(7, 0, 3)) == []
    # a stateless controller deletes a job it did not create
    with Controller(switch.addr, election_id=2) as other_ctl:
        other_ctl.delete_job(8)
    assert _table(ctl, program.WORKERS) == []


# ---------------------------------------------------------------------- counters and slots
def test_stats_decoding(ctl: Controller, switch: Switch) -> None:
    ctl.create_job(7, members(3), 4, key=key_of(7))
    inject = switch.device.inject
    assert inject(1, agg_frame(7, 0, 0)) == []  # contribution
    assert inject(1, agg_frame(7, 0, 0)) == []  # duplicate into an open slot
    assert inject(2, agg_frame(7, 1, 0)) == []  # contribution
    results = inject(3, agg_frame(7, 2, 0))  # completion: multicast to the 3 workers
    assert sorted(p for p, _ in results) == [1, 2, 3]
    for port, frame in results:
        assert frame[6:12] == bytes.fromhex("0200000000fe")  # from the switch's MAC
        h = result_header(frame)
        assert h["flags"] & FLAG_RESULT and h["dst_ip"] == 0x0A000000 + port
        assert first_value(frame) == 1 + 2 + 3
    answer = inject(1, agg_frame(7, 0, 0))  # retransmission into a complete slot: unicast
    assert len(answer) == 1 and result_header(answer[0][1])["flags"] & FLAG_RETRANSMIT
    inject(1, agg_frame(7, 1, 1, src_rank=0))  # wrong rank
    inject(1, agg_frame(7, 0, 4))  # slot outside the job's 4
    inject(1, agg_frame(7, 0, 1, truncate=4))  # malformed length
    inject(1, agg_frame(99, 0, 1))  # unknown job: unknown sender
    inject(1, agg_frame(7, 0, 1, udp_base=4000))  # unknown source port
    inject(1, agg_frame(7, 0, 1, key=key_of(7) ^ 4))  # a wrong job key
    (j7,) = ctl.stats(7)
    d = j7.to_dict()
    assert d["job_id"] == 7 and d["job_index"] == 1
    assert d["aggregated"] == 3 and d["contributions"] == 2 and d["results_multicast"] == 1
    assert d["retransmits_answered"] == 1 and d["duplicates"] == 1 and d["results_sent"] == 4
    assert d["drops"] == {
        "unknown_sender": 0,
        "bad_key": 1,
        "wrong_rank": 1,
        "slot_range": 1,
        "malformed": 1,
        "loss_in": 0,
        "loss_out": 0,
        "no_replica": 0,
    }
    everything = {s.job_index: s for s in ctl.stats()}
    assert everything[0].job_id is None and everything[0].drops["unknown_sender"] == 2
    assert everything[1].aggregated == 3


def test_stats_loss_and_no_replica(ctl: Controller, switch: Switch) -> None:
    ctl.create_job(7, members(2), 4, key=key_of(7))
    ctl.set_loss(1.0, [1], "in")
    assert switch.device.inject(1, agg_frame(7, 0, 0)) == []
    ctl.set_loss(0.0, [1], "in")
    ctl.set_loss(1.0, [2], "out")
    switch.device.inject(1, agg_frame(7, 0, 0))
    out = switch.device.inject(2, agg_frame(7, 1, 0))
    assert [p for p, _ in out] == [1]  # the replica to port 2 is lost
    ctl.set_loss(0.0, [2], "out")
    # a replica whose rank has no replicas entry is dropped and counted
    from p4reduce.controller.p4rt import DELETE

    te = ctl.schema.table_entry(program.REPLICAS, {program.F_JOB_INDEX: 1, program.F_RID: 0})
    ctl.conn.write([(DELETE, te)])
    switch.device.inject(1, agg_frame(7, 0, 1))
    switch.device.inject(2, agg_frame(7, 1, 1))
    (s,) = ctl.stats(7)
    assert s.drops["loss_in"] == 1 and s.drops["loss_out"] == 1 and s.drops["no_replica"] == 1
    assert s.get("result_sent") == 2  # rank 0 of the first result, rank 1 of the second


def test_new_job_starts_with_zero_counters(ctl: Controller, switch: Switch) -> None:
    ctl.create_job(7, members(1), 4, key=key_of(7))
    switch.device.inject(1, agg_frame(7, 0, 0))
    assert ctl.stats(7)[0].get("completion") == 1
    ctl.delete_job(7)
    job = ctl.create_job(8, members(1), 4, key=key_of(8))
    assert job.job_index == 1  # the index is reused, its counters are not
    assert ctl.stats(8)[0].total == 0


def test_slots_read(ctl: Controller, switch: Switch) -> None:
    ctl.create_job(5, members(1, 9000), 2, key=key_of(5))
    job = ctl.create_job(7, members(3), 8, key=key_of(7))
    assert job.slot_base == 2
    inject = switch.device.inject
    inject(1, agg_frame(7, 0, 1, exponent=120))
    inject(3, agg_frame(7, 2, 1, exponent=131, flags=FLAG_NO_PAYLOAD))
    for r in range(3):
        inject(r + 1, agg_frame(7, r, 2, 1, values=[r] * 64))
    j, states = ctl.slots(7)
    assert j.job_id == 7 and len(states) == 8
    s1 = states[1].sets[0]
    assert (states[1].slot, states[1].pool_slot) == (1, 3)
    assert (s1.ranks, s1.missing, s1.count, s1.has_data, s1.exponent, s1.complete) == (
        [0, 2],
        [1],
        2,
        True,
        131,
        False,
    )
    s2 = states[2].sets[1]
    assert (s2.ranks, s2.missing, s2.count, s2.complete) == ([0, 1, 2], [], 3, True)
    assert all(st.empty for i, st in enumerate(states) if i not in (1, 2))
    assert s1.next_min is None and s1.values is None
    _, some = ctl.slots(7, 2, 1, values=True)
    assert [st.slot for st in some] == [2]
    assert some[0].sets[1].values == [0 + 1 + 2] * 64
    with pytest.raises(InvalidArgument, match="outside job 7's 0..7"):
        ctl.slots(7, 6, 4)
    with pytest.raises(NotFound, match="unknown job 8"):
        ctl.slots(8)


def test_sparse_program(sparse_ctl: Controller, switch: Switch) -> None:
    ctl = sparse_ctl
    assert ctl.kind == "sparse"
    ctl.create_job(7, members(2), 4, key=key_of(7))
    switch.device.inject(1, agg_frame(7, 0, 0, kind="sparse", next_=12, flags=FLAG_NO_PAYLOAD))
    switch.device.inject(2, agg_frame(7, 1, 0, kind="sparse", next_=8, flags=FLAG_NO_PAYLOAD))
    _, states = ctl.slots(7, 0, 1)
    cell = states[0].sets[0]
    assert cell.next_min == 8 and cell.complete and not cell.has_data
    assert cell.nonfinite == 0
    f = dict(kind="sparse", values=[1] * 64)
    switch.device.inject(1, agg_frame(7, 0, 1, next_=2, nonfinite=0x4, **f))
    switch.device.inject(2, agg_frame(7, 1, 1, next_=3, nonfinite=0x1, **f))
    cell = ctl.slots(7, 1, 1)[1][0].sets[0]
    assert (cell.count, cell.nonfinite) == (2, 0x5)  # the OR of -Inf and NaN
    assert cell.to_dict()["nonfinite_names"] == ["nan", "-inf"]
    ctl.delete_job(7)
    assert switch.register(program.NEXT_MIN, 0) == 8  # not cleared: the next first overwrites


# ---------------------------------------------------------------------- loss and reset
def test_loss(ctl: Controller, switch: Switch) -> None:
    assert ctl.loss() == {}
    assert ctl.set_loss(0.25, [3, 1], "in") == 2**30
    ctl.set_loss(0.5, [1], "out")
    assert ctl.loss() == {1: {"in": 0.25, "out": 0.5}, 3: {"in": 0.25, "out": 0.0}}
    assert ctl.loss([2]) == {2: {"in": 0.0, "out": 0.0}}
    assert switch.register(program.INGRESS_LOSS, 3) == 2**30
    ctl.set_loss(1.0)
    assert switch.register(program.EGRESS_LOSS, 511) == 2**32 - 1
    assert len(ctl.loss()) == 512
    with pytest.raises(InvalidArgument, match="outside 0..1"):
        ctl.set_loss(2)
    with pytest.raises(InvalidArgument, match="direction 'up'"):
        ctl.set_loss(0.1, None, "up")
    with pytest.raises(InvalidArgument, match="switch port 600"):
        ctl.set_loss(0.1, [600])


def test_reset(ctl: Controller, switch: Switch) -> None:
    ctl.create_job(7, members(2), 4, key=key_of(7))
    ctl.create_job(8, members(2, 6000), 4, key=key_of(8))
    switch.device.inject(1, agg_frame(7, 0, 1, nonfinite=0x2))
    switch.device.inject(1, agg_frame(99, 0, 1))
    ctl.set_loss(0.5, [1, 2])
    assert switch.register(program.NONFINITE, 2) == 0x2  # cell (slot 1, set 0)
    r = ctl.reset()
    assert r["jobs_removed"] == [7, 8] and r["slots_cleared"]
    assert ctl.list_jobs() == [] and _table(ctl, program.WORKERS) == []
    assert _table(ctl, program.REPLICAS) == []
    assert set(_groups(ctl)) == {program.FLOOD_MGID}  # static config kept
    assert ctl.static_config().switch_ip == SWITCH_IP
    assert ctl.loss() == {} and ctl.stats() == []
    assert switch.register(program.BITMAPS, 5) == 0
    assert switch.register(program.NONFINITE, 2) == 0  # every slot register, this one too
    assert ctl.create_job(9, members(2), 4, key=key_of(9)).job_index == 1


def test_job_keys_are_drawn_fresh_and_read_back(ctl: Controller, switch: Switch) -> None:
    """Without a key the controller draws one per creation (a recreated job gets a new
    one); the key and the secret's verifier come back from the switch's entries."""
    from p4reduce.controller import credentials

    ver = credentials.verifier("s" * 20)
    first = ctl.create_job(7, members(2), 4, verifier=ver)
    ctl.delete_job(7)
    again = ctl.create_job(7, members(2), 4)
    assert first.key != again.key  # 2^-32 to fail by chance
    (back,) = ctl.refresh().sorted()
    assert back.key == again.key and back.verifier is None
    ctl.delete_job(7)
    ctl.create_job(7, members(2), 4, verifier=ver)
    (back,) = ctl.refresh().sorted()
    assert back.verifier == ver and credentials.matches("s" * 20, back.verifier)
    # packets with the drawn key aggregate, with the old key they are counted bad_key
    for r in range(2):
        switch.device.inject(r + 1, agg_frame(7, r, 0, key=back.key))
    switch.device.inject(1, agg_frame(7, 0, 1, key=first.key))
    (st,) = ctl.stats(7)
    assert st.aggregated == 2 and st.drops["bad_key"] == 1
