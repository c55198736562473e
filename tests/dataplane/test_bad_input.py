"""Bad input never changes any job's aggregation state (docs/protocol.md, "Job isolation and
admission"): a wrong length, an unknown type or flag, a bad IPv4 checksum, an unregistered
sender, a wrong job key, a forged rank or an out-of-range slot is dropped, counted under its reason (in the
order of the admission table) and nothing else is touched; the open slot it arrived in
then completes with exactly the legitimate contributions. Packets to the switch that are
not aggregation packets (IPv4 options, fragments, other protocols or ports, a cut header)
are dropped without being counted.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import pytest
from fabric import (
    AGG_PORT,
    EV_BAD_KEY,
    EV_COMPLETION,
    EV_CONTRIBUTION,
    EV_MALFORMED,
    EV_SLOT_RANGE,
    EV_UNKNOWN_SENDER,
    EV_WRONG_RANK,
    FLAG_END,
    FLAG_NO_PAYLOAD,
    FLAG_RESULT,
    FLAG_RETRANSMIT,
    SWITCH_IP,
    SWITCH_MAC,
    Agg,
    Fabric,
    Job,
    check_multicast,
    fix_ip_checksum,
    model_result,
    udp_frame,
)

JOB_A, JOB_B = 21, 22


def values(fab: Fabric, rank: int) -> tuple[int, ...]:
    return tuple(1000 * (rank + 1) + i for i in range(fab.k))


def good(fab: Fabric, a: Job, **kw: object) -> Agg:
    """Worker 1 of job A's contribution to slot 1, set 0 (changes applied)."""
    w = a.workers[1]
    base = w.agg(1, 0, values(fab, 1), exponent=77, packet_id=5, block=1, next=8)
    return replace(base, **kw)


def frame(fab: Fabric, a: Job, agg: Agg | None = None, **kw: object) -> bytes:
    return a.workers[1].frame(agg or good(fab, a), **kw)


def with_byte(data: bytes, offset: int, value: int) -> bytes:
    return data[:offset] + bytes([value]) + data[offset + 1 :]


