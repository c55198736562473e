"""Two-level aggregation (docs/protocol.md, "Hierarchical aggregation"): ToR switches sum
their rack's workers and send the partial sum to the spine as one contribution; the spine
sums the racks and multicasts down; each ToR stores the result and multicasts it to its
workers. Both programs, both engines, on the leaf-spine network of tree_net.py; loss on
each of the four links, and random loss on all of them with workers that run ahead.
"""

from __future__ import annotations

import functools
import operator
import os
import random
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from tree_net import (  # noqa: E402
    EV_COMPLETION,
    EV_CONTRIBUTION,
    EV_DOWN,
    EV_DUPLICATE,
    EV_RETRANSMIT,
    EV_UP,
    EV_UP_RETRANSMIT,
    JOB_ID,
    JOB_KEY,
    SPINE_INDEX,
    TOR_INDEX,
    Agg,
    Host,
    TreeNet,
)

from fabric import (  # noqa: E402  # isort: skip
    FLAG_END,
    FLAG_NO_PAYLOAD,
    FLAG_RESULT,
    FLAG_RETRANSMIT,
    MSG_SPARSE,
    NEXT_END,
    wrapped_sum,
)

K = 64
LINKS = ("host-tor", "tor-spine", "spine-tor", "tor-host")


def _native_label() -> str:
    from p4reduce.switch.native.build import compiler

    return "native" if compiler() is not None else "native-refused"


@pytest.fixture(params=["python", "native"], ids=["python", _native_label()])
def engine(request: pytest.FixtureRequest) -> str:
    return "python" if request.node.callspec.id.endswith("native-refused") else request.param


def expected(net: TreeNet, sent: list[Agg]) -> Agg:
    """The result every worker must get for one use of a slot (rank and the retransmit flag
    are not compared: they name the packet that completed or asked, at either level)."""
    payload = any(a.values is not None for a in sent)
    nxt = min(a.next for a in sent)
    flags = FLAG_RESULT | (0 if payload else FLAG_NO_PAYLOAD)
    if net.msg_type == MSG_SPARSE and nxt == NEXT_END:
        flags |= FLAG_END
    a = sent[0]
    return Agg(
        net.msg_type, flags, 0, JOB_ID, a.set, a.slot,
        exponent=max(s.exponent for s in sent),
        nonfinite=functools.reduce(operator.or_, (s.nonfinite for s in sent)),
        packet_id=a.packet_id, block=a.block, next=nxt,
        values=wrapped_sum((s.values for s in sent), K) if payload else None, key=JOB_KEY,
    )  # fmt: skip


def same(got: Agg, want: Agg) -> bool:
    return replace(got, rank=0, flags=got.flags & ~FLAG_RETRANSMIT) == want


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_two_racks_sum_exponent_nonfinite_and_next(program: str, engine: str) -> None:
    net = TreeNet(program, racks=2, per_rack=2, engine=engine)
    assert net.engines == {engine}
    rnd = random.Random(1)
    sent = []
    for h in net.hosts:
        values = [rnd.randint(-(2**31), 2**31 - 1) for _ in range(K)]
        a = net.agg(h, 2, 0, values, exponent=120 + 3 * h.rank, nonfinite=(0, 2, 0, 4)[h.rank],
                    packet_id=0x51, block=6, next=(9, 13, 5, 17)[h.rank] if program == "sparse" else 0)  # fmt: skip
        sent.append(a)
        net.send(h, a)
        # nothing comes back before the last worker of the last rack has sent
        assert all(not net.inbox[x.rank] for x in net.hosts) or h is net.hosts[-1]
    want = expected(net, sent)
    assert want.nonfinite == 6 and want.exponent == 129
    for h in net.hosts:
        (got,) = net.results(h)
        assert same(got, want), f"\n got    {got}\n expect {want}"
        assert got.flags == want.flags  # a multicast: no retransmit flag
        assert got.rank == 1  # the spine's completing contributor: rack 1's ToR
    # spine: one contribution absorbed, one completion; each ToR: one absorbed, one sent up,
    # one result stored and multicast
    assert net.spine.counter(SPINE_INDEX, EV_CONTRIBUTION) == 1
    assert net.spine.counter(SPINE_INDEX, EV_COMPLETION) == 1
    for tor in net.tors:
        got_events = {e: tor.counter(TOR_INDEX, e) for e in range(1, 8)}
        assert got_events == {1: 0, 2: 0, 3: 1, 4: 0, 5: 1, 6: 0, 7: 1}, got_events


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_header_only_priming_across_levels(program: str, engine: str) -> None:
    """A header-only exchange (the priming round) gives every worker the maximum exponent
    and the minimum next; the result is header-only."""
    net = TreeNet(program, racks=2, per_rack=2, engine=engine)
    sent = [net.agg(h, 0, 0, None, exponent=(130, 140, 0, 125)[h.rank], block=0,
                    next=(4, NEXT_END, 8, 12)[h.rank] if program == "sparse" else 0)
            for h in net.hosts]  # fmt: skip
    for h, a in zip(net.hosts, sent, strict=True):
        net.send(h, a)
    want = expected(net, sent)
    assert want.values is None and want.exponent == 140
    for h in net.hosts:
        (got,) = net.results(h)
        assert same(got, want), f"\n got    {got}\n expect {want}"


