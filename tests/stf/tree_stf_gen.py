"""Write bmv2_tests/p4reduce_{dense,sparse}_{tor,spine}.stf (and their one-line .p4 wrappers):
the two roles of hierarchical aggregation (docs/protocol.md, "Hierarchical aggregation").

    .venv/bin/python tests/stf/tree_stf_gen.py          # rewrite the files
    .venv/bin/python tests/stf/tree_stf_gen.py --check  # exit 1 if they are not current

As in tests/dataplane/stf_gen.py (whose encoders and helpers this uses), every expected byte
is computed from the protocol (wrapping int32 sums, maxima, ORs, minima), never recorded from
a switch. bmv2_tests/test_stf_suite.py runs the files on both engines of the embedded switch,
bmv2_tests/test_on_bmv2.py on simple_switch.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "dataplane"))

import stf_gen  # noqa: E402
from stf_gen import (  # noqa: E402
    AGG_PORT,
    FLAG_END,
    FLAG_NO_PAYLOAD,
    FLAG_RESULT,
    FLAG_RETRANSMIT,
    MSG_DENSE,
    MSG_SPARSE,
    NEXT_END,
    SWITCH_IP,
    SWITCH_MAC,
    Agg,
    Host,
    K,
    Stf,
    admit_workers,
    describe,
    ip2int,
    job_config,
    mac2int,
    result_to,
    static_config,
    to_switch,
    udp_frame,
    wrapped_sum,
)

GENERATOR = "tests/stf/tree_stf_gen.py"
KEY = 0x7105C0DE
JOB = 39
PARENT_IP, PARENT_MAC = "10.0.0.1", "02:00:00:00:00:01"  # the spine, seen from the ToR
UPLINK_PORT, UP_RANK = 9, 1  # the ToR's port towards the spine, its rank there
TORS = [  # the ToRs, seen from the spine: rank, port, MAC, IPv4, UDP port (AGG_PORT)
    Host(0, 1, "02:00:00:00:01:fe", "10.0.1.254", AGG_PORT),
    Host(1, 2, "02:00:00:00:02:fe", "10.0.2.254", AGG_PORT),
]


class TreeStf(Stf):
    """An STF file of this generator (the header and the wrapper name it)."""

    generator = GENERATOR


def between_switches(agg: Agg, mac: tuple[str, str], ip: tuple[str, str]) -> bytes:
    """A frame between two switches, (source, destination) MACs and IPv4 addresses, as a
    switch sends it: AGG_PORT to AGG_PORT, TTL 64, identification 0, UDP checksum 0."""
    return udp_frame(
        eth_dst=mac[1], eth_src=mac[0], ip_src=ip[0], ip_dst=ip[1], sport=AGG_PORT,
        dport=AGG_PORT, payload=agg.encode(), ttl=64, ident=0, udp_csum=0,
    )  # fmt: skip


def up_to_parent(agg: Agg) -> bytes:
    """The ToR's contribution to the spine (SWITCH_* is the ToR under test)."""
    return between_switches(agg, (SWITCH_MAC, PARENT_MAC), (SWITCH_IP, PARENT_IP))


def down_from_parent(agg: Agg) -> bytes:
    """A result of the spine as it reaches the ToR (the spine's replica rewrite: the ToR's
    MAC, IPv4 address and AGG_PORT)."""
    return between_switches(agg, (PARENT_MAC, SWITCH_MAC), (PARENT_IP, SWITCH_IP))


def role(program: str, name: str, proves: str) -> tuple[Stf, int, bool]:
    """A role's STF file with the static configuration written, its message type, and whether
    that type is sparse."""
    s = TreeStf(f"p4reduce_{program}_{name}", program, proves)
    static_config(s)
    sparse = program == "sparse"
    return s, MSG_SPARSE if sparse else MSG_DENSE, sparse


