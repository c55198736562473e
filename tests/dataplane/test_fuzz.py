"""Fuzz: thousands of random and mutated packets between the packets of two legitimate jobs'
aggregations; afterwards every legitimate result was exact and the switch never raised.

Each junk packet is classified first by an admission model written from docs/protocol.md
("Frame layout", "Job isolation and admission"): not an aggregation packet (switched by
MAC: flooded unchanged here), addressed to the switch but not aggregation (dropped, not
counted), or an aggregation packet rejected for a reason (dropped, counted under it). A
mutation that the model says is admissible (say a flipped bit in the payload, which no
check covers) would legitimately change the aggregation, so it is not sent. The counters
must then equal the model's prediction exactly, packet for packet.

The legitimate traffic follows the host rules (one packet in flight per worker and slot,
sets flipping, retransmissions identical): besides the contributions, workers retransmit
their latest packet of a slot at random, which must be a dropped duplicate or get a
unicast answer carrying the stored result.
"""

from __future__ import annotations

import random
import struct
from collections import Counter
from dataclasses import dataclass, field

import pytest
from fabric import (
    AGG_HEADER,
    AGG_PORT,
    EV_BAD_KEY,
    EV_COMPLETION,
    EV_CONTRIBUTION,
    EV_DUPLICATE,
    EV_MALFORMED,
    EV_RETRANSMIT,
    EV_SLOT_RANGE,
    EV_UNKNOWN_SENDER,
    EV_WRONG_RANK,
    FLAG_END,
    FLAG_NO_PAYLOAD,
    FLAG_RESULT,
    FLAG_RETRANSMIT,
    INT32_MAX,
    INT32_MIN,
    R_BITMAPS,
    SWITCH_IP,
    Agg,
    Fabric,
    Job,
    Worker,
    check_multicast,
    check_result,
    fix_ip_checksum,
    ip2int,
    ip_bytes,
    model_result,
    ones_complement_checksum,
)

FLOOD_PORTS = [1, 2, 3, 4, 5, 6]
OTHER, TO_SWITCH, ARP = "other", "to_switch", "arp"
JUNK = 10000


def classify(fab: Fabric, raw: bytes) -> str | tuple[int, int] | None:
    """What docs/protocol.md says happens to ``raw``: OTHER / TO_SWITCH / ARP, (job index,
    drop event), or None for an admissible aggregation packet."""
    if len(raw) < 14:
        return OTHER
    ethertype = int.from_bytes(raw[12:14], "big")
    if ethertype == 0x0806:
        return ARP
    if ethertype != 0x0800 or len(raw) < 34:
        return OTHER
    if raw[30:34] != ip_bytes(SWITCH_IP):
        return OTHER
    version, ihl = raw[14] >> 4, raw[14] & 0xF
    flags_frag, proto = int.from_bytes(raw[20:22], "big"), raw[23]
    if version != 4 or ihl != 5 or flags_frag & 0x3FFF or proto != 17 or len(raw) < 42:
        return TO_SWITCH
    sport, dport, udp_len = struct.unpack("!HHH", raw[34:40])
    if dport != AGG_PORT or len(raw) < 42 + AGG_HEADER:
        return TO_SWITCH
    b0, rank, job_id, setslot = struct.unpack("!BBHH", raw[42:48])
    source = (job_id, int.from_bytes(raw[26:30], "big"), sport)
    worker = registry(fab).get(source)
    if worker is None:
        return (0, EV_UNKNOWN_SENDER)
    job = worker.job
    if int.from_bytes(raw[62:66], "big") != job.key:
        return (job.index, EV_BAD_KEY)
    msg_type, flags = b0 >> 4, b0 & 0xF
    has_payload = not flags & FLAG_NO_PAYLOAD
    want_udp = 8 + AGG_HEADER + 4 * fab.k if has_payload else 8 + AGG_HEADER
    if (
        msg_type not in (fab.msg_type, 1)  # the sparse program also takes dense messages
        or flags & (FLAG_RESULT | FLAG_RETRANSMIT | FLAG_END)
        or udp_len != want_udp
        or int.from_bytes(raw[16:18], "big") != want_udp + 20
        or len(raw) != want_udp + 34
        or ones_complement_checksum(raw[14:34]) != 0
    ):
        return (job.index, EV_MALFORMED)
    if rank != worker.rank:
        return (job.index, EV_WRONG_RANK)
    if setslot & 0x7FFF >= job.count:
        return (job.index, EV_SLOT_RANGE)
    return None


