"""The front end's program corpus: what p4c accepts must compile, what it rejects must fail.

``programs/good/*.p4`` are complete v1model programs that p4c 1.2.5 (BMv2 back end) accepts, one
construct each plus a few realistic multi-feature programs. ``programs/bad/*.p4`` each contain
exactly one error that p4c rejects. In a bad program, the line p4c reports ends with a
``// expect-error`` comment, optionally followed by ``: hint`` - one word the message should
contain (case-insensitive; ``HINT_ALTERNATIVES`` lists accepted wordings). A program whose error
p4c reports without any source position carries ``// expect-error-noline`` instead; for it only
the failure (and the hint, if any) is checked.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

PROGRAMS = Path(__file__).parent / "programs"
sys.path.insert(0, str(Path(__file__).parent / "rules"))
GOOD = sorted((PROGRAMS / "good").glob("*.p4"))
BAD = sorted((PROGRAMS / "bad").glob("*.p4"))

MIN_GOOD = 90
MIN_BAD = 60

# `// expect-error` or `// expect-error: hint` at the end of a line (not `expect-error-noline`).
MARKER = re.compile(r"//\s*expect-error(?![-\w])(?:\s*:\s*(?P<hint>[^/]*?))?\s*$")
NOLINE_MARKER = re.compile(r"//\s*expect-error-noline(?:\s*:\s*(?P<hint>[^/]*?))?\s*$")

# A hint names what the error is about; p4c words some messages differently from the hint
# word itself, so each hint accepts any of these substrings (compared case-insensitively).
HINT_ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "not found": ("not found", "undeclared", "not declared", "unknown", "no declaration"),
    "duplicate": ("duplicate", "re-declar", "redeclar", "already declared", "already defined"),
    "syntax": ("syntax", "unexpected", "parse error", "expected"),
    "read-only": (
        "read-only",
        "readonly",
        "cannot be the target of an assignment",
        "l-value",
        "lvalue",
        "left-value",
        "not assignable",
    ),
    "l-value": (
        "l-value",
        "lvalue",
        "left-value",
        "left value",
        "read-only",
        "readonly",
        "out/inout",
    ),
    "width": ("width", "cannot unify", "type", "bit<"),
    "type": ("type", "cannot unify", "cannot cast", "bit<"),
    "argument": ("argument", "parameter"),
    "action": ("action",),
    "state": ("state",),
    "priority": ("priority", "priorities"),
    "comment": ("comment",),
    "constant": ("constant", "compile-time"),
}


def _expectation(path: Path) -> tuple[int | None, str | None]:
    """(line, hint) from the program's marker; line is None for an error without a position."""
    lines = path.read_text(encoding="utf-8").splitlines()
    found = [(no, m) for no, text in enumerate(lines, start=1) if (m := MARKER.search(text))]
    noline = [m for text in lines if (m := NOLINE_MARKER.search(text))]
    if len(found) + len(noline) != 1:
        raise AssertionError(
            f"{path.name}: needs exactly one '// expect-error' (or '// expect-error-noline') "
            f"marker, found {len(found) + len(noline)}"
        )
    if noline:
        return None, (noline[0].group("hint") or None)
    no, m = found[0]
    return no, (m.group("hint") or None)


def _hint_matches(hint: str, message: str) -> bool:
    key = hint.strip().lower()
    text = message.lower()
    return any(alt in text for alt in HINT_ALTERNATIVES.get(key, (key,)))


def _compile(path: Path):
    from p4reduce.switch.frontend.compiler import CompileOptions, compile_file

    return compile_file(str(path), CompileOptions(include_dirs=[], defines={}, undefines=[]))


def test_corpus_size() -> None:
    assert len(GOOD) >= MIN_GOOD, f"only {len(GOOD)} good programs"
    assert len(BAD) >= MIN_BAD, f"only {len(BAD)} bad programs"


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_program_is_well_formed(path: Path) -> None:
    """Corpus hygiene, independent of the compiler: a first-line explanation and one marker."""
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first.startswith("//"), f"{path.name}: line 1 must be a comment saying what is wrong"
    _expectation(path)


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_good_program_is_well_formed(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert "expect-error" not in text, f"{path.name}: a good program carries an error marker"
    assert "#include <core.p4>" in text and "#include <v1model.p4>" in text
    assert re.search(r"\bV1Switch\s*(<[^>]*>)?\s*\(", text), f"{path.name}: no V1Switch main"


@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_good_program_compiles(path: Path) -> None:
    from p4reduce.switch.frontend.errors import CompileError

    from p4reduce.proto import p4info_pb2

    try:
        result = _compile(path)
    except CompileError as err:  # pragma: no cover - the failure message is the point
        pytest.fail(f"p4c accepts {path.name}, but the front end rejected it: {err}")
    assert isinstance(result.p4info, p4info_pb2.P4Info)
    json.dumps(result.ir)
    # and it loads on both engines, or is refused at load in one line (rules/engine_loads.py)
    from engine_loads import assert_loads, load_outcome

    assert_loads(*load_outcome(result))


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_program_is_rejected(path: Path) -> None:
    from p4reduce.switch.frontend.errors import CompileError

    line, hint = _expectation(path)
    with pytest.raises(CompileError) as info:
        _compile(path)
    err = info.value
    if line is not None:
        assert str(err.pos.file).endswith(path.name), (
            f"error reported in {err.pos.file}, expected {path.name}: {err}"
        )
        assert err.pos.line == line, (
            f"error reported on line {err.pos.line}, expected {line}: {err}"
        )
    if hint:
        assert _hint_matches(hint, err.message), f"message does not mention {hint!r}: {err.message}"