def tor(program: str) -> Stf:
    s, mt, sparse = role(
        program,
        "tor",
        "the ToR role (docs/protocol.md, 'Hierarchical aggregation'): the local count's "
        "completion sends the partial sum up to the parent as one contribution; a "
        "retransmission while the parent's result is missing sends it up again; the parent's "
        "result is stored and multicast, a second copy of it dropped, and a later "
        "retransmission answered from it; a parent's result for an open cell is dropped",
    )
    w0 = Host(4, 1, "02:00:00:00:01:00", "10.0.1.1", 40104)
    w1 = Host(5, 2, "02:00:00:00:01:01", "10.0.1.2", 40105)
    index, base, count = 5, 16, 4
    mgid = 256 + index
    s.c()
    s.c(
        f"Job id {JOB} = job index {index} here: this rack's 2 workers (n_workers = 2, the local"
        f" count), slots {base}..{base + count - 1}, multicast group {mgid}, job key 0x{KEY:08x}."
    )
    s.c("The workers carry their global ranks (4 and 5: the job has 6 workers in 3 racks); their")
    s.c("bits in this switch's bitmap are their local indexes, 0 and 1.")
    admit_workers(s, JOB, index, base, count, [w0, w1], KEY, [1 << 0, 1 << 1])
    s.c(
        f"The parent: the spine, MAC {PARENT_MAC}, IPv4 {PARENT_IP}, its results from AGG_PORT; "
        f"this switch is rank {UP_RANK} of the spine's job, behind port {UPLINK_PORT}."
    )
    s.raw(
        f"add SwitchIngress.admission.workers hdr.agg.jobId:{JOB} "
        f"hdr.ipv4.srcAddr:0x{ip2int(PARENT_IP):08x} hdr.udp.srcPort:{AGG_PORT} "
        f"SwitchIngress.admission.admit_parent(job_index:{index}, n_workers:2, base:{base}, "
        f"count:{count}, mgid:{mgid}, job_key:0x{KEY:08x})"
    )
    s.raw(
        f"add SwitchIngress.dispatch.uplink job_index:{index} "
        f"SwitchIngress.dispatch.to_parent(port:{UPLINK_PORT}, mac:0x{mac2int(PARENT_MAC):012x}, "
        f"ip:0x{ip2int(PARENT_IP):08x}, rank:{UP_RANK})"
    )
    s.c()
    v0 = tuple(1000 * i - 7 for i in range(K))
    v1 = tuple(2**31 - 1 - i for i in range(K))  # wraps when added to v0
    n0, n1 = (12, 8) if sparse else (0, 0)
    a0 = Agg(mt, 0, 4, JOB, 0, 1, 130, 2, 0x61, 1, n0, v0, key=KEY)
    s.c(f"1. w0: {describe(a0)}  -> absorbed")
    s.packet(w0.port, to_switch(w0, a0))
    a1 = Agg(mt, 0, 5, JOB, 0, 1, 134, 0, 0x61, 1, n1, v1, key=KEY)
    s.c(f"2. w1: {describe(a1)}  -> the local count completes")
    s.packet(w1.port, to_switch(w1, a1))
    partial = wrapped_sum([v0, v1], K)
    nxt = min(n0, n1) if sparse else n1
    up = Agg(mt, 0, UP_RANK, JOB, 0, 1, 134, 2, 0x61, 1, nxt, partial, key=KEY)
    s.c("   sent up out of the uplink port: the partial sum (wrapping), exponent max, nonfinite")
    s.c(f"   OR, {'next min' if sparse else 'next echoed'}, rank {UP_RANK} (this switch's rank at")
    s.c("   the parent), no result flag, from this switch's addresses and AGG_PORT to the")
    s.c(f"   parent's: {describe(up)}")
    s.expect(UPLINK_PORT, up_to_parent(up))
    s.c("3. w0 resends the identical packet: the parent's result is not here yet, so the")
    s.c("   stored partial sum goes up again, unchanged (the lost packet may be on either link")
    s.c("   to the parent)")
    s.packet(w0.port, to_switch(w0, a0))
    s.expect(UPLINK_PORT, up_to_parent(up))
    other = tuple(3 * i for i in range(K))  # the other racks' partial sums, together
    total = wrapped_sum([partial, other], K)
    gnext = 6 if sparse else nxt
    down = Agg(mt, FLAG_RESULT, 0, JOB, 0, 1, 140, 6, 0x61, 1, gnext, total, key=KEY)
    s.c(f"4. The parent's result arrives on the uplink: {describe(down)}")
    s.packet(UPLINK_PORT, down_from_parent(down))
    res = Agg(mt, FLAG_RESULT, 0, JOB, 0, 1, 140, 6, 0x61, 1, gnext, total, key=KEY)
    s.c("   stored in the cell and multicast to the rack, each replica from this switch to its")
    s.c(f"   worker (rank 0: the parent's, as it came): {describe(res)}")
    s.expect(w0.port, result_to(w0, res))
    s.expect(w1.port, result_to(w1, res))
    again = Agg(mt, FLAG_RESULT | FLAG_RETRANSMIT, 1, JOB, 0, 1, 140, 6, 0x61, 1, gnext, total,
                key=KEY)  # fmt: skip
    s.c("5. A second copy of the parent's result (its unicast answer to step 3): the cell holds")
    s.c("   the result already: dropped, nothing out")
    s.packet(UPLINK_PORT, down_from_parent(again))
    s.c("6. w1 resends: answered from the stored result by unicast (RESULT|RETRANSMIT), w1's")
    s.c("   rank; the parent sees nothing")
    s.packet(w1.port, to_switch(w1, a1))
    ans = Agg(mt, FLAG_RESULT | FLAG_RETRANSMIT, 5, JOB, 0, 1, 140, 6, 0x61, 1, gnext, total,
              key=KEY)  # fmt: skip
    s.expect(w1.port, result_to(w1, ans))
    h0 = Agg(mt, FLAG_NO_PAYLOAD, 4, JOB, 0, 2, 120, 0, 0x62, 2, NEXT_END if sparse else 0,
             key=KEY)  # fmt: skip
    s.c(f"7. Slot 2, w0 header-only: {describe(h0)}  -> absorbed")
    s.packet(w0.port, to_switch(w0, h0))
    early = Agg(mt, FLAG_RESULT | FLAG_NO_PAYLOAD, 0, JOB, 0, 2, 120, 0, 0x62, 2, 0, key=KEY)
    s.c("8. A parent's result for slot 2, whose local count is not complete: dropped")
    s.packet(UPLINK_PORT, down_from_parent(early))
    h1 = Agg(mt, FLAG_NO_PAYLOAD, 5, JOB, 0, 2, 125, 0, 0x62, 2, NEXT_END if sparse else 0,
             key=KEY)  # fmt: skip
    s.c(f"9. w1 header-only: {describe(h1)}")
    s.packet(w1.port, to_switch(w1, h1))
    up2 = Agg(mt, FLAG_NO_PAYLOAD, UP_RANK, JOB, 0, 2, 125, 0, 0x62, 2, h1.next, key=KEY)
    s.c("   the local count completes with no payload: a header-only contribution goes up")
    s.c(
        f"   (flags NO_PAYLOAD only, never END: a contribution carries no result flag): {describe(up2)}"
    )
    s.expect(UPLINK_PORT, up_to_parent(up2))
    d2 = Agg(mt, FLAG_RESULT | FLAG_NO_PAYLOAD | (FLAG_END if sparse else 0), 1, JOB, 0, 2, 125,
             0, 0x62, 2, h1.next, key=KEY)  # fmt: skip
    s.c(f"10. The parent's header-only result: {describe(d2)}")
    s.packet(UPLINK_PORT, down_from_parent(d2))
    s.c("   multicast header-only to the rack")
    s.expect(w0.port, result_to(w0, d2))
    s.expect(w1.port, result_to(w1, d2))
    return s


