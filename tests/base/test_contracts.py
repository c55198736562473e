"""The contracts P4, Python and C share come from one file (p4reduce/contracts/spec.py): the
generated copies are fresh, a changed value reaches every copy, and no non-test file spells a
shared value itself."""

from __future__ import annotations

import ast
import dataclasses
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from p4reduce.switch.native.build import compiler

from p4reduce import contracts
from p4reduce.contracts import generate

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / generate.SPEC_PATH
PY = sys.executable


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_generated_files_are_fresh() -> None:
    """Fails when spec.py changed and `python -m p4reduce.contracts` was not run (or a
    generated file was edited by hand)."""
    assert generate.stale(ROOT) == [], "run python -m p4reduce.contracts"
    r = run("-m", "p4reduce.contracts", "--check")
    assert r.returncode == 0, r.stderr


def changed_spec(tmp_path: Path) -> Path:
    """A copy of spec.py with the aggregation port, an event code, CallStats' order and the
    call states' order changed."""
    text = SPEC.read_text()
    edits = [
        ("AGG_PORT = 48864", "AGG_PORT = 40123"),
        ('Event("BAD_KEY", 13,', 'Event("BAD_KEY", 14,'),
        (
            '    "packets_sent",\n    "retransmissions",\n',
            '    "retransmissions",\n    "packets_sent",\n',
        ),
        (
            '("new", "running", "done", "failed", "broken")',
            '("new", "running", "done", "broken", "failed")',
        ),
    ]
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / "spec.py"
    path.write_text(text)
    return path


def test_a_changed_value_reaches_every_copy(tmp_path: Path) -> None:
    spec = changed_spec(tmp_path)
    # the checkout's generated files are now stale: the check names both and fails
    r = run("-m", "p4reduce.contracts", "--check", "--spec", str(spec))
    assert r.returncode == 1
    assert generate.P4_PATH in r.stderr and generate.C_PATH in r.stderr
    # generating into a copy of the tree rewrites both
    tree = tmp_path / "tree"
    for rel in generate.outputs():
        (tree / rel).parent.mkdir(parents=True)
        shutil.copy(ROOT / rel, tree / rel)
    r = run("-m", "p4reduce.contracts", "--spec", str(spec), "--root", str(tree))
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["wrote", generate.P4_PATH, "wrote", generate.C_PATH]
    p4 = (tree / generate.P4_PATH).read_text()
    assert "#define AGG_UDP_PORT 40123" in p4 and "EV_BAD_KEY             = 14;" in p4
    h = (tree / generate.C_PATH).read_text()
    assert "S_RETRANSMISSIONS, S_PACKETS_SENT, S_BYTES_SENT" in h
    assert "ST_NEW, ST_RUNNING, ST_DONE, ST_BROKEN, ST_FAILED" in h
    assert (
        run(
            "-m", "p4reduce.contracts", "--check", "--spec", str(spec), "--root", str(tree)
        ).returncode
        == 0
    )
    # the Python copies import the spec: with the changed one in its place they all follow
    probe = (
        "import importlib.util, sys\n"
        f"s = importlib.util.spec_from_file_location('p4reduce.contracts.spec', {str(spec)!r})\n"
        "m = importlib.util.module_from_spec(s); sys.modules[s.name] = m; s.loader.exec_module(m)\n"
        "from p4reduce.host import wire\n"
        "from p4reduce.host.protocol import native\n"
        "from p4reduce.controller import program\n"
        "from p4reduce.testbed import local\n"
        "print(wire.AGG_PORT, program.AGG_PORT, local.AGG_PORT_POOL[0], program.INGRESS_EVENTS[14],\n"
        "      native._STAT_FIELDS[0], native._STATES[3])\n"
    )
    r = run("-c", probe)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["40123", "40123", "40123", "bad_key", "retransmissions", "broken"]