def registry(fab: Fabric) -> dict[tuple[int, int, int], Worker]:
    return {(j.job_id, ip2int(w.ip), w.udp_port): w for j in fab.jobs for w in j.workers}


# ------------------------------------------------------------------------ junk generation
FIELDS = {  # name: (offset, size) in the frame
    "ethertype": (12, 2),
    "version_ihl": (14, 1),
    "ip_len": (16, 2),
    "flags_frag": (20, 2),
    "ttl": (22, 1),
    "proto": (23, 1),
    "ip_csum": (24, 2),
    "ip_src": (26, 4),
    "ip_dst": (30, 4),
    "sport": (34, 2),
    "dport": (36, 2),
    "udp_len": (38, 2),
    "type_flags": (42, 1),
    "rank": (43, 1),
    "job_id": (44, 2),
    "set_slot": (46, 2),
    "key": (62, 4),
}


def set_field(raw: bytes, name: str, value: int) -> bytes:
    off, size = FIELDS[name]
    if len(raw) < off + size:
        return raw
    return raw[:off] + (value % (1 << (8 * size))).to_bytes(size, "big") + raw[off + size :]


def mutate(rng: random.Random, fab: Fabric, raw: bytes) -> bytes:
    op = rng.randrange(8)
    if op == 0:  # bit flips anywhere
        b = bytearray(raw)
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == 1:  # bit flips in the headers
        b = bytearray(raw)
        for _ in range(rng.randint(1, 2)):
            i = rng.randrange(min(42 + AGG_HEADER, len(b)))
            b[i] ^= 1 << rng.randrange(8)
        return bytes(b)
    if op == 2:  # truncation
        return raw[: rng.randrange(len(raw))]
    if op == 3:  # extension
        return raw + rng.randbytes(rng.choice([1, 2, 4, rng.randint(1, 300)]))
    if op == 4:  # one field set to a random or a nearby value
        name = rng.choice(list(FIELDS))
        off, size = FIELDS[name]
        old = int.from_bytes(raw[off : off + size], "big") if len(raw) >= off + size else 0
        value = rng.choice([rng.getrandbits(8 * size), old + rng.choice([-1, 1]), 0])
        return set_field(raw, name, value)
    if op == 5:  # the aggregation fields an attacker would forge
        name = rng.choice(["rank", "job_id", "set_slot", "type_flags", "key"])
        if name == "rank":
            value = rng.choice([rng.randrange(8), rng.getrandbits(8)])
        elif name == "job_id":
            value = rng.choice([j.job_id for j in fab.jobs] + [0, rng.getrandbits(16)])
        elif name == "key":  # another job's key, a near miss, or a guess
            own = int.from_bytes(raw[62:66], "big") if len(raw) >= 66 else 0
            value = rng.choice(
                [j.key for j in fab.jobs] + [own ^ (1 << rng.randrange(32)), rng.getrandbits(32)]
            )
        elif name == "set_slot":
            value = rng.choice([rng.randrange(16), rng.getrandbits(16), 0x7FFF])
        else:
            value = (rng.randrange(16) << 4) | rng.randrange(16)
        return set_field(raw, name, value)
    if op == 6:  # lengths
        name = rng.choice(["ip_len", "udp_len"])
        off, _ = FIELDS[name]
        old = int.from_bytes(raw[off : off + 2], "big") if len(raw) >= off + 2 else 0
        return set_field(raw, name, old + rng.choice([-4, -1, 1, 4, 4 * fab.k, -4 * fab.k]))
    return set_field(raw, "ip_csum", rng.getrandbits(16))  # a wrong checksum


