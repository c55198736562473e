"""p4runtime-shell drives the server: shell_scenarios.py runs in one subprocess with the Python
of the shell's own virtual environment (shell_venv.py; old protobuf, as users have it), each
scenario with its own switch process (switch_agent.py, p4reduce's Python)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from p4rt_client import Compiled
from shell_venv import shell_python

HERE = Path(__file__).parent
SCENARIOS = [
    "setup_and_push",
    "no_pipeline_exits",
    "tables",
    "tables_padded_bytestrings",
    "multicast",
    "clone_sessions",
    "counters",
    "packet_io",
    "profiles_meters_digests",
    "registers_raw_client",
]


@pytest.fixture(scope="module")
def shell_results(compiled: Compiled, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    results = tmp_path_factory.mktemp("shell") / "results.jsonl"
    cmd = [
        shell_python(),
        str(HERE / "shell_scenarios.py"),
        sys.executable,
        str(compiled.p4info_path),
        str(compiled.json_path),
        str(results),
        *SCENARIOS,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    lines = results.read_text().splitlines() if results.exists() else []
    out = {r["name"]: r for r in map(json.loads, lines)}
    out["_process"] = {"rc": proc.returncode, "stderr": proc.stderr[-4000:]}
    return out


@pytest.mark.parametrize("name", SCENARIOS)
def test_shell_scenario(shell_results: dict[str, Any], name: str) -> None:
    r = shell_results.get(name)
    assert r is not None, f"scenario did not run: {shell_results['_process']}"
    assert r["ok"], r["error"]


def test_shell_process_ends_cleanly(shell_results: dict[str, Any]) -> None:
    assert shell_results["_process"]["rc"] == 0, shell_results["_process"]
    threads = shell_results.get("_threads")
    assert threads is not None and threads["ok"], threads
