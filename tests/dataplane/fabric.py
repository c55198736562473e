"""A test fabric around p4src/dense.p4 and p4src/sparse.p4 on the embedded V1Switch.

Everything here is written from docs/protocol.md, not from the P4 code: the frame encoder
(struct; the IPv4 checksum is our own ones'-complement sum, cross-checked with scapy), the
control-plane calls of "Control-plane interface", and the expected values (wrapping int32
sums computed in Python). Nothing derives an expectation from the switch's own output.

Each program is compiled once per process (``compiled``); every ``Fabric`` builds a fresh
pipeline from it (about 40 ms for K = 64), so registers, counters, tables and the PRE start
empty and the random() of the loss simulator is seeded (``seed``): tests are deterministic.
"""

from __future__ import annotations

import functools
import ipaddress
import operator
import random
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from p4reduce.switch.frontend.compiler import CompiledProgram, CompileOptions, compile_file
from p4reduce.switch.interp.builder import Pipeline, build_pipeline
from p4reduce.switch.interp.matches import Exact, Lpm
from p4reduce.switch.native.select import make_switch

ROOT = Path(__file__).resolve().parents[2]
# the engine every Fabric runs on: set per test by conftest.py's autouse fixture
ENGINE = {"name": "python", "ran": set()}
P4SRC = ROOT / "p4src"

# ---------------------------------------------------------------- numbers of docs/protocol.md
AGG_PORT = 48864
MSG_DENSE, MSG_SPARSE = 1, 2
FLAG_RESULT, FLAG_NO_PAYLOAD, FLAG_RETRANSMIT, FLAG_END = 0x1, 0x2, 0x4, 0x8
NEXT_END = 0xFFFFFFFF
AGG_HEADER = 24
POOL_SLOTS = 8192
PORTS = 512

EV_COMPLETION, EV_RETRANSMIT, EV_CONTRIBUTION, EV_DUPLICATE = 1, 2, 3, 4
EV_UNKNOWN_SENDER, EV_WRONG_RANK, EV_SLOT_RANGE, EV_MALFORMED, EV_LOSS = 8, 9, 10, 11, 12
EV_BAD_KEY = 13
EVENTS = (1, 2, 3, 4, 8, 9, 10, 11, 12, 13)
EG_RESULT_SENT, EG_LOSS, EG_NO_REPLICA = 0, 1, 2
FLOOD_MGID = 1

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1

# ---------------------------------------------------------------- control-plane names
T_SWITCH_IPV4 = "SwitchIngress.local_address.switch_ipv4"
T_ARP = "SwitchIngress.arp.arp_replies"
T_WORKERS = "SwitchIngress.admission.workers"
T_REPLICAS = "SwitchEgress.replica.replicas"
T_ROUTES = "SwitchIngress.forwarding.ipv4_routes"
T_L2 = "SwitchIngress.forwarding.l2_forward"
R_BITMAPS = "SwitchIngress.bitmap.bitmaps"
R_COUNTS = "SwitchIngress.completion.counts"
R_EXPONENTS = "SwitchIngress.exponent.exponents"
R_NEXT_MIN = "SwitchIngress.next_min.next_min"
R_INGRESS_LOSS = "SwitchIngress.loss.ingress_loss"
R_EGRESS_LOSS = "SwitchEgress.loss.egress_loss"
C_JOB = "SwitchIngress.stats.job_counters"
C_EGRESS = "SwitchEgress.stats.egress_counters"

SWITCH_MAC = "02:00:00:00:00:fe"
SWITCH_IP = "10.0.0.254"


def ip2int(ip: str) -> int:
    return int(ipaddress.IPv4Address(ip))


def mac2int(mac: str) -> int:
    return int(mac.replace(":", ""), 16)


def mac_bytes(mac: str) -> bytes:
    return bytes.fromhex(mac.replace(":", ""))


def ip_bytes(ip: str) -> bytes:
    return ipaddress.IPv4Address(ip).packed


def job_key(job_id: int) -> int:
    """The fabric's default key of a job: fixed (tests are deterministic), different for
    every job id, and with bits set in every byte, so a key compared in any part shows."""
    return (0x9E3779B9 * job_id) & 0xFFFFFFFF | 0x01010101


def wrap32(x: int) -> int:
    """x as a two's-complement int32 (modulo 2^32)."""
    return ((x + 2**31) % 2**32) - 2**31