def test_the_c_header_numbers_what_python_names() -> None:
    """Compile a probe against contracts.h: each enum's value is the name's position in the
    spec's tuple (the C core and Python map states and counters by position)."""
    cc = compiler()  # the one the native builds use (P4REDUCE_CC, CC, cc, gcc)
    if cc is None:
        pytest.skip("no C compiler")
    names = (
        [("ST_", n) for n in contracts.CALL_STATES]
        + [("S_", n) for n in contracts.CALL_STAT_FIELDS]
        + [("Q_", n) for n in contracts.QUANTIZE_MODES]
        + [("D_", n) for n in contracts.DEQUANTIZE_MODES]
        + [("", n) for n in contracts.KERNEL_STATUSES]
    )
    consts = ["HEADER_BYTES", "MSG_DENSE", "MSG_SPARSE", "FLAG_RESULT", "FLAG_NO_PAYLOAD"]
    consts += ["FLAG_RETRANSMIT", "FLAG_END", "NEXT_END", "NF_NAN", "NF_POS_INF", "NF_NEG_INF"]
    prints = [f'printf("%lld\\n", (long long)({p}{n.upper()}));' for p, n in names]
    prints += [f'printf("%lld\\n", (long long)({c}));' for c in consts]
    prints.append('printf("%lld\\n", (long long)S_COUNT);')
    src = (
        '#include <stdio.h>\n#include "contracts.h"\nint main(void) {\n'
        + "\n".join(prints)
        + "\nreturn 0; }\n"
    )
    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "probe.c").write_text(src)
        exe = Path(d) / "probe"
        subprocess.run(
            [cc, "-I", str(ROOT / "host/_engine"), "-o", str(exe), str(Path(d) / "probe.c")],
            check=True,
            timeout=60,
        )
        got = [
            int(v)
            for v in subprocess.run(
                [str(exe)], capture_output=True, text=True, timeout=10, check=True
            ).stdout.split()
        ]
    groups = [contracts.CALL_STATES, contracts.CALL_STAT_FIELDS, contracts.QUANTIZE_MODES]
    groups += [contracts.DEQUANTIZE_MODES, contracts.KERNEL_STATUSES]
    want = [i for g in groups for i in range(len(g))]
    want += [getattr(contracts, c) for c in consts] + [len(contracts.CALL_STAT_FIELDS)]
    assert got == want


def test_callstats_has_one_counter_per_field() -> None:
    from p4reduce.host.protocol.events import CallStats

    assert {f.name for f in dataclasses.fields(CallStats)} == set(contracts.CALL_STAT_FIELDS)


def test_the_event_codes_fit_their_counters() -> None:
    for events, stride in (
        (contracts.INGRESS_EVENTS, contracts.INGRESS_STRIDE),
        (contracts.EGRESS_EVENTS, contracts.EGRESS_STRIDE),
    ):
        codes = [e.code for e in events]
        assert len(set(codes)) == len(codes) and all(0 <= c < stride for c in codes)
        names = [e.name for e in events]
        assert len(set(names)) == len(names)


# the values a file outside the spec must not spell: the aggregation port (decimal and hex)
PORT = re.compile(r"\b48864\b|\b0x[bB][eE][eE]0\b")
SKIP = {"tests", "bmv2_tests"}


def tracked(*patterns: str) -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", *patterns],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if out.returncode != 0:
        pytest.skip("not a git checkout")
    return [Path(p) for p in out.stdout.split()]


def test_no_file_spells_the_aggregation_port() -> None:
    """Python outside tests/ and the spec, and the C sources, name the port through the
    contracts, never as a literal (the P4 copy is generated)."""
    bad = []
    for rel in tracked("*.py", "*.c", "*.h"):
        if rel.parts[0] in SKIP or rel == Path(generate.SPEC_PATH) or not (ROOT / rel).is_file():
            continue
        text = (ROOT / rel).read_text(errors="replace")
        if not PORT.search(text):
            continue
        if rel.suffix == ".py":
            lines = [
                n.lineno
                for n in ast.walk(ast.parse(text, str(rel)))
                if isinstance(n, ast.Constant) and type(n.value) is int and n.value == 48864
            ]
        else:
            lines = [i for i, line in enumerate(text.splitlines(), 1) if PORT.search(line)]
        bad += [f"{rel}:{i}: the aggregation port, not contracts.AGG_PORT" for i in lines]
    assert bad == []


def test_no_file_spells_the_k_choices() -> None:
    """K's choices are contracts.K_CHOICES everywhere outside tests/ (command-line choices,
    option checks), never a tuple literal of their own."""
    want = tuple(contracts.K_CHOICES)
    bad = []
    for rel in tracked("*.py"):
        if rel.parts[0] in SKIP or rel == Path(generate.SPEC_PATH) or not (ROOT / rel).is_file():
            continue
        text = (ROOT / rel).read_text(errors="replace")
        if "1024" not in text:
            continue
        for n in ast.walk(ast.parse(text, str(rel))):
            if isinstance(n, ast.Tuple) and all(isinstance(e, ast.Constant) for e in n.elts):
                if tuple(e.value for e in n.elts) == want:
                    bad.append(f"{rel}:{n.lineno}: K's choices, not contracts.K_CHOICES")
    assert bad == []