Case = Callable[[Fabric, Job, Job], bytes]
CASES: dict[str, tuple[Case, int | None, int]] = {
    # ---------------------------------------------------------------- lengths
    "truncated_by_one_byte": (lambda f, a, b: frame(f, a)[:-1], EV_MALFORMED, 1),
    "cut_to_66_bytes_without_flag": (lambda f, a, b: frame(f, a)[:66], EV_MALFORMED, 1),
    "k_minus_1_elements": (
        lambda f, a, b: frame(f, a, good(f, a, values=values(f, 1)[:-1])),
        EV_MALFORMED,
        1,
    ),
    "k_plus_1_elements": (
        lambda f, a, b: frame(f, a, good(f, a, values=values(f, 1) + (7,))),
        EV_MALFORMED,
        1,
    ),
    "one_trailing_byte": (lambda f, a, b: frame(f, a) + b"\0", EV_MALFORMED, 1),
    "four_bytes_of_padding": (lambda f, a, b: frame(f, a) + bytes(4), EV_MALFORMED, 1),
    "no_payload_flag_with_payload": (
        lambda f, a, b: frame(f, a, good(f, a, flags=FLAG_NO_PAYLOAD)),
        EV_MALFORMED,
        1,
    ),
    "no_payload_flag_with_payload_and_short_lengths": (
        lambda f, a, b: frame(f, a, good(f, a, flags=FLAG_NO_PAYLOAD), udp_len=32, ip_len=52),
        EV_MALFORMED,
        1,
    ),
    "payload_missing_without_flag": (
        lambda f, a, b: frame(f, a, good(f, a, values=None, flags=0)),
        EV_MALFORMED,
        1,
    ),
    "header_only_with_full_lengths": (
        lambda f, a, b: frame(
            f, a, good(f, a, values=None), udp_len=32 + 4 * f.k, ip_len=52 + 4 * f.k
        ),
        EV_MALFORMED,
        1,
    ),
    "header_only_plus_one_byte": (
        lambda f, a, b: frame(f, a, good(f, a, values=None)) + b"\0",
        EV_MALFORMED,
        1,
    ),
    "udp_length_minus_1": (
        lambda f, a, b: frame(f, a, udp_len=31 + 4 * f.k),
        EV_MALFORMED,
        1,
    ),
    "udp_length_plus_1": (lambda f, a, b: frame(f, a, udp_len=33 + 4 * f.k), EV_MALFORMED, 1),
    "udp_length_0": (lambda f, a, b: frame(f, a, udp_len=0), EV_MALFORMED, 1),
    "ip_length_minus_1": (lambda f, a, b: frame(f, a, ip_len=51 + 4 * f.k), EV_MALFORMED, 1),
    "ip_length_plus_4": (lambda f, a, b: frame(f, a, ip_len=56 + 4 * f.k), EV_MALFORMED, 1),
    "header_20_bytes_as_before_job_keys": (
        lambda f, a, b: (lambda x: x[:62] + x[66:])(
            frame(f, a, udp_len=28 + 4 * f.k, ip_len=48 + 4 * f.k)
        ),
        EV_BAD_KEY,  # the first 4 payload bytes are read as the key
        1,
    ),
    # ---------------------------------------------------------------- type and flags
    "msg_type_0": (lambda f, a, b: frame(f, a, good(f, a, msg_type=0)), EV_MALFORMED, 1),
    # the dense program refuses sparse messages; the sparse one takes both, refuses 3
    "msg_type_the_program_does_not_take": (
        lambda f, a, b: frame(f, a, good(f, a, msg_type=2 if f.msg_type == 1 else 3)),
        EV_MALFORMED,
        1,
    ),
    "msg_type_15": (lambda f, a, b: frame(f, a, good(f, a, msg_type=15)), EV_MALFORMED, 1),
    "flag_result": (lambda f, a, b: frame(f, a, good(f, a, flags=FLAG_RESULT)), EV_MALFORMED, 1),
    "flag_retransmit": (
        lambda f, a, b: frame(f, a, good(f, a, flags=FLAG_RETRANSMIT)),
        EV_MALFORMED,
        1,
    ),
    "flag_end": (lambda f, a, b: frame(f, a, good(f, a, flags=FLAG_END)), EV_MALFORMED, 1),
    "flag_result_header_only": (
        lambda f, a, b: frame(f, a, good(f, a, values=None, flags=FLAG_RESULT | FLAG_NO_PAYLOAD)),
        EV_MALFORMED,
        1,
    ),
    "flag_end_header_only": (
        lambda f, a, b: frame(f, a, good(f, a, values=None, flags=FLAG_END | FLAG_NO_PAYLOAD)),
        EV_MALFORMED,
        1,
    ),
    "all_flags": (lambda f, a, b: frame(f, a, good(f, a, flags=0xF)), EV_MALFORMED, 1),
    # ---------------------------------------------------------------- IPv4 checksum
    "ip_checksum_off_by_one": (
        lambda f, a, b: (
            lambda x: (
                x[:24] + ((int.from_bytes(x[24:26], "big") + 1) % 65536).to_bytes(2, "big") + x[26:]
            )
        )(frame(f, a)),
        EV_MALFORMED,
        1,
    ),
    "ip_checksum_zero": (lambda f, a, b: frame(f, a, ip_csum=0), EV_MALFORMED, 1),
    "ttl_changed_checksum_stale": (
        lambda f, a, b: with_byte(frame(f, a), 22, 63),
        EV_MALFORMED,
        1,
    ),
    # ---------------------------------------------------------------- unregistered senders
    "unknown_source_ip": (
        lambda f, a, b: frame(f, a, ip_src="10.1.1.99"),
        EV_UNKNOWN_SENDER,
        0,
    ),
    "unknown_source_udp_port": (
        lambda f, a, b: frame(f, a, sport=a.workers[1].udp_port + 1),
        EV_UNKNOWN_SENDER,
        0,
    ),
    "job_id_of_another_job": (
        lambda f, a, b: frame(f, a, good(f, a, job_id=JOB_B)),
        EV_UNKNOWN_SENDER,
        0,
    ),
    "job_id_0": (lambda f, a, b: frame(f, a, good(f, a, job_id=0)), EV_UNKNOWN_SENDER, 0),
    "job_id_65535": (lambda f, a, b: frame(f, a, good(f, a, job_id=65535)), EV_UNKNOWN_SENDER, 0),
    "other_jobs_worker_with_this_job_id": (
        lambda f, a, b: b.workers[0].frame(b.workers[0].agg(1, 0, values(f, 1), job_id=JOB_A)),
        EV_UNKNOWN_SENDER,
        0,
    ),
    "unknown_sender_before_malformed": (
        lambda f, a, b: frame(f, a, good(f, a, msg_type=0), ip_src="10.1.1.99", ip_csum=1),
        EV_UNKNOWN_SENDER,
        0,
    ),
    # ---------------------------------------------------------------- wrong job key
    "key_of_another_job": (lambda f, a, b: frame(f, a, good(f, a, key=b.key)), EV_BAD_KEY, 1),
    "key_0": (lambda f, a, b: frame(f, a, good(f, a, key=0)), EV_BAD_KEY, 1),
    "key_lowest_bit_flipped": (
        lambda f, a, b: frame(f, a, good(f, a, key=a.key ^ 1)),
        EV_BAD_KEY,
        1,
    ),
    "key_highest_bit_flipped": (
        lambda f, a, b: frame(f, a, good(f, a, key=a.key ^ 0x80000000)),
        EV_BAD_KEY,
        1,
    ),
    "key_all_ones": (lambda f, a, b: frame(f, a, good(f, a, key=0xFFFFFFFF)), EV_BAD_KEY, 1),
    "bad_key_before_malformed": (
        lambda f, a, b: frame(f, a, good(f, a, key=b.key, flags=FLAG_RESULT), ip_csum=1),
        EV_BAD_KEY,
        1,
    ),
    "bad_key_before_wrong_rank_and_slot_range": (
        lambda f, a, b: frame(f, a, good(f, a, key=b.key, rank=0, slot=4)),
        EV_BAD_KEY,
        1,
    ),
    "unknown_sender_before_bad_key": (
        lambda f, a, b: frame(f, a, good(f, a, key=b.key), ip_src="10.1.1.99"),
        EV_UNKNOWN_SENDER,
        0,
    ),
    "other_jobs_worker_with_its_own_key_and_this_job_id": (
        lambda f, a, b: b.workers[0].frame(
            b.workers[0].agg(1, 0, values(f, 1), job_id=JOB_A, key=a.key)
        ),
        EV_UNKNOWN_SENDER,
        0,
    ),
    # ---------------------------------------------------------------- forged rank
    "rank_of_another_worker": (lambda f, a, b: frame(f, a, good(f, a, rank=0)), EV_WRONG_RANK, 1),
    "rank_of_the_last_worker": (lambda f, a, b: frame(f, a, good(f, a, rank=2)), EV_WRONG_RANK, 1),
    "rank_31": (lambda f, a, b: frame(f, a, good(f, a, rank=31)), EV_WRONG_RANK, 1),
    "rank_255": (lambda f, a, b: frame(f, a, good(f, a, rank=255)), EV_WRONG_RANK, 1),
    "wrong_rank_before_slot_range": (
        lambda f, a, b: frame(f, a, good(f, a, rank=0, slot=4)),
        EV_WRONG_RANK,
        1,
    ),
    "malformed_before_wrong_rank": (
        lambda f, a, b: frame(f, a, good(f, a, rank=0, flags=FLAG_RESULT)),
        EV_MALFORMED,
        1,
    ),
    # ---------------------------------------------------------------- slot range
    "slot_equal_to_count": (lambda f, a, b: frame(f, a, good(f, a, slot=4)), EV_SLOT_RANGE, 1),
    "slot_count_plus_1_set_1": (
        lambda f, a, b: frame(f, a, good(f, a, slot=5, set=1)),
        EV_SLOT_RANGE,
        1,
    ),
    "slot_0x7fff": (lambda f, a, b: frame(f, a, good(f, a, slot=0x7FFF)), EV_SLOT_RANGE, 1),
    # ---------------------------------------------------------------- not aggregation packets
    "ipv4_options": (
        lambda f, a, b: (
            lambda x: (
                x[:14]
                + bytes([0x46])
                + x[15:16]
                + (len(x) - 14 + 4).to_bytes(2, "big")
                + x[18:34]
                + b"\x01\x01\x01\x00"
                + x[34:]
            )
        )(frame(f, a)),
        None,
        0,
    ),
    "more_fragments": (lambda f, a, b: frame(f, a, flags_frag=0x2000), None, 0),
    "fragment_offset": (lambda f, a, b: frame(f, a, flags_frag=0x0001), None, 0),
    "protocol_tcp": (lambda f, a, b: frame(f, a, proto=6), None, 0),
    "other_udp_port": (lambda f, a, b: frame(f, a, dport=AGG_PORT + 1), None, 0),
    "aggregation_header_cut": (lambda f, a, b: frame(f, a)[:65], None, 0),
    "udp_header_only": (lambda f, a, b: frame(f, a)[:42], None, 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_packet_changes_nothing(program: str, case: str) -> None:
    check_bad_packet(program, case, 64)


# Cases whose bytes depend on K, again on the largest software build (a 4,162-byte frame);
# a few only: each snapshots 2 x 16 M register cells.
K1024_CASES = [
    "k_minus_1_elements", "k_plus_1_elements", "udp_length_plus_1", "ip_length_minus_1",
]  # fmt: skip


@pytest.mark.parametrize("case", K1024_CASES)
def test_bad_packet_changes_nothing_at_k_1024(program: str, case: str) -> None:
    check_bad_packet(program, case, 1024)


def check_bad_packet(program: str, case: str, k: int) -> None:
    build, event, index = CASES[case]
    fab = Fabric(program, k=k)
    a = fab.add_job(job_id=JOB_A, index=1, n=3, base=0, count=4)
    b = fab.add_job(job_id=JOB_B, index=2, n=2, base=4, count=4)
    # open slots in both jobs: worker 0 of each has contributed to slot 1, set 0
    a0 = a.workers[0].agg(1, 0, values(fab, 0), exponent=70, next=9)
    b0 = b.workers[0].agg(1, 0, values(fab, 5), exponent=70, next=9)
    assert fab.send(a.workers[0].port, a.workers[0].frame(a0)) == []
    assert fab.send(b.workers[0].port, b.workers[0].frame(b0)) == []
    before, counters = fab.snapshot(), fab.all_counters()

    bad = build(fab, a, b)
    assert fab.send(a.workers[1].port, bad) == []
    assert fab.changed_cells(before) == {}, "the bad packet changed the aggregation state"
    jobs, egress = fab.all_counters()
    expected = list(counters[0])
    if event is not None:
        expected[index * 16 + event] += 1
    assert list(jobs) == expected
    assert egress == counters[1]

    # the legitimate contributions then complete both slots exactly
    a1 = good(fab, a)
    a2 = a.workers[2].agg(1, 0, values(fab, 2), exponent=71, next=10, packet_id=6)
    assert fab.send(a.workers[1].port, a.workers[1].frame(a1)) == []
    out = fab.send(a.workers[2].port, a.workers[2].frame(a2))
    check_multicast(fab, a, out, model_result(fab, [a0, a1, a2], a2))
    b1 = b.workers[1].agg(1, 0, values(fab, 6))
    out = fab.send(b.workers[1].port, b.workers[1].frame(b1))
    check_multicast(fab, b, out, model_result(fab, [b0, b1], b1))
    assert fab.job_counters(1).get(EV_CONTRIBUTION) == 2
    assert fab.job_counters(1).get(EV_COMPLETION) == 1


def test_cases_build_the_frames_they_claim(program: str) -> None:
    """The bad frames differ from the good one where the case says (guards the table)."""
    fab = Fabric(program)
    a = fab.add_job(job_id=JOB_A, index=1, n=3, base=0, count=4)
    b = fab.add_job(job_id=JOB_B, index=2, n=2, base=4, count=4)
    ok = frame(fab, a)
    assert len(ok) == fab.full_len
    for name, (build, _, _) in CASES.items():
        assert build(fab, a, b) != ok, name
    assert len(CASES["k_minus_1_elements"][0](fab, a, b)) == fab.full_len - 4
    assert len(CASES["ipv4_options"][0](fab, a, b)) == fab.full_len + 4
    assert fix_ip_checksum(CASES["ttl_changed_checksum_stale"][0](fab, a, b)) != ok


@pytest.mark.parametrize("tos_df", [(0, 0x4000), (0xB8, 0), (0x03, 0x4000)])
def test_df_and_dscp_are_accepted_and_dscp_kept(program: str, tos_df: tuple[int, int]) -> None:
    """DF may be set; DSCP/ECN is any value and results carry it unchanged."""
    tos, df = tos_df
    fab = Fabric(program)
    a = fab.add_job(job_id=JOB_A, index=1, n=2, base=0, count=4)
    aggs = [w.agg(0, 0, values(fab, w.rank)) for w in a.workers]
    for w, g in zip(a.workers, aggs, strict=True):
        out = fab.send(w.port, w.frame(g, tos=tos, flags_frag=df))
    check_multicast(fab, a, out, model_result(fab, aggs, aggs[1]), tos=tos)


def test_unknown_sender_reaching_a_foreign_host_port(program: str) -> None:
    """A host that is not a worker of any job cannot touch any slot, whatever it claims."""
    fab = Fabric(program)
    a = fab.add_job(job_id=JOB_A, index=1, n=2, base=0, count=4)
    before = fab.snapshot()
    for rank in range(2):
        for slot in range(4):
            agg = a.workers[rank].agg(slot, 0, values(fab, rank))
            raw = udp_frame(
                eth_dst=SWITCH_MAC,
                eth_src="02:aa:00:00:00:01",
                ip_src="192.168.7.7",
                ip_dst=SWITCH_IP,
                sport=a.workers[rank].udp_port,
                dport=AGG_PORT,
                payload=agg.encode(),
            )
            assert fab.send(a.workers[rank].port, raw) == []
    assert fab.changed_cells(before) == {}
    assert fab.job_counters(0) == {EV_UNKNOWN_SENDER: 8}
    assert fab.job_counters(1) == {}


@pytest.mark.parametrize("version_ihl", [0x65, 0x05, 0xF5])
def test_ipv4_version_other_than_4_is_not_aggregated(program: str, version_ihl: int) -> None:
    fab = Fabric(program)
    a = fab.add_job(job_id=JOB_A, index=1, n=1, base=0, count=4)
    w = a.workers[0]
    before = fab.snapshot()
    out = fab.send(w.port, w.frame(w.agg(0, 0, values(fab, 0)), version_ihl=version_ihl))
    assert out == []
    assert fab.changed_cells(before) == {}
