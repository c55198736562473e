"""The STF tests of the ToR and spine roles (bmv2_tests/p4reduce_{dense,sparse}_{tor,spine})
are current with their generator, tests/stf/tree_stf_gen.py. bmv2_tests/test_stf_suite.py runs
them on both engines, bmv2_tests/test_on_bmv2.py on simple_switch where it is installed."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import tree_stf_gen  # noqa: E402


def test_generated_files_are_current() -> None:
    files = tree_stf_gen.files()
    assert len(files) == 8
    for path, text in files.items():
        assert path.is_file(), f"{path} is missing: run {tree_stf_gen.GENERATOR}"
        assert path.read_text() == text, f"{path} is stale: run {tree_stf_gen.GENERATOR}"


def test_every_role_sends_and_expects() -> None:
    for path, text in tree_stf_gen.files().items():
        if path.suffix == ".stf":
            lines = text.splitlines()
            assert sum(line.startswith("packet ") for line in lines) >= 3, path
            assert sum(line.startswith("expect ") for line in lines) >= 3, path
            if "_tor" in path.name:  # the ToR role: up, again up, down, answered
                assert "SwitchIngress.admission.admit_parent(" in text
                assert "SwitchIngress.dispatch.to_parent(" in text
                assert sum(line.startswith("expect 9 ") for line in lines) == 3
