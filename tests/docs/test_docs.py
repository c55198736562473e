"""Executable documentation: every example of README.md and docs/*.md runs as written
(tests/docs/docblocks.py says what an example is and how its marker says to run it), so a
doc that drifts from the code fails here. One test per example, or per group of examples
that share a scratch directory and background processes (a walkthrough)."""

from __future__ import annotations

from pathlib import Path

import pytest
from docblocks import Block, blocks, documents
from docrunner import OUTCOME, ROOT, DocError, Scratch, run_block


def units() -> list[list[Block]]:
    """The examples, one list per test: a group's blocks together, in file order."""
    out: list[list[Block]] = []
    groups: dict[tuple[Path, str], list[Block]] = {}
    for doc in documents(ROOT):
        for block in blocks(doc):
            group = block.option("group")
            if group is None:
                out.append([block])
            elif (doc, group) in groups:
                groups[(doc, group)].append(block)
            else:
                groups[(doc, group)] = [block]
                out.append(groups[(doc, group)])
    return out


UNITS = units()


def _id(unit: list[Block]) -> str:
    group = unit[0].option("group")
    return f"{unit[0].path.name}:{group}" if group else unit[0].where


@pytest.mark.parametrize("unit", UNITS, ids=[_id(u) for u in UNITS])
def test_example(unit: list[Block], tmp_path: Path) -> None:
    first = unit[0]
    if len(unit) == 1 and "skip" in first.options:
        OUTCOME.skipped[first.where] = str(first.option("skip"))
        pytest.skip(f"{first.where}: {first.option('skip')}")
    stamp = (ROOT / ".venv" / ".installed").stat().st_mtime_ns
    with Scratch(tmp_path) as scratch:
        for block in unit:
            if "skip" in block.options:
                OUTCOME.skipped[block.where] = str(block.option("skip"))
                continue
            failure = ""
            try:
                run_block(block, scratch)
            except DocError as exc:
                failure = str(exc)
            if failure:
                hint = "" if block.marked else (
                    "\n(an unmarked example runs as written: fix it, or say before its fence "
                    "how it runs, e.g. <!-- doctest: skip: needs root -->; tests/docs/docblocks.py)"
                )  # fmt: skip
                pytest.fail(failure + hint, pytrace=False)
            OUTCOME.ran.append(block.where)
    # a reinstall from the scratch directory would point the shared .venv's scripts there
    assert (ROOT / ".venv" / ".installed").stat().st_mtime_ns == stamp, ".venv was reinstalled"