def junk(rng: random.Random, fab: Fabric, template: bytes) -> bytes:
    kind = rng.random()
    if kind < 0.08:  # random bytes
        return rng.randbytes(rng.choice([rng.randrange(70), rng.randrange(1200)]))
    if kind < 0.16:  # a well-formed frame to the switch with a random header and payload
        w = rng.choice([w for j in fab.jobs for w in j.workers])
        agg = rng.randbytes(AGG_HEADER)
        payload = agg + rng.randbytes(4 * rng.choice([0, fab.k - 1, fab.k, fab.k + 1]))
        return w.frame(Agg(1, 0, 0, 0, 0, 0), payload=payload)
    raw = template
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if raw:
            raw = mutate(rng, fab, raw)
    if len(raw) >= 34 and rng.random() < 0.5:
        raw = fix_ip_checksum(raw)
    return raw


# ------------------------------------------------------------------------ legitimate traffic
@dataclass
class SlotModel:
    uses: list[list[Agg | None]] = field(default_factory=list)  # per use, per rank
    results: list[Agg | None] = field(default_factory=list)  # the multicast result per use


@dataclass
class Legit:
    fab: Fabric
    rng: random.Random
    slots: dict[tuple[int, int], SlotModel] = field(default_factory=dict)
    last: dict[tuple[int, int, int], int] = field(default_factory=dict)  # (job, slot, rank) -> use
    counts: Counter = field(default_factory=Counter)
    received: Counter = field(default_factory=Counter)  # (job, slot, use, rank) multicasts

    def send(self, w: Worker, slot: int, use: int) -> None:
        """Worker w's packet for use ``use`` of ``slot`` (set = use mod 2)."""
        job = w.job
        m = self.slots.setdefault((job.index, slot), SlotModel())
        while len(m.uses) <= use:
            m.uses.append([None] * job.n)
            m.results.append(None)
        values = (
            None
            if self.rng.random() < 0.2
            else tuple(self.rng.choice([INT32_MIN, INT32_MAX, self.rng.getrandbits(32) - 2**31])
                       for _ in range(self.fab.k))
        )  # fmt: skip
        agg = w.agg(slot, use % 2, values, exponent=self.rng.randrange(256),
                    next=self.rng.getrandbits(32), packet_id=use, block=slot)  # fmt: skip
        m.uses[use][w.rank] = agg
        self.last[(job.index, slot, w.rank)] = use
        out = self.fab.send(w.port, w.frame(agg))
        if all(a is not None for a in m.uses[use]):
            expect = model_result(self.fab, m.uses[use], agg)  # type: ignore[arg-type]
            check_multicast(self.fab, job, out, expect)
            m.results[use] = expect
            for r in range(job.n):
                self.received[(job.index, slot, use, r)] += 1
            self.counts[(job.index, EV_COMPLETION)] += 1
        else:
            assert out == []
            self.counts[(job.index, EV_CONTRIBUTION)] += 1

    def retransmit(self, w: Worker, slot: int) -> None:
        """Worker w resends its latest packet of ``slot``, identical."""
        use = self.last.get((w.job.index, slot, w.rank))
        if use is None:
            return
        m = self.slots[(w.job.index, slot)]
        agg = m.uses[use][w.rank]
        assert agg is not None
        out = self.fab.send(w.port, w.frame(agg))
        if m.results[use] is not None:
            assert [p for p, _ in out] == [w.port]
            contributions = m.uses[use]
            expect = model_result(self.fab, contributions, agg, retransmit=True)  # type: ignore[arg-type]
            check_result(self.fab, out[0][1], w, expect)
            self.counts[(w.job.index, EV_RETRANSMIT)] += 1
        else:
            assert out == []
            self.counts[(w.job.index, EV_DUPLICATE)] += 1


def legit_schedule(rng: random.Random, job: Job, rounds: int) -> list[tuple[Worker, int, int]]:
    """(worker, slot, use): every use of every slot by every worker, in an order the host
    rules allow (a worker's use u + 1 of a slot only after use u's result)."""
    per_slot = []
    for slot in range(job.count):
        seq = []
        for use in range(rounds):
            order = list(job.workers)
            rng.shuffle(order)
            seq += [(w, slot, use) for w in order]
        per_slot.append(seq)
    out = []
    while any(per_slot):
        seq = rng.choice([s for s in per_slot if s])
        out.append(seq.pop(0))
    return out