@pytest.mark.parametrize("lost", LINKS)
@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_one_loss_on_each_link_is_recovered_exactly(program: str, lost: str, engine: str) -> None:
    """The first packet on one link is lost (host 1 -> ToR 0, ToR 0 -> spine, spine -> ToR 1,
    ToR 1 -> host 2); the workers without a result resend the identical packet; every worker
    ends with the exact sum (no contribution added twice at either level), and the slot's two
    later uses (set 1, then set 0 again) are exact too."""
    target = {"host-tor": 1, "tor-spine": 0, "spine-tor": 1, "tor-host": 2}[lost]
    dropped: list[bytes] = []

    def drop(link: tuple[str, int], frame: bytes) -> bool:
        if link == (lost, target) and not dropped:
            dropped.append(frame)
            return True
        return False

    net = TreeNet(program, racks=2, per_rack=2, engine=engine, drop=drop)
    rnd = random.Random(7)
    for use, set_ in enumerate((0, 1, 0)):
        sent = {h.rank: net.agg(h, 1, set_, [rnd.randint(-(2**31), 2**31 - 1) for _ in range(K)],
                                exponent=rnd.randint(1, 255), packet_id=use, block=1 + 4 * use,
                                next=rnd.randint(0, 50) if program == "sparse" else 0)
                for h in net.hosts}  # fmt: skip
        want = expected(net, list(sent.values()))
        have: dict[int, Agg] = {}
        pending = list(net.hosts)
        for _attempt in range(4):
            for h in pending:
                net.send(h, sent[h.rank])
            for h in net.hosts:
                for got in net.results(h):
                    if same(got, want):
                        have.setdefault(h.rank, got)
                    else:
                        pytest.fail(f"use {use}, rank {h.rank}: {got} is not {want}")
            pending = [h for h in net.hosts if h.rank not in have]
            if not pending:
                break
        assert not pending, f"use {use}: ranks {[h.rank for h in pending]} never got the result"
        if use == 0:
            assert dropped, "the loss was never applied"
    # where the retransmission went (the first use only lost a packet)
    spine_dup = net.spine.counter(SPINE_INDEX, EV_DUPLICATE)
    spine_answered = net.spine.counter(SPINE_INDEX, EV_RETRANSMIT)
    up_again = sum(t.counter(TOR_INDEX, EV_UP_RETRANSMIT) for t in net.tors)
    tor_answered = sum(t.counter(TOR_INDEX, EV_RETRANSMIT) for t in net.tors)
    downs = sum(t.counter(TOR_INDEX, EV_DOWN) for t in net.tors)
    tor0_dup = net.tors[0].counter(TOR_INDEX, EV_DUPLICATE)
    seen = (up_again, spine_dup, spine_answered, tor_answered, tor0_dup)
    # the workers without a result resend in rank order, each resend delivered completely
    # before the next one
    if lost == "host-tor":
        # rank 0's resend finds ToR 0's cell open (not added); rank 1's is its late
        # contribution, which completes ToR 0 and the spine; ranks 2 and 3 are answered from
        # ToR 1's stored result. Nothing is sent up twice.
        assert seen == (0, 0, 0, 2, 1), seen
    elif lost == "tor-spine":
        # rank 0's resend makes ToR 0 send its stored partial sum up again: an ordinary
        # contribution at the spine, which completes; ranks 1..3 are answered by their ToRs
        assert seen == (1, 0, 0, 3, 0), seen
    elif lost == "spine-tor":
        # ranks 0 and 1 have the result; rank 2's resend makes ToR 1 send up again, the spine
        # answers from its complete cell (unicast), ToR 1 stores it and multicasts; rank 3 is
        # answered by ToR 1
        assert seen == (1, 0, 1, 1, 0), seen
    else:
        # rank 2 resends; ToR 1 answers from the stored result, the spine sees nothing
        assert seen == (0, 0, 0, 1, 0), seen
    assert downs == 2 * 3  # every ToR took exactly one result per use