def wrapped_sum(blocks: Iterable[Sequence[int] | None], k: int) -> tuple[int, ...]:
    """Lane-wise sum modulo 2^32 of K-lane blocks; None (header-only) counts as zeros."""
    acc = [0] * k
    for b in blocks:
        if b is None:
            continue
        assert len(b) == k
        for i, v in enumerate(b):
            acc[i] += v
    return tuple(wrap32(v) for v in acc)


# ---------------------------------------------------------------- encoding (docs/protocol.md)
def ones_complement_checksum(data: bytes) -> int:
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


@dataclass(frozen=True)
class Agg:
    """The 24-byte aggregation header and its elements (None: no payload). ``key`` comes
    last (after ``values``) so that positional constructions read in header order up to
    ``next``."""

    msg_type: int
    flags: int
    rank: int
    job_id: int
    set: int
    slot: int
    exponent: int = 0
    nonfinite: int = 0
    packet_id: int = 0
    block: int = 0
    next: int = 0
    values: tuple[int, ...] | None = None
    key: int = 0

    def header(self) -> bytes:
        return struct.pack(
            "!BBHHBBIIII",
            (self.msg_type << 4) | self.flags,
            self.rank,
            self.job_id,
            (self.set << 15) | self.slot,
            self.exponent,
            self.nonfinite,
            self.packet_id,
            self.block,
            self.next,
            self.key,
        )

    def encode(self) -> bytes:
        payload = b"" if self.values is None else struct.pack(f"!{len(self.values)}i", *self.values)
        return self.header() + payload


def decode_agg(data: bytes) -> Agg:
    b0, rank, job, setslot, exp, res, pid, block, nxt, key = struct.unpack(
        "!BBHHBBIIII", data[:AGG_HEADER]
    )
    rest = data[AGG_HEADER:]
    assert len(rest) % 4 == 0, len(rest)
    values = struct.unpack(f"!{len(rest) // 4}i", rest) if rest else None
    return Agg(b0 >> 4, b0 & 0xF, rank, job, setslot >> 15, setslot & 0x7FFF, exp, res, pid,
               block, nxt, values, key)  # fmt: skip


def udp_frame(
    *,
    eth_dst: str,
    eth_src: str,
    ip_src: str,
    ip_dst: str,
    sport: int,
    dport: int,
    payload: bytes,
    ttl: int = 64,
    ident: int = 0,
    tos: int = 0,
    flags_frag: int = 0,
    proto: int = 17,
    version_ihl: int = 0x45,
    ip_len: int | None = None,
    udp_len: int | None = None,
    udp_csum: int = 0,
    ip_csum: int | None = None,
    ethertype: int = 0x0800,
) -> bytes:
    """Ethernet II / IPv4 (20 bytes) / UDP / payload, each field overridable."""
    udp_len = 8 + len(payload) if udp_len is None else udp_len
    ip_len = 20 + 8 + len(payload) if ip_len is None else ip_len
    ip = struct.pack(
        "!BBHHHBBH4s4s",
        version_ihl,
        tos,
        ip_len,
        ident,
        flags_frag,
        ttl,
        proto,
        0,
        ip_bytes(ip_src),
        ip_bytes(ip_dst),
    )
    csum = ones_complement_checksum(ip) if ip_csum is None else ip_csum
    ip = ip[:10] + struct.pack("!H", csum) + ip[12:]
    udp = struct.pack("!HHHH", sport, dport, udp_len, udp_csum)
    eth = mac_bytes(eth_dst) + mac_bytes(eth_src) + struct.pack("!H", ethertype)
    return eth + ip + udp + payload


def arp_frame(
    oper: int,
    *,
    sha: str,
    spa: str,
    tpa: str,
    tha: str = "00:00:00:00:00:00",
    eth_dst: str = "ff:ff:ff:ff:ff:ff",
    eth_src: str | None = None,
    htype: int = 1,
    ptype: int = 0x0800,
    padding: bytes = b"",
) -> bytes:
    """An Ethernet/ARP frame (RFC 826 layout, 28-byte ARP body)."""
    return (
        mac_bytes(eth_dst)
        + mac_bytes(eth_src or sha)
        + b"\x08\x06"
        + struct.pack("!HHBBH", htype, ptype, 6, 4, oper)
        + mac_bytes(sha)
        + ip_bytes(spa)
        + mac_bytes(tha)
        + ip_bytes(tpa)
        + padding
    )


