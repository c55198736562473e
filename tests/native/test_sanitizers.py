"""The generated engine under AddressSanitizer and UBSan, fuzzed with malformed packets.

The engine is built with -fsanitize=address,undefined and loaded in a child Python with the
ASan runtime preloaded (a sanitized shared object cannot be loaded otherwise). Any report
aborts the child, which fails the test with the report.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.switch.native.build import compiler

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import logging, random, sys
from pathlib import Path
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
import threading
from p4reduce.switch.interp.matches import Exact, Lpm, Ternary
from p4reduce.switch.native.cprogram import generate
from p4reduce.switch.native.engine import NativeSwitch

root = Path(sys.argv[1])
programs = [
    (root / "p4src" / "dense.p4", [root / "p4src" / "include"]),
    (root / "bmv2_tests" / "table_l3_router.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "parser_header_union.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "meter_bytes.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "meter_direct.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "checksum_udp_update.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "meta_truncate.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "extern_digest.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "hash_custom_defaults.p4", [root / "bmv2_tests"]),
    (root / "tests" / "native" / "p4" / "signed_ops.p4", [root / "bmv2_tests"]),
    (root / "tests" / "native" / "p4" / "stack_ops.p4", [root / "bmv2_tests"]),
    (root / "tests" / "native" / "p4" / "parser_ops.p4", [root / "bmv2_tests"]),
    (root / "tests" / "native" / "p4" / "profile_ops.p4", [root / "bmv2_tests"]),
    # values wider than 64 bits and varbit fields (run-time lengths and bit offsets)
    (root / "tests" / "native" / "p4" / "varbit_wide.p4", [root / "bmv2_tests"]),
    (root / "tests" / "native" / "p4" / "wide_tables.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "err_header_too_short.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "arith_wide.p4", [root / "bmv2_tests"]),
    (root / "bmv2_tests" / "hash_identity.p4", [root / "bmv2_tests"]),
    # clone (I2E, E2E, clone3), resubmit, recirculate, loops to the pass limit
    (root / "tests" / "native" / "p4" / "passes_ops.p4", [root / "bmv2_tests"]),
]


def profiles_churn(pipeline, rng):
    # members replaced, groups (with repeats) rebuilt, entries pointing at members and groups
    for prof in pipeline.profiles.values():
        for mid in range(4):
            action = sorted(prof.tables[0].actions)[mid % len(prof.tables[0].actions)]
            spec = prof.action_spec(action)
            prof.members[mid] = prof.make_member(action, [rng.getrandbits(w) for _, w in spec.params])
        if prof.selector_algo is not None:
            for gid in range(3):
                prof.set_group(gid, [rng.randrange(4) for _ in range(rng.randint(0, 5))])
        for t in prof.tables:
            for _ in range(2):
                ref = {"member": rng.randrange(4)}
                if prof.selector_algo is not None and rng.random() < 0.6:
                    ref = {"group": rng.randrange(3)}
                # all ones and 0x0800: the destination and type of the IPv4 seed below
                k = [Exact(rng.choice([(1 << k.width) - 1, 0x0800, rng.getrandbits(k.width)])
                           & ((1 << k.width) - 1)) if k.match_kind == "exact" else Lpm(0, 0)
                     for k in t.keys]
                if t.needs_priority:
                    k = [Ternary(0, 0) for _ in t.keys]
                try:
                    t.add_entry(k, "", [], 1 if t.needs_priority else None, **ref)
                except Exception:
                    pass

rng = random.Random(7)
total = 0
logging.getLogger("p4reduce.switch").setLevel(logging.ERROR)  # packets that loop are expected
# the ASan builds first, two compilers at a time (build() may run concurrently: each compile
# has its own directory and is renamed into place), so the runs below find them cached
from concurrent.futures import ThreadPoolExecutor
from p4reduce.switch.native.build import build
pipelines = [load_pipeline(path, CompileOptions(include_dirs=inc)) for path, inc in programs]
generated = [generate(p) for p in pipelines]
with ThreadPoolExecutor(2) as pool:
    list(pool.map(lambda g: build(g.source, sanitize=True), generated))
for pipeline, program in zip(pipelines, generated):
    sw = NativeSwitch(pipeline, program, sanitize=True)
    for t in pipeline.tables.values():  # an entry per table so that actions run too
        if t.keys and all(k.match_kind == "exact" for k in t.keys):
            action = sorted(t.actions)[0]
            args = [0] * len(t.actions[action].params)
            try:
                t.add_entry([Exact(0) for _ in t.keys], action, args)
            except Exception:
                pass
    for m in pipeline.meters.values():  # meters with rates, so that buckets run dry
        m.set_all_rates([(0.01, 100), (0.5, 300)])
    for t in pipeline.tables.values():
        for e in t.entries:
            if e.meter is not None:
                e.meter.set_rates([(0.01, 2), (0.5, 5)])
    for vs in pipeline.value_sets.values():  # full value sets, so that matching scans them
        for i in range(vs.size):
            vs.add([(i & ((1 << w) - 1), (1 << w) - 1 - i % 2) for w in vs.widths])
    profiles_churn(pipeline, rng)
    sw.pre.mgrp_create(1)
    sw.pre.node_associate(1, sw.pre.node_create(0, [1, 2, 3]))
    for sid in range(256):  # clone sessions to ports (truncated or not) and to groups
        if sid % 2:
            sw.pre.mirroring_add(sid, sid % 8, (sid * 7) % 50)
        else:
            sw.pre.mirroring_add_mc(sid, 1 if sid % 4 else 65536 + sid)
            sw.pre.set_group(65536 + sid, [(sid % 5, 1), (7, 2)], internal=True)
    seeds = [bytes(rng.getrandbits(8) for _ in range(n)) for n in (0, 1, 13, 14, 33, 34, 42)]
    seeds.append(bytes.fromhex("ffffffffffff020000000001080045000030000100004011") + bytes(40))
    seeds.append(seeds[-1] + bytes(3000))  # payload checksums past their stack buffer
    for i in range(1200):
        f = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(0, 6)):
            if f and rng.random() < 0.7:
                f[rng.randrange(len(f))] = rng.getrandbits(8)
            else:
                f += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 300)))
        if rng.random() < 0.2:
            f = f[: rng.randint(0, len(f))]
        sw.process(rng.randrange(512), bytes(f))
        total += 1
        del sw.digests[:]  # drains the engine's events
        if i % 50 == 49:
            profiles_churn(pipeline, rng)
        if i % 100 == 99:  # entries come and go: direct counter and meter cells are reused
            for t in pipeline.tables.values():
                if t.direct_counter is not None or t.direct_meter is not None:
                    for e in list(t.entries)[: rng.randint(0, 2)]:
                        t.delete_entry(list(e.matches), e.priority if t.needs_priority else None)
                    for _ in range(rng.randint(0, 3)):
                        k = [Exact(rng.getrandbits(k.width)) for k in t.keys]
                        try:
                            t.add_entry(k, sorted(t.actions)[0], [0] * len(t.actions[sorted(t.actions)[0]].params))
                        except Exception:
                            pass
    out = sw.process_batch([(1, bytes(rng.getrandbits(8) for _ in range(60))) for _ in range(50)])
    if pipeline.profiles:
        # packets without the GIL (process_batch releases it) while the control plane
        # rebuilds the profiles: the engine frees the old arrays after each swap
        batch = [(1, rng.choice(seeds)) for _ in range(64)]
        stop = []
        def flood():
            while not stop:
                sw.process_batch(batch)
        th = threading.Thread(target=flood)
        th.start()
        try:
            for _ in range(40):
                profiles_churn(pipeline, rng)
        finally:
            stop.append(1)
            th.join()
    sw.close()
print("fuzzed", total)
"""


def _libasan() -> str | None:
    cc = compiler()
    if cc is None:
        return None
    try:
        path = subprocess.run(
            [cc, "-print-file-name=libasan.so"], capture_output=True, text=True, timeout=60
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return path if path and os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.timeout(900)
def test_malformed_packets_under_asan_and_ubsan(tmp_path: Path) -> None:
    libasan = _libasan()
    if libasan is None:
        pytest.skip("libasan is not available (no C compiler or no sanitizer runtime)")
    env = dict(os.environ)
    env["LD_PRELOAD"] = libasan
    env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1"
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"
    run = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=880,
        env=env,
        check=False,
    )
    report = run.stderr[-4000:]
    assert run.returncode == 0, report
    assert "runtime error" not in run.stderr and "AddressSanitizer" not in run.stderr, report
    assert "fuzzed 22800" in run.stdout