@pytest.mark.parametrize("program", ["dense", "sparse"])
def test_fuzz_between_legitimate_aggregations(program: str) -> None:
    rng = random.Random(20240611 + len(program))
    fab = Fabric(program, seed=3)
    fab.flood_group(FLOOD_PORTS)
    a = fab.add_job(job_id=1001, index=1, n=3, base=0, count=4, ports=[1, 2, 3])
    b = fab.add_job(job_id=1002, index=2, n=2, base=4, count=2, ports=[4, 5])
    legit = Legit(fab, rng)
    schedule = [legit_schedule(rng, a, 4), legit_schedule(rng, b, 5)]
    steps = []
    while any(schedule):
        s = rng.choice([s for s in schedule if s])
        steps.append(s.pop(0))
    junk_per_step = JUNK // len(steps) + 1

    predicted: Counter = Counter()
    kinds: Counter = Counter()
    skipped_admissible = 0
    sent_junk = 0
    for w, slot, use in steps:
        sent_here = 0
        while sent_here < junk_per_step:
            tw = rng.choice([w for j in fab.jobs for w in j.workers])
            template = tw.packet(
                rng.randrange(tw.job.count),
                rng.randrange(2),
                None if rng.random() < 0.3 else [rng.getrandbits(31)] * fab.k,
            )
            raw = junk(rng, fab, template)
            verdict = classify(fab, raw)
            if verdict is None or verdict == ARP:
                skipped_admissible += verdict is None
                continue
            in_port = rng.choice(FLOOD_PORTS + [9])
            out = fab.send(in_port, raw)
            sent_junk += 1
            sent_here += 1
            if verdict == OTHER:
                kinds[OTHER] += 1
                assert sorted(out) == [(p, raw) for p in FLOOD_PORTS if p != in_port]
            else:
                assert out == [], (verdict, raw.hex())
                if verdict == TO_SWITCH:
                    kinds[TO_SWITCH] += 1
                else:
                    predicted[verdict] += 1
                    kinds[verdict[1]] += 1
        legit.send(w, slot, use)
        if rng.random() < 0.3:  # someone retransmits its latest packet of some slot
            rw = rng.choice(w.job.workers)
            legit.retransmit(rw, rng.randrange(w.job.count))

    assert sent_junk >= JUNK
    # the fuzz reached every rejection class, and both kinds of non-aggregation traffic
    for k in (
        OTHER,
        TO_SWITCH,
        EV_UNKNOWN_SENDER,
        EV_BAD_KEY,
        EV_MALFORMED,
        EV_WRONG_RANK,
        EV_SLOT_RANGE,
    ):
        assert kinds[k] >= 30, (k, kinds)
    # every use of every slot completed once, and every worker got its result once
    for job, rounds in ((a, 4), (b, 5)):
        for slot in range(job.count):
            m = legit.slots[(job.index, slot)]
            assert len(m.results) == rounds and all(r is not None for r in m.results)
            for use in range(rounds):
                for r in range(job.n):
                    assert legit.received[(job.index, slot, use, r)] == 1
    # the counters are exactly the legitimate events plus the predicted rejections
    expected = Counter(legit.counts) + predicted
    jobs, _ = fab.all_counters()
    got = Counter({(i // 16, i % 16): v for i, v in enumerate(jobs) if v})
    assert got == expected
    # nothing outside the two jobs' ranges was ever touched
    regs = fab.pipeline.registers
    assert all(v == 0 for i, v in enumerate(regs[R_BITMAPS].values) if i >= 6)
    for name in fab.state_registers():
        if name != R_BITMAPS:
            assert all(v == 0 for v in regs[name].values[12:]), name
    print(f"junk sent {sent_junk}, admissible mutations skipped {skipped_admissible}, {kinds}")