def parse_arp(raw: bytes) -> dict[str, object]:
    htype, ptype, hlen, plen, oper = struct.unpack("!HHBBH", raw[14:22])
    return {
        "eth_dst": _mac_str(raw[0:6]),
        "eth_src": _mac_str(raw[6:12]),
        "ethertype": int.from_bytes(raw[12:14], "big"),
        "htype": htype,
        "ptype": ptype,
        "oper": oper,
        "sha": _mac_str(raw[22:28]),
        "spa": str(ipaddress.IPv4Address(raw[28:32])),
        "tha": _mac_str(raw[32:38]),
        "tpa": str(ipaddress.IPv4Address(raw[38:42])),
        "rest": raw[42:],
    }


def fix_ip_checksum(frame: bytes) -> bytes:
    """Recompute the IPv4 header checksum of an Ethernet/IPv4 frame (20-byte header)."""
    ip = bytearray(frame[14:34])
    ip[10:12] = b"\0\0"
    ip[10:12] = struct.pack("!H", ones_complement_checksum(bytes(ip)))
    return frame[:14] + bytes(ip) + frame[34:]


@dataclass(frozen=True)
class Frame:
    """An Ethernet/IPv4/UDP frame taken apart with struct."""

    raw: bytes
    eth_dst: str
    eth_src: str
    ethertype: int
    version_ihl: int
    tos: int
    ip_len: int
    ident: int
    flags_frag: int
    ttl: int
    proto: int
    ip_csum: int
    ip_src: str
    ip_dst: str
    sport: int
    dport: int
    udp_len: int
    udp_csum: int
    payload: bytes


def _mac_str(b: bytes) -> str:
    return ":".join(f"{x:02x}" for x in b)


def parse_frame(raw: bytes) -> Frame:
    assert len(raw) >= 42, raw.hex()
    (ethertype,) = struct.unpack("!H", raw[12:14])
    vihl, tos, ip_len, ident, ff, ttl, proto, csum, src, dst = struct.unpack(
        "!BBHHHBBH4s4s", raw[14:34]
    )
    sport, dport, udp_len, udp_csum = struct.unpack("!HHHH", raw[34:42])
    return Frame(
        raw,
        _mac_str(raw[0:6]),
        _mac_str(raw[6:12]),
        ethertype,
        vihl,
        tos,
        ip_len,
        ident,
        ff,
        ttl,
        proto,
        csum,
        str(ipaddress.IPv4Address(src)),
        str(ipaddress.IPv4Address(dst)),
        sport,
        dport,
        udp_len,
        udp_csum,
        raw[42:],
    )


def scapy_ip_checksum_ok(raw: bytes) -> bool:
    """Independent check with scapy: the IPv4 checksum scapy computes equals the one sent."""
    from scapy.layers.inet import IP
    from scapy.layers.l2 import Ether

    pkt = Ether(raw)
    sent = pkt[IP].chksum
    ip = pkt[IP].copy()
    del ip.chksum
    return IP(bytes(ip))[IP].chksum == sent


# ---------------------------------------------------------------- the fabric
PROGRAMS = {"dense": MSG_DENSE, "sparse": MSG_SPARSE}


@functools.cache
def compiled(program: str, k: int = 64) -> CompiledProgram:
    defines = {} if k == 64 else {"K": str(k)}
    return compile_file(
        P4SRC / f"{program}.p4", CompileOptions(include_dirs=[P4SRC / "include"], defines=defines)
    )


@dataclass
class Worker:
    fabric: Fabric
    job: Job
    rank: int
    mac: str
    ip: str
    udp_port: int
    port: int  # the switch port it sits behind (its multicast node's port)

    def agg(self, slot: int, set_: int, values: Sequence[int] | None = None, **kw: int) -> Agg:
        """A well-formed contribution; ``values`` None sends a header-only packet."""
        flags = kw.pop("flags", 0 if values is not None else FLAG_NO_PAYLOAD)
        return Agg(
            msg_type=kw.pop("msg_type", self.fabric.msg_type),
            flags=flags,
            rank=kw.pop("rank", self.rank),
            job_id=kw.pop("job_id", self.job.job_id),
            key=kw.pop("key", self.job.key),
            set=set_,
            slot=slot,
            values=None if values is None else tuple(values),
            **kw,
        )

    def frame(self, agg: Agg, **kw: object) -> bytes:
        """The Ethernet/IPv4/UDP frame of ``agg`` from this worker to the switch."""
        args: dict[str, object] = dict(
            eth_dst=SWITCH_MAC,
            eth_src=self.mac,
            ip_src=self.ip,
            ip_dst=SWITCH_IP,
            sport=self.udp_port,
            dport=AGG_PORT,
            payload=agg.encode(),
        )
        args.update(kw)
        return udp_frame(**args)  # type: ignore[arg-type]

    def packet(self, slot: int, set_: int, values: Sequence[int] | None = None, **kw: int) -> bytes:
        return self.frame(self.agg(slot, set_, values, **kw))

    def send(
        self, slot: int, set_: int, values: Sequence[int] | None = None, *, port: int | None = None,
        **kw: int,
    ) -> list[tuple[int, bytes]]:  # fmt: skip
        return self.fabric.send(
            self.port if port is None else port, self.packet(slot, set_, values, **kw)
        )


