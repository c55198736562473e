"""Oracle cases for p4src/dense.p4 and sparse.p4 and for the IPv4 router.

The aggregation set-up is tests/dataplane/stf_gen.py's (static_config, job_config), its
text parsed back into control operations; packets are built with fabric.py's encoders,
mostly well-formed aggregation packets of the configured workers with random fields.
"""

from __future__ import annotations

from bmv2_oracle import Case, Cli, Entry, Op, Target
from case_gen import IN_PORTS, Draw, mutate, random_ops, seed_ops
from fabric import (
    AGG_PORT,
    MSG_DENSE,
    MSG_SPARSE,
    NEXT_END,
    SWITCH_IP,
    SWITCH_MAC,
    Agg,
    arp_frame,
    udp_frame,
)
from p4reduce.switch.interp.builder import Pipeline
from p4reduce.switch.interp.matches import Exact, Lpm
from stf_gen import Host, Stf, job_config, static_config, to_switch

INT32 = (-(2**31), 2**31 - 1)


def agg_seed(
    target: Target, pipe: Pipeline, d: Draw, taken: set[tuple[str, object]]
) -> tuple[list[Op], list[tuple[int, bytes]]]:
    k = int(dict(target.defines).get("K", "64"))
    msg = MSG_DENSE if target.path.stem == "dense" else MSG_SPARSE
    s = Stf("oracle", target.path.stem, "oracle case")
    static_config(s)
    n = d.int(1, 3)
    hosts = [
        Host(r, IN_PORTS[r + 1], f"02:00:00:00:0{r + 1}:00", f"10.0.1.{r + 1}", 40100 + r)
        for r in range(n)
    ]
    job, index, base, count = d.int(1, 9), d.int(0, 3), d.int(0, 16), d.int(1, 4)
    key = d.int(1, 2**32 - 1)
    job_config(s, job, index, base, count, hosts, key)
    ops, _ = seed_ops(target, pipe, s.text(), d, taken)
    packets: list[tuple[int, bytes]] = []
    sent: list[bytes] = []
    for _ in range(d.int(4, 12)):
        pick = d.int(0, 19)
        h = d.choice(hosts)
        if pick <= 14 or not sent:
            frame = to_switch(h, random_agg(d, k, msg, job, h.rank, count, key, n))
        elif pick <= 16:
            frame = d.choice(sent)  # a retransmission, byte for byte
        elif pick == 17:
            frame = arp_frame(
                d.choice([1, 2]), sha=h.mac, spa=h.ip, tpa=d.choice([SWITCH_IP, "10.0.1.9"])
            )
        else:
            frame = mutate(d, d.choice(sent), sent)
        sent.append(frame)
        packets.append((h.port if d.chance(0.9) else d.choice(IN_PORTS), frame))
    return ops, packets


def random_agg(d: Draw, k: int, msg: int, job: int, rank: int, count: int, key: int, n: int) -> Agg:
    flags = d.choice([0, 0, 0, 2, 4, 8, d.int(0, 15)])
    payload = not flags & 2
    values = None
    if payload:
        kind = d.int(0, 3)
        if kind == 0:
            values = tuple(d.int(-8, 8) for _ in range(k))
        elif kind == 1:
            values = tuple(d.choice([INT32[0], INT32[1], 0, -1, 1]) for _ in range(k))
        else:
            values = tuple(d.int(*INT32) for _ in range(k))
    return Agg(
        d.choice([msg] * 6 + [MSG_DENSE + MSG_SPARSE - msg, 0, 3, d.int(0, 15)]),
        flags,
        rank if d.chance(0.9) else d.int(0, 255),
        job if d.chance(0.9) else d.int(0, 65535),
        d.int(0, 1),
        d.int(0, count - 1) if d.chance(0.85) else d.int(0, 0x7FFF),
        d.int(0, 255),
        d.choice([0, 0, 0, 1, d.int(0, 255)]),
        d.int(0, 2**32 - 1),
        d.choice([0, 1, 2, d.int(0, 2**32 - 1)]),
        d.choice([0, 1, 2, NEXT_END, d.int(0, 2**32 - 1)]),
        values,
        key=key if d.chance(0.9) else d.int(0, 2**32 - 1),
    )


# ---------------------------------------------------------------- IPv4 router
ROUTER_IN = "MyIngress.ipv4_lpm"


def router_case(target: Target, pipe: Pipeline, d: Draw, taken: set[tuple[str, object]]) -> Case:
    ops: list[Op] = []
    addrs = [0x0A000001, 0x0A000102, 0xC0A80001, d.int(0, 2**32 - 1)]
    routes = []
    for _ in range(d.int(1, 4)):
        plen = d.choice([0, 8, 16, 24, 32, d.int(0, 32)])
        dst = d.choice(addrs)
        m = Lpm(dst & (((1 << plen) - 1) << (32 - plen)), plen)
        if (ROUTER_IN, (m,)) in taken:
            continue
        taken.add((ROUTER_IN, (m,)))
        nhop = d.choice(addrs)
        routes.append(nhop)
        ops.append(Entry(ROUTER_IN, (m,), "MyIngress.set_nhop", (nhop, d.int(0, 7)), None))
    for nhop in set(routes):
        ops.append(
            Entry(
                "MyIngress.forward",
                (_exact(nhop),),
                "MyIngress.set_dmac",
                (d.int(0, 2**48 - 1),),
                None,
            )
        )
        taken.add(("MyIngress.forward", (_exact(nhop),)))
    for port in range(8):
        if d.chance(0.7):
            e = (_exact(port),)
            taken.add(("MyEgress.send_frame", e))
            ops.append(
                Entry(
                    "MyEgress.send_frame", e, "MyEgress.rewrite_smac", (d.int(0, 2**48 - 1),), None
                )
            )
    ops += random_ops(d, pipe, [], taken) if d.chance(0.3) else []
    packets = []
    for _ in range(d.int(4, 12)):
        dst = ".".join(str(b) for b in d.choice(addrs).to_bytes(4, "big"))
        pick = d.int(0, 9)
        if pick <= 6:
            frame = udp_frame(
                eth_dst=SWITCH_MAC, eth_src="02:00:00:00:00:01", ip_src="10.9.9.9", ip_dst=dst,
                sport=d.int(0, 65535), dport=d.choice([AGG_PORT, 53, d.int(0, 65535)]),
                payload=d.bytes(d.int(0, 40)), ttl=d.choice([0, 1, 2, 64, 255]),
                ip_csum=None if d.chance(0.8) else d.int(0, 65535),
                version_ihl=0x45 if d.chance(0.9) else d.int(0, 255),
            )  # fmt: skip
        elif pick <= 8:
            frame = arp_frame(d.choice([1, 2, 3]), sha="02:00:00:00:00:01", spa="10.0.0.1", tpa=dst)
        else:
            frame = d.bytes(d.int(1, 60))
        packets.append((d.choice(IN_PORTS), mutate(d, frame, [frame]) if d.chance(0.2) else frame))
    return Case(target, ops, packets)


def _exact(v: int) -> Exact:
    return Exact(v)


__all__ = ["Cli", "agg_seed", "router_case"]
