"""test_on_bmv2.py's runs in the background, and the line the CI log needs about them.

The BMv2 runs (a few seconds each, mostly waiting) start as soon as the session has collected
its tests, and the tests that read their results go to the end of the session, so the runs
overlap the other tests instead of holding the session up.

test_on_bmv2.py skips every case where p4c and BMv2 are not installed, which a green run
hides; the summary line says how many passed, failed or were skipped (and why).
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

BMV2_TEST = "test_on_bmv2.py::test_stf_on_bmv2["
_outcomes: Counter[str] = Counter()
_skip_reasons: Counter[str] = Counter()
_runs: Any = None  # test_on_bmv2.RUNS, once started


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    bmv2 = [i for i in items if BMV2_TEST in i.nodeid]
    items[:] = [i for i in items if BMV2_TEST not in i.nodeid] + bmv2


def pytest_collection_finish(session: pytest.Session) -> None:
    global _runs
    # the cases left after selection (-k, node ids), in the order they will be read
    bmv2 = [i for i in session.items if BMV2_TEST in i.nodeid]
    if bmv2 and not session.config.option.collectonly:
        _runs = bmv2[0].module.RUNS  # type: ignore[attr-defined]
        _runs.start([i.callspec.params["name"] for i in bmv2])  # type: ignore[attr-defined]


def pytest_sessionfinish() -> None:
    if _runs is not None:
        _runs.stop()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if BMV2_TEST not in report.nodeid:
        return
    if report.when == "call" or (report.when == "setup" and not report.passed):
        _outcomes[report.outcome] += 1
        if report.skipped and isinstance(report.longrepr, tuple):
            reason = str(report.longrepr[2]).removeprefix("Skipped: ")
            _skip_reasons[re.split(r" \(|:", reason, maxsplit=1)[0]] += 1  # its first clause


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _outcomes:
        return
    line = f"bmv2: {_outcomes['passed']} STF tests passed on simple_switch"
    if _outcomes["failed"]:
        line += f", {_outcomes['failed']} failed"
    if _outcomes["skipped"]:
        why = "; ".join(f"{n} {r}" for r, n in _skip_reasons.most_common())
        line += f", {_outcomes['skipped']} skipped ({why})"
    terminalreporter.write_line(line)