@dataclass
class Job:
    job_id: int
    index: int
    base: int
    count: int
    mgid: int
    key: int = 0
    workers: list[Worker] = field(default_factory=list)

    @property
    def n(self) -> int:
        return len(self.workers)

    def cells(self) -> range:
        """The pool cells (slot * 2 + set) of this job's range."""
        return range(2 * self.base, 2 * (self.base + self.count))


class Fabric:
    """One switch running a p4reduce program, configured as docs/protocol.md says."""

    def __init__(self, program: str = "dense", k: int = 64, seed: int = 0) -> None:
        c = compiled(program, k)
        assert c.checked is not None
        self.program = program
        self.k = k
        self.msg_type = PROGRAMS[program]
        self.pipeline: Pipeline = build_pipeline(c.checked, c.name, random.Random(seed))
        self.switch = make_switch(self.pipeline, ENGINE["name"], notice=None)
        ENGINE["ran"].add(self.switch.engine)
        self.tables = self.pipeline.tables
        self.jobs: list[Job] = []
        # static config: the switch's own address, answered for ARP too
        self.tables[T_SWITCH_IPV4].add_entry(
            [Exact(ip2int(SWITCH_IP))],
            "SwitchIngress.local_address.is_switch",
            [mac2int(SWITCH_MAC)],
        )
        self.tables[T_ARP].add_entry(
            [Exact(ip2int(SWITCH_IP))], "SwitchIngress.arp.reply", [mac2int(SWITCH_MAC)]
        )

    # sizes of docs/protocol.md, "Frame layout"
    @property
    def full_len(self) -> int:
        return 66 + 4 * self.k

    # ------------------------------------------------------------ control plane
    def add_job(
        self,
        job_id: int,
        index: int,
        n: int,
        base: int,
        count: int,
        ports: Sequence[int] | None = None,
        mgid: int | None = None,
        replicas: Sequence[int] | None = None,
        hosts: Sequence[tuple[str, str, int]] | None = None,
        key: int | None = None,
    ) -> Job:
        """A job as the controller creates it: workers + replicas entries and the PRE group
        256 + index with one node (rid = rank, [port]) per worker. ``replicas`` limits the
        ranks that get a replicas entry; ``hosts`` gives (mac, ip, udp_port) per rank;
        ``key`` is the job key (default: a fixed value per job id, distinct between jobs)."""
        mgid = 256 + index if mgid is None else mgid
        key = job_key(job_id) if key is None else key
        ports = list(ports) if ports is not None else [10 * index + r + 1 for r in range(n)]
        job = Job(job_id, index, base, count, mgid, key)
        for r in range(n):
            if hosts is not None:
                mac, ip, udp = hosts[r]
            else:
                mac, ip, udp = (
                    f"02:00:00:00:{index:02x}:{r:02x}",
                    f"10.1.{index}.{r + 1}",
                    (40000 + 100 * index + r),
                )
            job.workers.append(Worker(self, job, r, mac, ip, udp, ports[r]))
        for w in job.workers:
            self.tables[T_WORKERS].add_entry(
                [Exact(job_id), Exact(ip2int(w.ip)), Exact(w.udp_port)],
                "SwitchIngress.admission.admit",
                [index, w.rank, n, 1 << w.rank, base, count, mgid, key],
            )
            if replicas is None or w.rank in replicas:
                self.tables[T_REPLICAS].add_entry(
                    [Exact(index), Exact(w.rank)],
                    "SwitchEgress.replica.to_worker",
                    [mac2int(w.mac), ip2int(w.ip), w.udp_port],
                )
        self.switch.pre.mgrp_create(mgid)
        for w in job.workers:
            self.switch.pre.node_associate(mgid, self.switch.pre.node_create(w.rank, [w.port]))
        self.jobs.append(job)
        return job

    def flood_group(self, ports: Sequence[int]) -> None:
        """FLOOD_MGID = 1: every host port, rid 0."""
        self.switch.pre.mgrp_create(FLOOD_MGID)
        self.switch.pre.node_associate(FLOOD_MGID, self.switch.pre.node_create(0, list(ports)))

    def set_loss(self, side: str, port: int, threshold: int) -> None:
        reg = R_INGRESS_LOSS if side == "ingress" else R_EGRESS_LOSS
        self.pipeline.registers[reg].cp_write(port, threshold)

    def add_route(self, prefix: str, plen: int, port: int, src_mac: str, dst_mac: str) -> None:
        self.tables[T_ROUTES].add_entry(
            [Lpm(ip2int(prefix), plen)],
            "SwitchIngress.forwarding.route",
            [port, mac2int(src_mac), mac2int(dst_mac)],
        )

    def add_route_drop(self, prefix: str, plen: int) -> None:
        self.tables[T_ROUTES].add_entry(
            [Lpm(ip2int(prefix), plen)], "SwitchIngress.forwarding.drop", []
        )

    def add_l2(self, mac: str, action: str, args: Sequence[int] = ()) -> None:
        self.tables[T_L2].add_entry(
            [Exact(mac2int(mac))], f"SwitchIngress.forwarding.{action}", list(args)
        )

    # ------------------------------------------------------------ data plane
    def send(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        return self.switch.process(port, frame)

    # ------------------------------------------------------------ state
    def job_counter(self, index: int, event: int) -> int:
        return self.pipeline.counters[C_JOB].cp_read(index * 16 + event)[0]

    def egress_counter(self, index: int, event: int) -> int:
        return self.pipeline.counters[C_EGRESS].cp_read(index * 4 + event)[0]

    def job_counters(self, index: int) -> dict[int, int]:
        """The non-zero events of a job index."""
        c = self.pipeline.counters[C_JOB]
        return {e: c.packets[index * 16 + e] for e in range(16) if c.packets[index * 16 + e]}

    def egress_counters(self, index: int) -> dict[int, int]:
        c = self.pipeline.counters[C_EGRESS]
        return {e: c.packets[index * 4 + e] for e in range(4) if c.packets[index * 4 + e]}

    def all_counters(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (
            tuple(self.pipeline.counters[C_JOB].packets),
            tuple(self.pipeline.counters[C_EGRESS].packets),
        )

    def state_registers(self) -> list[str]:
        """The aggregation state: bitmaps, counts, exponents, next_min and the lanes."""
        return [n for n in self.pipeline.registers if ".loss." not in n]

    def snapshot(self) -> dict[str, list[int]]:
        return {n: list(self.pipeline.registers[n].values) for n in self.state_registers()}

    def changed_cells(self, before: dict[str, list[int]]) -> dict[str, list[int]]:
        """Per register, the indexes whose value differs from ``before``."""
        out = {}
        for n, old in before.items():
            new = list(self.pipeline.registers[n].values)
            if new == old:
                continue  # compared in C: most registers are untouched (K = 1024: 16 M cells)
            diff = [i for i, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
            if diff:
                out[n] = diff
        return out

    def lanes(self, cell: int) -> tuple[int, ...]:
        regs = self.pipeline.registers
        return tuple(
            wrap32(regs[f"SwitchIngress.accumulate.acc{i}"].cp_read(cell)) for i in range(self.k)
        )


# ---------------------------------------------------------------- checking results
def expected_flags(*, retransmit: bool, payload: bool, end: bool) -> int:
    f = FLAG_RESULT
    if retransmit:
        f |= FLAG_RETRANSMIT
    if not payload:
        f |= FLAG_NO_PAYLOAD
    if end:
        f |= FLAG_END
    return f


def check_result(fabric: Fabric, raw: bytes, to: Worker, expect: Agg, *, tos: int = 0) -> Frame:
    """Assert that ``raw`` is exactly the result ``expect`` addressed to ``to``, with every
    header field docs/protocol.md fixes for results (the caller checks the port)."""
    f = parse_frame(raw)
    has_payload = expect.values is not None
    full = fabric.full_len if has_payload else 14 + 20 + 8 + AGG_HEADER
    assert len(raw) == full, ("frame length", len(raw), full)
    assert f.eth_dst == to.mac, ("Ethernet destination", f.eth_dst, to.mac)
    assert f.eth_src == SWITCH_MAC, ("Ethernet source", f.eth_src)
    assert f.ethertype == 0x0800, ("EtherType", f.ethertype)
    assert f.version_ihl == 0x45, ("version/IHL", f.version_ihl)
    assert f.tos == tos, ("DSCP/ECN", f.tos, tos)
    assert f.ip_len == full - 14, ("IPv4 length", f.ip_len)
    assert f.ident == 0, ("identification", f.ident)
    assert f.flags_frag & 0x3FFF == 0, ("MF/offset", f.flags_frag)
    assert f.ttl == 64, ("TTL", f.ttl)
    assert f.proto == 17, ("protocol", f.proto)
    assert ones_complement_checksum(raw[14:34]) == 0, "IPv4 checksum"
    assert scapy_ip_checksum_ok(raw), "IPv4 checksum (scapy)"
    assert f.ip_src == SWITCH_IP, ("IPv4 source", f.ip_src)
    assert f.ip_dst == to.ip, ("IPv4 destination", f.ip_dst, to.ip)
    assert f.sport == AGG_PORT, ("UDP source port", f.sport)
    assert f.dport == to.udp_port, ("UDP destination port", f.dport, to.udp_port)
    assert f.udp_len == full - 34, ("UDP length", f.udp_len)
    assert f.udp_csum == 0, ("UDP checksum", f.udp_csum)
    got = decode_agg(f.payload)
    assert got == expect, f"\n got    {got}\n expect {expect}"
    return f


def result_agg(
    fabric: Fabric,
    job: Job,
    *,
    rank: int,
    slot: int,
    set_: int,
    values: tuple[int, ...] | None,
    exponent: int = 0,
    packet_id: int = 0,
    block: int = 0,
    next_: int = 0,
    nonfinite: int = 0,
    retransmit: bool = False,
) -> Agg:
    """The result docs/protocol.md prescribes (flags derived from the arguments)."""
    end = fabric.msg_type == MSG_SPARSE and next_ == NEXT_END
    return Agg(
        fabric.msg_type,
        expected_flags(retransmit=retransmit, payload=values is not None, end=end),
        rank,
        job.job_id,
        set_,
        slot,
        exponent,
        nonfinite,
        packet_id,
        block,
        next_,
        values,
        job.key,
    )


def by_port(out: list[tuple[int, bytes]]) -> dict[int, bytes]:
    d: dict[int, bytes] = {}
    for port, data in out:
        assert port not in d, f"two packets out of port {port}"
        d[port] = data
    return d


def check_multicast(
    fabric: Fabric, job: Job, out: list[tuple[int, bytes]], expect: Agg, tos: int = 0
) -> None:
    """One replica per worker of ``job``, each addressed to that worker."""
    ports = by_port(out)
    assert sorted(ports) == sorted(w.port for w in job.workers), sorted(ports)
    for w in job.workers:
        check_result(fabric, ports[w.port], w, expect, tos=tos)


def model_result(
    fabric: Fabric, contributions: Sequence[Agg], trigger: Agg, *, retransmit: bool = False
) -> Agg:
    """The result of a cell whose admitted, distinct contributions are ``contributions``, as
    the packet ``trigger`` (the completing one, or a retransmission) carries it out: lanes
    summed modulo 2^32 (header-only = zeros; none with a payload = no payload), the maximum
    exponent, the OR of the ``nonfinite`` bytes, the minimum ``next`` (sparse) or the
    trigger's (dense), the trigger's rank, packetId and block."""
    assert contributions
    payload = any(c.values is not None for c in contributions)
    values = wrapped_sum((c.values for c in contributions), fabric.k) if payload else None
    exponent = max(c.exponent for c in contributions)
    next_ = min(c.next for c in contributions) if fabric.msg_type == MSG_SPARSE else trigger.next
    job = next(j for j in fabric.jobs if j.job_id == trigger.job_id)
    return result_agg(
        fabric,
        job,
        rank=trigger.rank,
        slot=trigger.slot,
        set_=trigger.set,
        values=values,
        exponent=exponent,
        packet_id=trigger.packet_id,
        block=trigger.block,
        next_=next_,
        nonfinite=functools.reduce(operator.or_, (c.nonfinite for c in contributions)),
        retransmit=retransmit,
    )
