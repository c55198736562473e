"""A bounded run of the BMv2 differential oracle (bmv2_oracle.py): random cases of every
bmv2_tests program, both aggregation programs at K = 64 and the IPv4 router, each on real
``simple_switch`` and on both embedded engines; outputs, registers and counters must be
identical. Deterministic: every case is drawn from a fixed seed (``CASE_SEED``). Larger
budgets, K = 256 and 1024 and other seeds: ``bench/fuzz_bmv2.py``.

Skipped, in one line, where p4c/BMv2 are not installed.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from p4reduce import p4lang

TOOLS = ("p4c-bm2-ss", "simple_switch", "simple_switch_CLI")
REASON = p4lang.missing_reason(*TOOLS)
CASE_SEED = "oracle-v1"
BUDGET_S = 240.0  # a safety net on a loaded machine (about a minute on an idle one)
WORKERS = 3


@pytest.mark.skipif(bool(REASON), reason=REASON or "-")
def test_bmv2_differential(capsys: pytest.CaptureFixture[str]) -> None:
    from bmv2_oracle import CaseResult, Target, check_case, targets
    from case_gen import RandomDraw, gen_case

    t0 = time.monotonic()
    chosen = targets(ks=(64,))

    def one(target: Target) -> CaseResult | None:
        if time.monotonic() - t0 > BUDGET_S:
            return None  # out of budget: counted and reported below
        return check_case(gen_case(target, RandomDraw(f"{CASE_SEED}:{target.name}")))

    # the BMv2 side of a case is mostly waiting (start-up, packet spacing, the CLI): a few
    # cases at once keep both cores busy
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        results = [r for r in pool.map(one, chosen) if r is not None]
    packets = sum(r.packets for r in results)
    undefined = sum(r.undefined for r in results)
    failures = [d.report() for r in results for d in r.divergences]
    with capsys.disabled():
        print(
            f"\noracle: {len(results)} cases ({len(chosen)} programs), {packets} packets, "
            f"{undefined} invalid-header reads left out, "
            + ("all equal" if not failures else f"{len(failures)} divergence(s)")
            + f" ({time.monotonic() - t0:.0f} s)"
        )
        if len(results) < len(chosen):
            print(f"oracle: out of budget, {len(chosen) - len(results)} programs not run")
    # a machine too loaded to finish in the budget covers fewer programs (said above),
    # but at least half of them, and never fails on a divergence it did not see
    assert 2 * len(results) >= len(chosen), (
        f"only {len(results)} of {len(chosen)} programs within {BUDGET_S:.0f} s"
    )
    assert not failures, "\n\n".join(failures)