def spine(program: str) -> Stf:
    s, mt, sparse = role(
        program,
        "spine",
        "the spine role (docs/protocol.md, 'Hierarchical aggregation'): an ordinary job whose "
        "workers are the ToR switches (their addresses, AGG_PORT); their partial sums add up, "
        "the result is multicast to the ToRs, a ToR's resent partial sum is answered by unicast",
    )
    job_config(s, JOB, 2, 40, 4, TORS, KEY)
    t0, t1 = TORS
    s.c()
    p0 = tuple(-(2**31) + i for i in range(K))
    p1 = tuple(-5 * i for i in range(K))  # wraps past INT32_MIN
    a0 = Agg(mt, 0, 0, JOB, 1, 3, 131, 1, 0x71, 3, 11 if sparse else 0, p0, key=KEY)
    a1 = Agg(mt, 0, 1, JOB, 1, 3, 129, 4, 0x71, 3, 7 if sparse else 0, p1, key=KEY)
    s.c(f"1. ToR 0's partial sum: {describe(a0)}  -> absorbed")
    s.packet(t0.port, up_from(t0, a0))
    s.c(f"2. ToR 1's partial sum: {describe(a1)}  -> completes")
    s.packet(t1.port, up_from(t1, a1))
    total = wrapped_sum([p0, p1], K)
    res = Agg(mt, FLAG_RESULT, 1, JOB, 1, 3, 131, 5, 0x71, 3, 7 if sparse else 0, total, key=KEY)
    s.c(f"   multicast to both ToRs (to their AGG_PORT): {describe(res)}")
    s.expect(t0.port, result_to(t0, res))
    s.expect(t1.port, result_to(t1, res))
    s.c("3. ToR 0 sends its partial sum again (its result was lost): unicast answer")
    s.packet(t0.port, up_from(t0, a0))
    ans = Agg(mt, FLAG_RESULT | FLAG_RETRANSMIT, 0, JOB, 1, 3, 131, 5, 0x71, 3,
              7 if sparse else 0, total, key=KEY)  # fmt: skip
    s.expect(t0.port, result_to(t0, ans))
    return s


def up_from(t: Host, agg: Agg) -> bytes:
    """A ToR's contribution as it reaches the spine (SWITCH_* is the spine under test)."""
    return between_switches(agg, (t.mac, SWITCH_MAC), (t.ip, SWITCH_IP))


def all_stfs() -> list[Stf]:
    return [tor("dense"), tor("sparse"), spine("dense"), spine("sparse")]


def files() -> dict[Path, str]:
    return stf_gen.files(all_stfs())


if __name__ == "__main__":
    sys.exit(stf_gen.main(sys.argv[1:], files, GENERATOR))
