"""``p4reduce-p4c --target-profile tofino``: Tofino's hardware rules (docs/p4src.md, 'Tofino's rules').

``tofino_programs/good/*.p4`` keep every rule. Each ``tofino_programs/bad/*.p4`` breaks exactly
one, on the line that ends with ``// expect-error: PHRASE`` (PHRASE is part of the message), and
is otherwise a valid v1model program: it compiles without the profile, so the checks are the
profile's own. Each bad program is checked through ``compile_file`` and through the command
line (in-process ``main`` and, once, the installed ``p4reduce-p4c`` script).

The ``arith_divide*``/``arith_modulo*`` programs divide by run-time values or constants that
are not powers of two, which p4c refuses for BMv2 as well (bmv2rules.py, first); they are
compiled with ``--runtime-divmod`` so that rule 4's own check is what reports them.
"""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from p4reduce.switch.frontend import cli, tofino
from p4reduce.switch.frontend.compiler import CompileOptions, compile_file
from p4reduce.switch.frontend.errors import CompileError

PROGRAMS = Path(__file__).parent / "tofino_programs"
GOOD = sorted((PROGRAMS / "good").glob("*.p4"))
BAD = sorted((PROGRAMS / "bad").glob("*.p4"))

MARKER = re.compile(r"//\s*expect-error:\s*(?P<phrase>.*?)\s*$")

# Every rule has at least one bad program; the file names start with the rule's prefix.
RULE_PREFIXES = (
    "loop_for",
    "loop_parser",
    "register_two_reads",
    "register_two_writes",
    "register_index_mismatch",
    "register_two_gresses",
    "register_two_instances",
    "register_param_shared",
    "register_wide_cell",
    "arith_multiply",
    "arith_divide",
    "arith_modulo",
    "parse_budget",
)


# Programs whose division the BMv2 rule refuses unless --runtime-divmod is given.
DIVMOD_PREFIXES = ("arith_divide", "arith_modulo")


def needs_divmod(path: Path) -> bool:
    return path.stem.startswith(DIVMOD_PREFIXES)


def divmod_args(path: Path) -> list[str]:
    return ["--runtime-divmod"] if needs_divmod(path) else []


@dataclass
class Run:
    code: int
    out: str
    err: str


def run_cli(args: list[str]) -> Run:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return Run(code, out.getvalue(), err.getvalue())


def expectation(path: Path) -> tuple[int, str]:
    """(line, phrase) from the program's one ``// expect-error: PHRASE`` marker."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [(no, m["phrase"]) for no, text in enumerate(lines, 1) if (m := MARKER.search(text))]
    assert len(found) == 1, f"{path.name}: needs exactly one '// expect-error: PHRASE' marker"
    return found[0]


def compile_tofino(path: Path):
    return compile_file(
        path, CompileOptions(target_profile="tofino", runtime_divmod=needs_divmod(path))
    )


# ------------------------------------------------------------------ the corpus


def test_every_rule_has_a_bad_program() -> None:
    names = [p.stem for p in BAD]
    for prefix in RULE_PREFIXES:
        assert any(n.startswith(prefix) for n in names), f"no bad program for {prefix}"
    assert len(GOOD) >= 2


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_program_is_well_formed(path: Path) -> None:
    assert path.read_text(encoding="utf-8").startswith("// Rule "), (
        f"{path.name}: line 1 must say which rule the program breaks"
    )
    expectation(path)


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_good_program_keeps_the_tofino_rules(path: Path) -> None:
    result = compile_tofino(path)
    assert "tofino" in result.timings


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
@pytest.mark.parametrize("profile", [None, "bmv2", "v1model"])
def test_bad_program_compiles_without_the_profile(path: Path, profile: str | None) -> None:
    result = compile_file(
        path, CompileOptions(target_profile=profile, runtime_divmod=needs_divmod(path))
    )
    assert "tofino" not in result.timings


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_program_is_rejected_by_compile_file(path: Path) -> None:
    line, phrase = expectation(path)
    with pytest.raises(CompileError) as info:
        compile_tofino(path)
    err = info.value
    assert err.pos.file == str(path), err
    assert err.pos.line == line, f"reported on line {err.pos.line}, expected {line}: {err}"
    assert phrase in err.message, f"{phrase!r} not in {err.message!r}"


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_program_is_rejected_by_the_command_line(path: Path) -> None:
    line, phrase = expectation(path)
    run = run_cli([str(path), "--target-profile", "tofino", *divmod_args(path)])
    assert run.code == 1, run
    first, source, *rest = run.err.splitlines()
    assert first.startswith(f"{path}({line}): error: "), first
    assert phrase in first
    assert source == path.read_text(encoding="utf-8").splitlines()[line - 1]
    assert not rest, run.err
    assert "Traceback" not in run.err


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_program_passes_the_command_line_without_the_profile(
    path: Path, tmp_path: Path
) -> None:
    run = run_cli([str(path), "-o", str(tmp_path), *divmod_args(path)])
    assert run.code == 0, run.err
    assert (tmp_path / f"{path.stem}.json").exists()


@pytest.mark.parametrize("path", [p for p in BAD if needs_divmod(p)], ids=lambda p: p.stem)
def test_without_the_option_the_bmv2_rule_reports_the_division_first(path: Path) -> None:
    line, _ = expectation(path)
    with pytest.raises(CompileError) as info:
        compile_file(path, CompileOptions(target_profile="tofino"))
    assert info.value.pos.line == line
    assert info.value.message.endswith("could not evaluate expression at compilation time")


def test_installed_script_reports_the_line() -> None:
    script = shutil.which("p4reduce-p4c", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("p4reduce-p4c is not installed next to this Python")
    path = PROGRAMS / "bad" / "arith_multiply.p4"
    line, phrase = expectation(path)
    done = subprocess.run(
        [script, "--target-profile", "tofino", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"{path}({line}): error: operator *: {phrase}")


# ------------------------------------------------------------------ details of the rules


def _budget_program(tmp_path: Path, second_bits: int) -> Path:
    """parse_budget.p4 with the blob's second field resized: 112 + 2048 + second_bits."""
    text = (PROGRAMS / "bad" / "parse_budget.p4").read_text(encoding="utf-8")
    assert "bit<2048> second;" in text
    path = tmp_path / f"budget_{second_bits}.p4"
    path.write_text(text.replace("bit<2048> second;", f"bit<{second_bits}> second;"))
    return path


