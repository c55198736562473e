"""A leaf-spine network of p4reduce switches on the embedded V1Switch: R ToR switches, each
with its rack's workers, under one spine, configured as docs/protocol.md ("Hierarchical
aggregation") says, with every link modelled as a FIFO whose packets a test may drop.

Expected values are computed from the protocol (wrapping int32 sums, maxima, ORs, minima),
never from a switch's output; frames are encoded with tests/dataplane/fabric.py's encoders.
"""

from __future__ import annotations

import random
import sys
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dataplane"))

from fabric import (  # noqa: E402
    AGG_HEADER,
    AGG_PORT,
    FLAG_NO_PAYLOAD,
    PROGRAMS,
    Agg,
    compiled,
    decode_agg,
    ip2int,
    mac2int,
    ones_complement_checksum,
    parse_frame,
    udp_frame,
)
from p4reduce.switch.interp.builder import build_pipeline  # noqa: E402
from p4reduce.switch.interp.matches import Exact  # noqa: E402
from p4reduce.switch.native.select import make_switch  # noqa: E402

T_SWITCH_IPV4 = "SwitchIngress.local_address.switch_ipv4"
T_WORKERS = "SwitchIngress.admission.workers"
T_REPLICAS = "SwitchEgress.replica.replicas"
T_UPLINK = "SwitchIngress.dispatch.uplink"
C_JOB = "SwitchIngress.stats.job_counters"

EV_COMPLETION, EV_RETRANSMIT, EV_CONTRIBUTION, EV_DUPLICATE = 1, 2, 3, 4
EV_UP, EV_UP_RETRANSMIT, EV_DOWN = 5, 6, 7
UPLINK_PORT = 20  # every ToR's port towards the spine
SPINE_IP, SPINE_MAC = "10.0.0.1", "02:00:00:00:00:01"
JOB_ID, JOB_KEY, SLOTS = 39, 0x39C0FFEE, 4
# per switch, a different job index, slot base and group: only the job id and key are shared
SPINE_INDEX, SPINE_BASE = 3, 100
TOR_INDEX, TOR_BASE = 5, 200

# a link: ("host-tor" | "tor-host", global rank) or ("tor-spine" | "spine-tor", rack)
Link = tuple[str, int]


def tor_ip(rack: int) -> str:
    return f"10.0.{rack + 1}.254"


def tor_mac(rack: int) -> str:
    return f"02:00:00:00:{rack + 1:02x}:fe"


@dataclass(frozen=True)
class Host:
    rank: int  # the global rank in the job (what its packets carry)
    rack: int
    local: int  # its index in the rack: its bit in the ToR's bitmap, its ToR port - 1
    mac: str
    ip: str
    udp: int

    @property
    def port(self) -> int:
        return self.local + 1


@dataclass
class Switch:
    name: str
    ip: str
    mac: str
    pipeline: object
    switch: object

    def counter(self, index: int, event: int) -> int:
        return self.pipeline.counters[C_JOB].cp_read(index * 16 + event)[0]  # type: ignore[attr-defined]


