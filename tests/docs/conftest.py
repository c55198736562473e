"""The doc tests' helpers go on sys.path; the summary line counts what ran and what was
skipped (and why), so the CI log shows how much of the documentation is executed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from docrunner import OUTCOME  # noqa: E402


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not OUTCOME.ran and not OUTCOME.skipped:
        return
    reasons: dict[str, int] = {}
    for reason in OUTCOME.skipped.values():
        reasons[reason] = reasons.get(reason, 0) + 1
    why = "; ".join(f"{n}x {reason}" for reason, n in sorted(reasons.items()))
    terminalreporter.write_line(
        f"docs: {len(OUTCOME.ran)} examples ran, {len(OUTCOME.skipped)} skipped ({why})"
    )