def test_parse_budget_is_inclusive(tmp_path: Path) -> None:
    assert tofino.PARSE_BUDGET_BITS == 4096
    exactly = 4096 - 112 - 2048
    at_budget = _budget_program(tmp_path, exactly)
    compile_file(at_budget, CompileOptions(target_profile="tofino"))
    over = _budget_program(tmp_path, exactly + 8)
    with pytest.raises(CompileError) as info:
        compile_file(over, CompileOptions(target_profile="tofino"))
    assert "4104 bits (513 bytes)" in info.value.message
    assert "budget of 4096 bits (512 bytes)" in info.value.message
    assert "start -> parse_blob -> accept" in info.value.message


@pytest.mark.parametrize(
    ("cell", "ok"),
    [
        ("bit<1>", True),
        ("bit<32>", True),
        ("int<16>", True),
        ("bit<64>", True),
        ("bit<33>", False),
        ("bit<48>", False),
        ("int<64>", True),
        ("bit<128>", False),
    ],
)
def test_register_cell_widths(tmp_path: Path, cell: str, ok: bool) -> None:
    text = (PROGRAMS / "bad" / "register_wide_cell.p4").read_text(encoding="utf-8")
    text = text.replace("register<bit<48>>", f"register<{cell}>")
    text = text.replace("hdr.ethernet.srcAddr", f"({cell})hdr.ethernet.srcAddr")
    path = tmp_path / "cell.p4"
    path.write_text(text)
    if ok:
        compile_file(path, CompileOptions(target_profile="tofino"))
        return
    with pytest.raises(CompileError) as info:
        compile_file(path, CompileOptions(target_profile="tofino"))
    assert f"cells of type {cell}" in info.value.message


@pytest.mark.parametrize(
    ("expr", "ok"),
    [
        ("meta.value * 4", True),
        ("4 * meta.value", True),
        ("meta.value * 1", True),
        ("meta.value * 0", True),
        ("meta.value / 16", True),
        ("meta.value % 8", True),
        ("meta.value >> 2", True),
        ("meta.value * (2 + 2)", True),
        ("meta.value * 6", False),
        ("meta.value / 3", False),
        ("meta.value % 100", False),
        ("16 / meta.value", False),
        ("meta.value % meta.other", False),
    ],
)
def test_arithmetic_operands(tmp_path: Path, expr: str, ok: bool) -> None:
    text = (PROGRAMS / "bad" / "arith_multiply.p4").read_text(encoding="utf-8")
    text = text.replace("meta.value * 3;", f"{expr};")
    path = tmp_path / "arith.p4"
    path.write_text(text)
    # with --runtime-divmod, so that / and % reach rule 4 rather than the BMv2 rule
    options = CompileOptions(target_profile="tofino", runtime_divmod=True)
    if ok:
        compile_file(path, options)
        return
    with pytest.raises(CompileError) as info:
        compile_file(path, options)
    assert info.value.pos.line == expectation(PROGRAMS / "bad" / "arith_multiply.p4")[0]
    assert "power of two" in info.value.message


def test_index_compare_by_value_for_constants(tmp_path: Path) -> None:
    text = (PROGRAMS / "bad" / "register_index_mismatch.p4").read_text(encoding="utf-8")
    text = text.replace("sums.read(meta.value, meta.cell);", "sums.read(meta.value, 7);")
    text = text.replace("sums.write(meta.other, meta.value);", "sums.write(32w7, meta.value);")
    path = tmp_path / "const_index.p4"
    path.write_text(text)
    compile_file(path, CompileOptions(target_profile="tofino"))


# ------------------------------------------------------------------ the option itself


def test_unknown_profile_is_a_one_line_error(tmp_path: Path) -> None:
    path = GOOD[0]
    run = run_cli([str(path), "--target-profile", "asic"])
    assert run.code == 1
    assert len(run.err.splitlines()) == 1, run.err
    assert "unknown target profile 'asic'" in run.err
    assert "tofino" in run.err
    with pytest.raises(CompileError, match="unknown target profile"):
        compile_file(path, CompileOptions(target_profile="asic"))


def test_help_names_the_profiles() -> None:
    run = run_cli(["--help"])
    assert run.code == 0
    text = " ".join(run.out.split())
    assert "--target-profile" in text
    for profile in ("bmv2", "v1model", "tofino"):
        assert profile in text
