"""Differential fuzzing: the native engine against the Python engine, the reference.

Random and mutated packets interleaved with random table, register and PRE operations go
through both engines (each on its own pipeline built from the same program with the same
seed); every answer (the frames sent, or the control-plane error) and, at the end, every
register and counter must be identical.
"""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.native.build import compiler
from p4reduce.switch.native.select import make_switch

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "dataplane"))

from differential import (  # noqa: E402
    Op,
    mutate,
    random_control_op,
    random_profile_op,
    run,
    state,
)

ROOT = Path(__file__).resolve().parents[2]
BMV2 = ROOT / "bmv2_tests"
pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")

# bmv2_tests programs with tables, registers, counters, hashes, checksums and the PRE
BMV2_PROGRAMS = [
    "table_l3_router",
    "table_mixed_keys",
    "table_ternary_prio",
    "table_range_const",
    "table_optional_const",
    "table_lpm",
    "table_action_run",
    "register_control_plane",
    "counter_indexed",
    "hash_crc32",
    "hash_base_max",
    "checksum_ipv4_update",
    "pre_multicast",
    "parser_select_range",
    "parser_header_union",
    "extern_random_fixed",
    "meter_packets",
    "meter_bytes",
    "meter_direct",
    "table_direct_counter",
    "checksum_udp_update",
    "checksum_udp_verify",
    "meta_truncate",
    "extern_digest",
    "hash_custom_defaults",
    # signed int<W> arithmetic, comparisons, shifts, casts, saturation, a signed register
    "arith_cast",
    "arith_saturating",
    "arith_shift",
    "arith_signed_cmp",
    "arith_wrap",
    "register_int16",
    # run-time header stack indexes, lookahead, parser value sets
    "parser_stack",
    "parser_stack_push_pop",
    "err_stack_out_of_bounds",
    "parser_lookahead",
    "parser_value_set",
    # action profiles and selectors (random member, group and entry operations)
    "profile_members",
    "profile_selector",
    # values wider than 64 bits and varbit fields (the multi-word path: cwide.py)
    "arith_wide",
    "hash_identity",
    "parser_varbit",
    "err_header_too_short",
    # overlapping select cases and const entries (first match wins), struct-typed header
    # fields, named extern arguments (issue 32)
    "parser_select_overlap",
    "table_const_overlap",
    "table_entries_priority",
    "header_struct_field",
    "extern_named_args",
]

# bmv2_tests programs that clone, resubmit or recirculate: random clone session operations
# (to a port, to a group, truncated, deleted; groups changed under them) as well
PASSES_PROGRAMS = [
    "clone_e2e",
    "clone_i2e",
    "clone_i2e_field_list",
    "clone_sessions",
    "clone_to_multicast",
    "recirc_basic",
    "recirc_ingress_port",
    "recirc_loop",
    "resubmit_basic",
    "resubmit_egress_view",
    "resubmit_ingress_port",
    "resubmit_twice",
]

# programs written for this test (tests/native/p4/), each aimed at one construct's edges
OWN = Path(__file__).resolve().parent / "p4"
OWN_PROGRAMS = [
    "signed_ops",
    "stack_ops",
    "parser_ops",
    "profile_ops",
    "varbit_wide",
    "wide_tables",
]


def _pair(
    path: Path, options: CompileOptions, seed: int = 0, now: list[int] | None = None
) -> tuple[object, object]:
    """Both engines on one clock: ``now[0]`` microseconds (meters see the same time)."""
    t = now if now is not None else [0]
    py = make_switch(load_pipeline(path, options, seed), "python", clock=lambda: t[0])
    nat = make_switch(load_pipeline(path, options, seed), "native", clock=lambda: t[0], notice=None)
    assert nat.engine == "native", f"{path.name} does not run natively"
    return py, nat


def _corpus(path: Path) -> list[bytes]:
    """The packets of the program's STF test (a starting point for mutations)."""
    stf = path.with_suffix(".stf")
    out = []
    if stf.is_file():
        for line in stf.read_text().splitlines():
            words = line.split()
            if words and words[0] == "packet" and len(words) > 2:
                out.append(bytes.fromhex("".join(words[2:])))
    return out or [bytes(64)]


def _pool(frames: list[bytes]) -> list[int]:
    """Values found in the packets, so random entries sometimes match them."""
    pool = []
    for f in frames:
        for i in range(0, max(len(f) - 8, 0), 2):
            pool.append(int.from_bytes(f[i : i + 8], "big"))
            pool.append(int.from_bytes(f[i : i + 4], "big"))
            pool.append(int.from_bytes(f[i : i + 2], "big"))
    return pool