@dataclass
class TreeNet:
    program: str
    racks: int
    per_rack: int
    engine: str
    seed: int = 0
    drop: Callable[[Link, bytes], bool] = lambda link, frame: False
    spine: Switch = field(init=False)
    tors: list[Switch] = field(init=False)
    hosts: list[Host] = field(init=False)
    inbox: dict[int, list[bytes]] = field(init=False)  # per global rank, frames received

    def __post_init__(self) -> None:
        self.msg_type = PROGRAMS[self.program]
        c = compiled(self.program)
        rnd = random.Random(self.seed)
        self.hosts = [
            Host(r * self.per_rack + w, r, w, f"02:00:00:01:{r:02x}:{w:02x}",
                 f"10.0.{r + 1}.{w + 1}", 40000 + r * self.per_rack + w)
            for r in range(self.racks) for w in range(self.per_rack)
        ]  # fmt: skip
        self.inbox = {h.rank: [] for h in self.hosts}

        def new(name: str, ip: str, mac: str) -> Switch:
            p = build_pipeline(c.checked, c.name, random.Random(rnd.random()))
            sw = Switch(name, ip, mac, p, make_switch(p, self.engine, notice=None))
            p.tables[T_SWITCH_IPV4].add_entry(
                [Exact(ip2int(ip))], "SwitchIngress.local_address.is_switch", [mac2int(mac)]
            )
            return sw

        # the spine: an ordinary job whose workers are the ToRs (rank = rack, port rack + 1)
        self.spine = new("spine", SPINE_IP, SPINE_MAC)
        st = self.spine.pipeline.tables  # type: ignore[attr-defined]
        for r in range(self.racks):
            st[T_WORKERS].add_entry(
                [Exact(JOB_ID), Exact(ip2int(tor_ip(r))), Exact(AGG_PORT)],
                "SwitchIngress.admission.admit",
                [SPINE_INDEX, r, self.racks, 1 << r, SPINE_BASE, SLOTS, 256 + SPINE_INDEX,
                 JOB_KEY],
            )  # fmt: skip
            st[T_REPLICAS].add_entry(
                [Exact(SPINE_INDEX), Exact(r)],
                "SwitchEgress.replica.to_worker",
                [mac2int(tor_mac(r)), ip2int(tor_ip(r)), AGG_PORT],
            )
        self._group(self.spine, 256 + SPINE_INDEX, [(r, r + 1) for r in range(self.racks)])
        # the ToRs: the rack's workers, the spine as the job's parent, the uplink
        self.tors = []
        for r in range(self.racks):
            tor = new(f"tor{r}", tor_ip(r), tor_mac(r))
            tt = tor.pipeline.tables  # type: ignore[attr-defined]
            rack = [h for h in self.hosts if h.rack == r]
            for h in rack:
                tt[T_WORKERS].add_entry(
                    [Exact(JOB_ID), Exact(ip2int(h.ip)), Exact(h.udp)],
                    "SwitchIngress.admission.admit",
                    [TOR_INDEX, h.rank, self.per_rack, 1 << h.local, TOR_BASE, SLOTS,
                     256 + TOR_INDEX, JOB_KEY],
                )  # fmt: skip
                tt[T_REPLICAS].add_entry(
                    [Exact(TOR_INDEX), Exact(h.rank)],
                    "SwitchEgress.replica.to_worker",
                    [mac2int(h.mac), ip2int(h.ip), h.udp],
                )
            tt[T_WORKERS].add_entry(
                [Exact(JOB_ID), Exact(ip2int(SPINE_IP)), Exact(AGG_PORT)],
                "SwitchIngress.admission.admit_parent",
                [TOR_INDEX, self.per_rack, TOR_BASE, SLOTS, 256 + TOR_INDEX, JOB_KEY],
            )
            tt[T_UPLINK].add_entry(
                [Exact(TOR_INDEX)],
                "SwitchIngress.dispatch.to_parent",
                [UPLINK_PORT, mac2int(SPINE_MAC), ip2int(SPINE_IP), r],
            )
            self._group(tor, 256 + TOR_INDEX, [(h.rank, h.port) for h in rack])
            self.tors.append(tor)

    @staticmethod
    def _group(sw: Switch, mgid: int, nodes: Sequence[tuple[int, int]]) -> None:
        pre = sw.switch.pre  # type: ignore[attr-defined]
        pre.mgrp_create(mgid)
        for rid, port in nodes:
            pre.node_associate(mgid, pre.node_create(rid, [port]))

    @property
    def engines(self) -> set[str]:
        return {s.switch.engine for s in [self.spine, *self.tors]}  # type: ignore[attr-defined]

    # ------------------------------------------------------------ packets
    def agg(self, h: Host, slot: int, set_: int, values: Sequence[int] | None, **kw: int) -> Agg:
        flags = 0 if values is not None else FLAG_NO_PAYLOAD
        return Agg(self.msg_type, flags, h.rank, JOB_ID, set_, slot,
                   values=None if values is None else tuple(values), key=JOB_KEY, **kw)  # fmt: skip

    def frame(self, h: Host, agg: Agg) -> bytes:
        return udp_frame(
            eth_dst=tor_mac(h.rack), eth_src=h.mac, ip_src=h.ip, ip_dst=tor_ip(h.rack),
            sport=h.udp, dport=AGG_PORT, payload=agg.encode(),
        )  # fmt: skip

    def send(self, h: Host, agg: Agg) -> None:
        """``h`` sends ``agg``; every packet it causes is delivered (or dropped) in FIFO order
        per link until the network is quiet."""
        self.run([(("host-tor", h.rank), self.frame(h, agg))])

    def run(self, pending: list[tuple[Link, bytes]]) -> None:
        queue: deque[tuple[Link, bytes]] = deque(pending)
        while queue:
            link, frame = queue.popleft()
            if self.drop(link, frame):
                continue
            kind, who = link
            if kind == "host-tor":
                h = self.hosts[who]
                out = self.tors[h.rack].switch.process(h.port, frame)  # type: ignore[attr-defined]
                queue.extend(self._from_tor(h.rack, out))
            elif kind == "tor-spine":
                out = self.spine.switch.process(who + 1, frame)  # type: ignore[attr-defined]
                for port, f in out:
                    queue.append((("spine-tor", port - 1), f))
            elif kind == "spine-tor":
                out = self.tors[who].switch.process(UPLINK_PORT, frame)  # type: ignore[attr-defined]
                queue.extend(self._from_tor(who, out))
            else:
                self.inbox[who].append(frame)

    def _from_tor(self, rack: int, out: list[tuple[int, bytes]]) -> list[tuple[Link, bytes]]:
        links: list[tuple[Link, bytes]] = []
        for port, f in out:
            if port == UPLINK_PORT:
                links.append((("tor-spine", rack), f))
            else:
                links.append((("tor-host", rack * self.per_rack + port - 1), f))
        return links

    def results(self, h: Host) -> list[Agg]:
        """The results ``h`` received so far (each frame checked against "Frame layout" for
        a result from its ToR), emptying its inbox."""
        out = []
        for raw in self.inbox[h.rank]:
            f = parse_frame(raw)
            assert (f.eth_src, f.eth_dst) == (tor_mac(h.rack), h.mac), (f.eth_src, f.eth_dst)
            assert (f.ip_src, f.ip_dst) == (tor_ip(h.rack), h.ip), (f.ip_src, f.ip_dst)
            assert (f.sport, f.dport, f.ttl, f.ident, f.udp_csum) == (AGG_PORT, h.udp, 64, 0, 0)
            assert f.ip_len == len(raw) - 14 and f.udp_len == len(raw) - 34
            assert ones_complement_checksum(raw[14:34]) == 0, "IPv4 checksum"
            agg = decode_agg(f.payload)
            assert len(f.payload) == AGG_HEADER + (0 if agg.values is None else 4 * len(agg.values))
            out.append(agg)
        self.inbox[h.rank].clear()
        return out
