"""Every program the front end accepts loads on both engines, or is refused in one line.

Over the programs generated per spec rule (rules/programs.py) and the front end's corpora
programs/production and tofino_programs/good (programs/good: test_corpus.py checks the same
where it compiles them): a program ``p4reduce-p4c`` accepts must build into a
pipeline the interpreter runs (a ``V1Switch``) and into the native engine's C program, or be
refused at load with exactly one ``FILE(LINE): error: ...`` line whose message says the
construct is not supported. The native generator may decline a construct it does not
translate (``Unsupported``: the switch then runs the Python engine with a one-line notice,
see switch/native/select.py); that reason must be one line too. Any other exception is an
internal error and fails. (bmv2_tests/ and p4src/ run on both engines in their own suites.)
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import compile_file
from p4reduce.switch.frontend.errors import CompileError

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE / "rules"))
from engine_loads import assert_loads, load_outcome  # noqa: E402


def _rule_programs() -> list[Path]:
    spec = importlib.util.spec_from_file_location(
        "p4c_rule_programs", HERE / "rules" / "programs.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module.write_all(ROOT / "build" / "p4c_rules")


PROGRAMS = [
    *_rule_programs(),
    *sorted((HERE / "programs" / "production").glob("*.p4")),
    *sorted((HERE / "tofino_programs" / "good").glob("*.p4")),
]


@pytest.fixture(scope="module")
def outcomes() -> dict[str, tuple[str, str]]:
    """program -> (interpreter outcome, native outcome): 'ok', 'refused: LINE' or the
    internal error; 'skipped' where the front end refuses the program."""
    out: dict[str, tuple[str, str]] = {}
    for path in PROGRAMS:
        try:
            compiled = compile_file(path)
        except CompileError:
            out[path.name] = ("skipped", "skipped")
            continue
        assert compiled.checked is not None
        out[path.name] = load_outcome(compiled)
    return out


def test_programs_are_found() -> None:
    names = {p.name for p in PROGRAMS}
    assert len(names) == len(PROGRAMS)  # no name in two directories
    assert len(PROGRAMS) > 120


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_accepted_program_loads(path: Path, outcomes: dict[str, tuple[str, str]]) -> None:
    assert_loads(*outcomes[path.name])


def test_most_accepted_programs_run_natively(outcomes: dict[str, tuple[str, str]]) -> None:
    loaded = [n for n, (i, _) in outcomes.items() if i == "ok"]
    native = [n for n in loaded if outcomes[n][1] == "ok"]
    assert len(loaded) > 70
    assert len(native) >= 0.9 * len(loaded), sorted(set(loaded) - set(native))
