"""Differential fuzzing against real BMv2: random cases on ``simple_switch`` and on both
embedded engines, for as long as the budget allows (tests/oracle/bmv2_oracle.py).

    .venv/bin/python bench/fuzz_bmv2.py --budget 600 [--program NAME]... [--k 64,256,1024]
                                        [--seed S] [--shrink SECONDS] [--json]
                                        [--hypothesis N]

Programs are taken round-robin (every bmv2_tests program, dense.p4 and sparse.p4 at each
K, the IPv4 router; ``--program`` keeps those whose name contains NAME); case i of a
program is drawn from the seed ``S:NAME:i``, so a run is reproducible. Each divergence is
printed with the program, the case (control commands and packets) and both outputs, after
a greedy shrink (packets, then control operations, dropped while it still diverges) for
at most ``--shrink`` seconds. ``--hypothesis N`` draws N cases per program through Hypothesis
instead (seeded by ``--seed``), which shrinks a diverging case itself. Exit status 1 when a divergence was found, 2 when p4c/BMv2
are missing.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "oracle"), str(ROOT / "tests" / "dataplane")]

from bmv2_oracle import EXCLUDED, Case, Divergence, Target, check_case, targets  # noqa: E402
from bmv2_run import Bmv2Error  # noqa: E402
from case_gen import RandomDraw, gen_case  # noqa: E402

from p4reduce import p4lang  # noqa: E402


def shrink(case: Case, budget_s: float) -> tuple[Case, list[Divergence]]:
    """Drop packets, then control operations, one at a time while the case still diverges."""
    deadline = time.monotonic() + budget_s
    best = check_case(case).divergences
    for field in ("packets", "ops"):
        i = len(getattr(case, field)) - 1
        while i >= 0 and time.monotonic() < deadline:
            items = getattr(case, field)
            trial = Case(case.target, list(case.ops), list(case.packets))
            setattr(trial, field, items[:i] + items[i + 1 :])
            try:
                divs = check_case(trial).divergences
            except Bmv2Error:
                divs = []
            if divs:
                case, best = trial, divs
            i -= 1
    return case, best


def hypothesis_search(target: Target, examples: int, seed: int) -> list[Divergence]:
    """Up to ``examples`` Hypothesis-drawn cases of ``target``; on a divergence Hypothesis
    shrinks the case (each step a BMv2 run) and the smallest one's divergences come back."""
    from case_gen import HypothesisDraw
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import seed as hseed
    from hypothesis import strategies as st

    last: list[Divergence] = []

    @hseed(seed)
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.data())
    def prop(data: st.DataObject) -> None:
        result = check_case(gen_case(target, HypothesisDraw(data)))
        if result.divergences:
            last[:] = result.divergences
            raise AssertionError("diverges")

    try:
        prop()
    except AssertionError:
        return last
    return []


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--budget", type=float, default=300.0, help="seconds (default 300)")
    ap.add_argument("--program", action="append", default=[], help="name filter (repeatable)")
    ap.add_argument("--k", default="64,256,1024", help="K of the aggregation programs")
    ap.add_argument("--seed", default="fuzz", help="seed prefix (default 'fuzz')")
    ap.add_argument("--shrink", type=float, default=60.0, help="seconds per divergence")
    ap.add_argument("--json", action="store_true", help="print the outcome as JSON")
    ap.add_argument(
        "--hypothesis",
        type=int,
        metavar="N",
        default=0,
        help="instead: N Hypothesis-drawn cases per program, shrunk by Hypothesis on a divergence",
    )
    args = ap.parse_args(argv)
    missing = p4lang.missing_reason("p4c-bm2-ss", "simple_switch", "simple_switch_CLI")
    if missing:
        print(f"fuzz_bmv2: error: {missing}", file=sys.stderr)
        return 2
    ks = tuple(int(k) for k in args.k.split(","))
    chosen: list[Target] = [
        t for t in targets(ks) if not args.program or any(p in t.name for p in args.program)
    ]
    if not chosen:
        print("fuzz_bmv2: error: no program matches --program", file=sys.stderr)
        return 2
    t0 = time.monotonic()
    if args.hypothesis:
        found_h = 0
        for target in chosen:
            if time.monotonic() - t0 > args.budget:
                break
            for d in hypothesis_search(target, args.hypothesis, zlib.crc32(args.seed.encode())):
                found_h += 1
                print(d.report(), flush=True)
        print(f"fuzz_bmv2 --hypothesis: {found_h} divergence(s), {time.monotonic() - t0:.0f} s")
        return 1 if found_h else 0
    cases = packets = undefined = errors = 0
    found: list[dict[str, object]] = []
    i = 0
    while time.monotonic() - t0 < args.budget:
        target = chosen[i % len(chosen)]
        n = i // len(chosen)
        i += 1
        case = gen_case(target, RandomDraw(f"{args.seed}:{target.name}:{n}"))
        try:
            result = check_case(case)
        except Bmv2Error as e:
            errors += 1
            print(f"{target.name} case {n}: BMv2 run failed: {e}", file=sys.stderr)
            continue
        cases += 1
        packets += result.packets
        undefined += result.undefined
        if result.divergences:
            small, divs = shrink(result.divergences[0].case, args.shrink)
            for d in divs or result.divergences:
                found.append(
                    {"program": target.name, "engine": d.engine, "case": n, "what": d.what,
                     "inputs": small.describe()}
                )  # fmt: skip
                if not args.json:
                    print(Divergence(small, d.engine, d.what).report(), flush=True)
    summary = {
        "cases": cases,
        "packets": packets,
        "programs": len(chosen),
        "divergences": found,
        "invalid_header_reads_left_out": undefined,
        "bmv2_errors": errors,
        "seconds": round(time.monotonic() - t0, 1),
        "excluded": EXCLUDED,
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"fuzz_bmv2: {cases} cases over {len(chosen)} programs, {packets} packets compared, "
            f"{len(found)} divergence(s), {undefined} invalid-header reads left out, "
            f"{errors} BMv2 failures, {summary['seconds']} s"
        )
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