def _drive(
    py: object,
    nat: object,
    rng: random.Random,
    frames: list[bytes],
    steps: int,
    now: list[int] | None = None,
    clones: bool = False,
) -> None:
    pool = _pool(frames)
    pipeline = py.pipeline  # type: ignore[attr-defined]
    for step in range(steps):
        if now is not None:  # time moves on between steps, by 0 to 50 microseconds
            now[0] += rng.choice([0, 1, 3, 50, rng.randrange(50)])
        if rng.random() < 0.6:
            f = rng.choice(frames)
            op = Op("packet", (rng.randrange(8), f if rng.random() < 0.3 else mutate(rng, f)))
        else:
            op = random_control_op(rng, pipeline, pool, clones)
        a, b = run(py, op), run(nat, op)
        assert a == b, f"step {step}: {op} gave\n python {a}\n native {b}"
        assert repr(py.digests) == repr(nat.digests), f"step {step}: digests differ"  # type: ignore[attr-defined]
    assert state(py) == state(nat)


@pytest.mark.parametrize("name", BMV2_PROGRAMS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_bmv2_programs_agree(name: str, seed: int) -> None:
    path = BMV2 / f"{name}.p4"
    now = [seed % 1000]
    py, nat = _pair(path, CompileOptions(include_dirs=[BMV2]), now=now)
    _drive(py, nat, random.Random(seed), _corpus(path), 150, now)


@pytest.mark.parametrize("name", PASSES_PROGRAMS)
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_clone_resubmit_recirculate_programs_agree(name: str, seed: int) -> None:
    path = BMV2 / f"{name}.p4"
    py, nat = _pair(path, CompileOptions(include_dirs=[BMV2]))
    _drive(py, nat, random.Random(seed), _corpus(path), 120, clones=True)


def _passes_frames(rng: random.Random, n: int) -> list[bytes]:
    """Packets of tests/native/p4/passes_ops.p4 (op, session, fl, grp, port, loops, trunc,
    payload): every request, sessions the control plane knows or not, known and unknown
    field lists, groups, drops, a few passes, now and then a loop to the 1000-pass limit."""
    out = []
    for _ in range(n):
        loops = rng.choice([0, 1, 2, 3, 0x81, 0x82, 0x43]) if rng.random() < 0.97 else 0xFF
        out.append(
            bytes(
                [
                    rng.getrandbits(8),
                    rng.choice([1, 2, 3, 4, 5, 6, 8, 9]),
                    rng.choice([0, 1, 2, 3, 7, 0x81, 0x82]),
                    rng.choice([0, 0, 1, 2, 3]),
                    rng.choice([1, 2, 3, 5, 0x7F, 0]),
                    loops,
                    rng.choice([0, 0, 0, 3, 8, 12, 40]),
                ]
            )
            + bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 1, 9, 30])))
        )
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_passes_program_agrees(seed: int) -> None:
    """tests/native/p4/passes_ops.p4: clones (I2E with a run-time field list index, plain,
    clone3; E2E), resubmits and recirculations (field lists and data), multicast, drops and
    truncation combined, with clone sessions and groups changed at random between packets."""
    path = OWN / "passes_ops.p4"
    py, nat = _pair(path, CompileOptions(include_dirs=[BMV2]))
    rng = random.Random(seed)
    for sw in (py, nat):  # a start: some sessions and groups exist
        sw.pre.mirroring_add(1, 4)  # type: ignore[attr-defined]
        sw.pre.mirroring_add(2, 5, 9)  # type: ignore[attr-defined]
        sw.pre.set_group(2, [(1, 1), (2, 1), (3, 2)])  # type: ignore[attr-defined]
        sw.pre.mirroring_add_mc(3, 2)  # type: ignore[attr-defined]
    _drive(py, nat, rng, _passes_frames(rng, 24), 150, clones=True)


def _edge_frames(rng: random.Random, n: int, length: int) -> list[bytes]:
    """Frames of the bytes where arithmetic has its edges (0, 0x7f, 0x80, 0xff) and of small
    numbers (stack indexes, operation codes, bottom-of-stack bits)."""
    edges = [0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x7F, 0x80, 0xFF, 0xFE]
    return [
        bytes(
            rng.choice(edges) if rng.random() < 0.7 else rng.getrandbits(8) for _ in range(length)
        )
        for _ in range(n)
    ]


@pytest.mark.parametrize("name", OWN_PROGRAMS)
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_own_programs_agree(name: str, seed: int) -> None:
    path = OWN / f"{name}.p4"
    py, nat = _pair(path, CompileOptions(include_dirs=[BMV2]))
    rng = random.Random(seed)
    _drive(py, nat, rng, _edge_frames(rng, 12, 48), 200)