@dataclass
class Worker:
    """A worker of the randomized test: per slot, its uses in order, one packet in flight
    per slot, resent unchanged on a timeout, the next use sent as soon as a result arrives
    (so racks run ahead of each other, as hosts do)."""

    host: Host
    uses: dict[int, list[Agg]]
    at: dict[int, int] = field(default_factory=dict)
    got: dict[tuple[int, int], Agg] = field(default_factory=dict)


# P4REDUCE_TREE_FULL=1 adds 3 racks with 30 % loss (the default cases keep the suite short)
RANDOM_CASES = [("dense", 2, 2, 0.2), ("sparse", 2, 3, 0.2)] + (
    [("dense", 3, 2, 0.3), ("sparse", 4, 2, 0.25)]
    if os.environ.get("P4REDUCE_TREE_FULL") == "1"
    else []
)


@pytest.mark.parametrize(("program", "racks", "per_rack", "loss"), RANDOM_CASES)
def test_random_loss_on_every_link(
    program: str, racks: int, per_rack: int, loss: float, engine: str
) -> None:
    rnd = random.Random(f"{program}{racks}{per_rack}")
    net = TreeNet(program, racks, per_rack, engine, drop=lambda link, frame: rnd.random() < loss)
    slots, rounds = 3, 4
    workers = []
    for h in net.hosts:
        uses = {}
        for s in range(slots):
            uses[s] = [
                net.agg(
                    h, s, u % 2,
                    None if rnd.random() < 0.2 else [rnd.randint(-(2**31), 2**31 - 1) for _ in range(K)],
                    exponent=rnd.randint(0, 255), nonfinite=rnd.choice((0, 0, 0, 1, 2, 4)),
                    packet_id=u, block=s + slots * u,
                    next=rnd.choice((s + slots * (u + 1), NEXT_END)) if program == "sparse" else 0,
                )
                for u in range(rounds)
            ]  # fmt: skip
        workers.append(Worker(h, uses, {s: 0 for s in range(slots)}))
    want = {
        (s, u): expected(net, [w.uses[s][u] for w in workers])
        for s in range(slots)
        for u in range(rounds)
    }
    pending = [(w, w.uses[s][0]) for w in workers for s in range(slots)]
    for _step in range(400):
        net.run([(("host-tor", w.host.rank), net.frame(w.host, a)) for w, a in pending])
        pending = []
        for w in workers:
            for got in net.results(w.host):
                u = w.at[got.slot]
                if u < rounds and (got.set, got.packet_id) == (u % 2, u):
                    assert same(got, want[got.slot, u]), (
                        f"\n got    {got}\n expect {want[got.slot, u]}"
                    )
                    w.got[got.slot, u] = got
                    w.at[got.slot] = u + 1
                    if u + 1 < rounds:
                        pending.append((w, w.uses[got.slot][u + 1]))
        if not pending:  # nobody moved: a timeout, every waiting worker resends
            pending = [(w, w.uses[s][u]) for w in workers for s, u in w.at.items() if u < rounds]
        if not pending:
            break
    for w in workers:
        assert sorted(w.got) == sorted(want), f"rank {w.host.rank} missing {set(want) - set(w.got)}"
    # the loss exercised every recovery path
    assert sum(t.counter(TOR_INDEX, EV_UP_RETRANSMIT) for t in net.tors) > 0
    assert net.spine.counter(SPINE_INDEX, EV_RETRANSMIT) > 0
    assert sum(t.counter(TOR_INDEX, EV_RETRANSMIT) for t in net.tors) > 0
    assert sum(t.counter(TOR_INDEX, EV_UP) for t in net.tors) == racks * slots * rounds


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_forged_parent_results_change_nothing(program: str, engine: str) -> None:
    """Only the parent's entry admits a result into a ToR's cell, and only with the job's
    key: a "result" from a worker is malformed, one from another address an unknown sender,
    one with the wrong key bad_key; none is stored, and the real result still is."""
    from fabric import AGG_PORT, EV_BAD_KEY, EV_MALFORMED, EV_UNKNOWN_SENDER, udp_frame
    from tree_net import SPINE_IP, SPINE_MAC, UPLINK_PORT, tor_ip, tor_mac

    net = TreeNet(program, racks=2, per_rack=1, engine=engine)
    tor, h0 = net.tors[0], net.hosts[0]
    values = tuple(range(K))
    net.send(h0, net.agg(h0, 0, 0, values, packet_id=1))  # rack 0 complete: sent up
    fake = Agg(net.msg_type, FLAG_RESULT, 0, JOB_ID, 0, 0, packet_id=1,
               values=tuple([7] * K), key=JOB_KEY)  # fmt: skip

    def down(agg: Agg, ip: str, sport: int = AGG_PORT) -> bytes:
        return udp_frame(eth_dst=tor_mac(0), eth_src=SPINE_MAC, ip_src=ip, ip_dst=tor_ip(0),
                         sport=sport, dport=AGG_PORT, payload=agg.encode())  # fmt: skip

    before = tor.counter(TOR_INDEX, EV_DOWN)
    assert tor.switch.process(h0.port, net.frame(h0, fake)) == []  # from the worker
    assert tor.switch.process(UPLINK_PORT, down(fake, "10.9.9.9")) == []  # not the parent
    assert tor.switch.process(UPLINK_PORT, down(fake, SPINE_IP, 40000)) == []  # wrong port
    wrong_key = replace(fake, key=JOB_KEY ^ 1)
    assert tor.switch.process(UPLINK_PORT, down(wrong_key, SPINE_IP)) == []
    assert tor.counter(TOR_INDEX, EV_MALFORMED) == 1
    assert tor.counter(TOR_INDEX, EV_BAD_KEY) == 1
    assert tor.counter(0, EV_UNKNOWN_SENDER) == 2
    assert tor.counter(TOR_INDEX, EV_DOWN) == before == 0
    # the worker's resend is still sent up (nothing stored), and the real result arrives
    net.send(h0, net.agg(h0, 0, 0, values, packet_id=1))
    assert tor.counter(TOR_INDEX, EV_UP_RETRANSMIT) == 1 and not net.inbox[0]
    h1 = net.hosts[1]
    sent = [net.agg(h0, 0, 0, values, packet_id=1), net.agg(h1, 0, 0, values, packet_id=1)]
    net.send(h1, sent[1])
    (got,) = net.results(h0)
    assert same(got, expected(net, sent)) and got.values == tuple(2 * v for v in values)