@pytest.mark.parametrize("program", ["dense", "sparse"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_aggregation_programs_agree(program: str, seed: int) -> None:
    """Legitimate aggregation traffic for two jobs, mutated packets and random control."""
    import fabric

    fabs = []
    for engine in ("python", "native"):
        fabric.ENGINE["name"] = engine
        try:
            fab = fabric.Fabric(program, seed=5)
        finally:
            fabric.ENGINE["name"] = "python"
        fab.flood_group([1, 2, 3, 4, 5])
        fab.add_job(job_id=7, index=1, n=3, base=0, count=4, ports=[1, 2, 3])
        fab.add_job(job_id=8, index=2, n=2, base=4, count=2, ports=[4, 5])
        fab.add_route("10.9.0.0", 16, 6, "02:00:00:00:00:aa", "02:00:00:00:00:bb")
        fabs.append(fab)
    assert fabs[1].switch.engine == "native"
    rng = random.Random(seed)
    frames = []
    for job in fabs[0].jobs:
        for w in job.workers:
            for slot in range(job.count):
                for set_ in (0, 1):
                    vals = [rng.getrandbits(31) for _ in range(fabs[0].k)]
                    frames.append(w.packet(slot, set_, vals if rng.random() < 0.8 else None))
    legit = list(frames)
    py, nat = fabs[0].switch, fabs[1].switch
    pool = _pool(legit[:4])
    for step in range(300):
        r = rng.random()
        if r < 0.55:
            op = Op("packet", (rng.randint(1, 6), rng.choice(legit)))
        elif r < 0.85:
            op = Op("packet", (rng.randint(0, 7), mutate(rng, rng.choice(legit))))
        else:
            op = random_control_op(rng, py.pipeline, pool)
        a, b = run(py, op), run(nat, op)
        assert a == b, f"step {step}: {op.kind} gave\n python {a}\n native {b}"
    assert state(py) == state(nat)


def test_rng_streams_agree() -> None:
    """random() draws the same values natively (Python's Mersenne Twister, same seed)."""
    path = BMV2 / "extern_random_fixed.p4"
    py, nat = _pair(path, CompileOptions(include_dirs=[BMV2]), seed=1234)
    frames = _corpus(path)
    for i in range(50):
        f = frames[i % len(frames)]
        assert py.process(1, f) == nat.process(1, f)  # type: ignore[attr-defined]


DSTS = [0x0A0000000001, 0x0A0000000002, 0x0A0000000003]


def _profile_frames(rng: random.Random, n: int) -> list[bytes]:
    """Frames for profile_ops.p4: a few destination MACs (the ecmp table's exact key), IPv4
    or not (the l4 header and so the selector's field list), random sources and ports."""
    out = []
    for _ in range(n):
        eth = rng.choice(DSTS).to_bytes(6, "big") + rng.randbytes(6)
        eth += rng.choice([0x0800, 0x0800, 0x86DD]).to_bytes(2, "big")
        out.append(eth + rng.randbytes(5) + rng.randbytes(rng.choice([0, 7])))
    return out


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1))
def test_profiles_agree(seed: int) -> None:
    """Random member, group and entry operations on action profiles and selectors (members
    added, replaced, deleted; groups with repeated members, emptied, deleted; entries moved
    between members, groups and direct actions; custom CRC parameters of a selector) and
    packets: every answer and the direct counters agree."""
    path = OWN / "profile_ops.p4"
    now = [seed % 1000]
    py, nat = _pair(path, CompileOptions(include_dirs=[BMV2]), now=now)
    rng = random.Random(seed)
    frames = _profile_frames(rng, 16)
    pool = DSTS * 4 + [0x0800, 0x86DD] + [int.from_bytes(f[6:12], "big") for f in frames]
    pipeline = py.pipeline  # type: ignore[attr-defined]
    for step in range(300):
        now[0] += rng.choice([0, 1, 3, 50])  # the direct meter's clock, shared by both
        r = rng.random()
        if r < 0.5:
            f = rng.choice(frames)
            op = Op("packet", (rng.randrange(4), f if r < 0.45 else mutate(rng, f)))
        elif r < 0.85:
            op = random_profile_op(rng, pipeline, pool)  # type: ignore[assignment]
        else:
            op = random_control_op(rng, pipeline, pool)
        a, b = run(py, op), run(nat, op)
        assert a == b, f"step {step}: {op} gave\n python {a}\n native {b}"
    assert state(py) == state(nat)
