"""The preprocessor: cpp semantics, exact line mapping through #line markers, diagnostics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from p4reduce.switch.frontend.errors import CompileError, SourcePos
from p4reduce.switch.frontend.preprocess import (
    MAX_INCLUDE_DEPTH,
    parse_line_marker,
    preprocess,
    quote_path,
)
from p4reduce.switch.p4include import INCLUDE_DIR

TAG = re.compile(r"\bT_(\w+?)_(\d+)\b")


def mapped_lines(text: str, main: str) -> list[tuple[str, int, str]]:
    """(file, line, text) for every output line, following the markers the way the lexer
    does: a marker names the line that follows it."""
    result = []
    file, line = main, 1
    for raw in text.split("\n")[:-1]:
        marker = parse_line_marker(raw)
        if marker is not None:
            line, file = marker
            continue
        result.append((file, line, raw))
        line += 1
    return result


def check_tags(text: str, files: dict[str, str], main: str) -> int:
    """Every T_<key>_<n> token must land on an output line that maps to line n of the file
    registered under key. Returns how many tags were checked."""
    seen = 0
    for file, line, raw in mapped_lines(text, main):
        for key, number in TAG.findall(raw):
            assert (file, line) == (files[key], int(number)), raw
            seen += 1
    return seen


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def tagged(key: str, lines: list[str]) -> str:
    """Append a tag naming the line to every line marked with '@'."""
    out = []
    for number, line in enumerate(lines, start=1):
        out.append(line.replace("@", f"T_{key}_{number}"))
    return "\n".join(out) + "\n"


# ------------------------------------------------------------------ line mapping


def test_line_mapping_survives_includes_macros_comments_and_skipped_blocks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    inner = tagged(
        "c",
        ["#ifndef C_P4", "#define C_P4", "@ x;", "/* two", "line */ @", "#endif", "@"],
    )
    write(tmp_path / "sys" / "c.p4", inner)
    write(
        tmp_path / "lib" / "b.p4",
        tagged("b", ["@", "#include <c.p4>", "@ after_c;", "#include <c.p4>", "@"]),
    )
    main = tagged(
        "a",
        [
            "@ start;",
            '#include "lib/b.p4"',
            "@ after_b;",
            "#define ADD(x, y) ((x) + \\",
            "    (y))",
            "@ v = ADD(1,",
            "    2); @",
            "#if 0",
            *["skipped;"] * 12,
            "#endif",
            "@ after_long_skip;",
            "#ifdef NOPE",
            "short;",
            "#else",
            "@ in_else;",
            "#endif",
            "/* a comment",
            "   over three",
            "   lines */ @ after_comment;",
            "",
            "",
            "@ after_blanks; // trailing comment",
            '@ s = "not // a comment";',
            "#include <c.p4>",
            "@ end;",
        ],
    )
    write(tmp_path / "a.p4", main)
    out = preprocess(Path("a.p4"), [Path("sys")])
    files = {"a": "a.p4", "b": "lib/b.p4", "c": "sys/c.p4"}
    # a.p4's 10 tags, b.p4's 3, c.p4's 3 on first inclusion and then only its unguarded last
    # line on each of the two later inclusions.
    assert check_tags(out, files, "a.p4") == 10 + 3 + 3 + 1 + 1
    assert "skipped" not in out and "short" not in out


def test_every_output_line_maps_even_when_nothing_changes(tmp_path: Path) -> None:
    src = write(tmp_path / "p.p4", tagged("p", [f"@ line{i};" for i in range(50)]))
    out = preprocess(src)
    assert check_tags(out, {"p": str(src)}, str(src)) == 50
    assert out.count("#line") == 1  # one marker at the top is enough for a plain file


def test_marker_format_is_exact(tmp_path: Path) -> None:
    src = write(tmp_path / "m.p4", "\n\nx;\n")
    out = preprocess(src)
    assert out.splitlines()[0] == f'#line 3 "{src}"'
    assert all(
        parse_line_marker(line) is not None for line in out.splitlines() if line.startswith("#line")
    )


def test_marker_quoting_round_trips() -> None:
    for name in ["plain.p4", 'we"ird\\name.p4', "new\nline.p4"]:
        assert parse_line_marker(f"#line 7 {quote_path(name)}") == (7, name)


def test_user_line_directives_remap_later_lines(tmp_path: Path) -> None:
    src = write(tmp_path / "l.p4", 'a;\n#line 100 "gen.p4"\nb;\nc;\n# 7 "other.p4"\nd;\n')
    lines = {raw: (f, n) for f, n, raw in mapped_lines(preprocess(src), str(src))}
    assert lines == {"a;": (str(src), 1), "b;": ("gen.p4", 100), "c;": ("gen.p4", 101),
                     "d;": ("other.p4", 7)}  # fmt: skip


def test_errors_map_through_user_line_directive(tmp_path: Path) -> None:
    src = write(tmp_path / "l.p4", '#line 50 "x.p4"\n\n#error here\n')
    with pytest.raises(CompileError) as info:
        preprocess(src)
    assert info.value.pos == SourcePos("x.p4", 51)


# ------------------------------------------------------------------ macros and conditionals


def test_defines_undefines_and_conditionals(tmp_path: Path) -> None:
    src = write(
        tmp_path / "d.p4",
        "\n".join(
            [
                "#if defined(ONE) && ONE == 1",
                "one_ok;",
                "#endif",
                "#if VAL == 42",
                "val_ok;",
                "#elif VAL == 41",
                "wrong;",
                "#else",
                "wrong;",
                "#endif",
                "#ifndef GONE",
                "gone_ok;",
                "#endif",
                "#ifdef defined_later",
                "wrong;",
                "#endif",
                "sq = SQ(3);",
                "#define LOCAL 5",
                "#undef LOCAL",
                "#ifdef LOCAL",
                "wrong;",
                "#endif",
                "w = WIDTH;",
            ]
        )
        + "\n",
    )
    out = preprocess(
        src,
        defines={"ONE": None, "VAL": "42", "GONE": "1", "SQ(x)": "((x) * (x))", "WIDTH": "8"},
        undefines=["GONE"],
    )
    assert "one_ok;" in out and "val_ok;" in out and "gone_ok;" in out
    assert "wrong" not in out
    assert "sq = ((3) * (3));" in out
    assert "w = 8;" in out


def test_file_and_line_macros(tmp_path: Path) -> None:
    src = write(tmp_path / "f.p4", "\n\nx = __LINE__; y = __FILE__;\n")
    assert f'x = 3; y = "{src}";' in preprocess(src)


def test_bad_command_line_macro_names(tmp_path: Path) -> None:
    src = write(tmp_path / "f.p4", "x;\n")
    for defines, undefines in [({"1X": None}, []), ({"": None}, []), ({}, ["A-B"])]:
        with pytest.raises(CompileError, match="invalid macro name"):
            preprocess(src, defines=defines, undefines=undefines)


def test_macro_expansion_does_not_paste_tokens(tmp_path: Path) -> None:
    src = write(tmp_path / "p.p4", "#define NEG -\n#define ID x\na = -NEG 1; b = ID ID;\n")
    out = preprocess(src)
    assert "a = - - 1; b = x x;" in out


# ------------------------------------------------------------------ tokens left intact


def test_p4_tokens_pass_through_unchanged(tmp_path: Path) -> None:
    line = (
        "key = 8w5 &&& 0x1F; r = 1 .. 9; c = a ++ b; s = 8s-3; t = 16w0xFFFF |+| x |-| y; "
        'q = a >> 2 << 1; @name("x//y") @hidden m = "http://host/??=" ;'
    )
    src = write(tmp_path / "t.p4", line + "\n")
    assert preprocess(src).splitlines()[1] == line


def test_pragmas_pass_through(tmp_path: Path) -> None:
    src = write(tmp_path / "p.p4", "a;\n#pragma foo bar(1)\n#pragma\nb;\n")
    body = [raw for _, _, raw in mapped_lines(preprocess(src), str(src))]
    assert body == ["a;", "#pragma foo bar(1)", "#pragma", "b;"]


def test_pragma_once(tmp_path: Path) -> None:
    write(tmp_path / "once.p4", "#pragma once\nonce_body;\n")
    src = write(tmp_path / "m.p4", '#include "once.p4"\n#include "once.p4"\n')
    assert preprocess(src).count("once_body") == 1


def test_guard_reopened_after_undef(tmp_path: Path) -> None:
    write(tmp_path / "g.p4", "#ifndef G\n#define G\nbody;\n#endif\n")
    src = write(tmp_path / "m.p4", '#include "g.p4"\n#undef G\n#include "g.p4"\n')
    assert preprocess(src).count("body;") == 2


def test_warning_goes_to_handler(tmp_path: Path) -> None:
    src = write(tmp_path / "w.p4", "\n#warning careful now\nx;\n")
    seen: list[tuple[SourcePos, str]] = []
    preprocess(src, on_warning=lambda pos, msg: seen.append((pos, msg)))
    assert seen == [(SourcePos(str(src), 2), "#warning careful now")]


# ------------------------------------------------------------------ include search


def test_quote_include_searches_the_including_files_directory_first(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "x.p4", "from_inc_dir;\n")
    write(tmp_path / "sub" / "x.p4", "from_sub;\n")
    write(tmp_path / "sub" / "y.p4", '#include "x.p4"\n')
    src = write(tmp_path / "m.p4", '#include "sub/y.p4"\n#include <x.p4>\n')
    out = preprocess(src, [tmp_path / "inc"])
    assert out.index("from_sub") < out.index("from_inc_dir")
    assert f'"{tmp_path / "inc" / "x.p4"}"' in out  # found as include_dir/name


def test_angle_include_skips_the_current_directory(tmp_path: Path) -> None:
    write(tmp_path / "x.p4", "here;\n")
    src = write(tmp_path / "m.p4", "#include <x.p4>\n")
    with pytest.raises(CompileError, match=r"include file <x\.p4> not found"):
        preprocess(src)


def test_include_dirs_come_before_the_builtin_directory(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "core.p4", "my_core;\n")
    src = write(tmp_path / "m.p4", "#include <core.p4>\n")
    assert "my_core;" in preprocess(src, [tmp_path / "inc"])


def test_builtin_includes_are_found(tmp_path: Path) -> None:
    src = write(tmp_path / "m.p4", "#include <core.p4>\nafter_core;\n")
    out = preprocess(src)
    assert f'"{INCLUDE_DIR / "core.p4"}"' in out
    assert mapped_lines(out, str(src))[-1] == (str(src), 2, "after_core;")


def test_include_through_macro(tmp_path: Path) -> None:
    write(tmp_path / "x.p4", "x_body;\n")
    src = write(tmp_path / "m.p4", '#define HDR "x.p4"\n#include HDR\n')
    assert "x_body;" in preprocess(src)


# ------------------------------------------------------------------ diagnostics

ERROR_CASES = [
    ('x;\n#include "missing.p4"\n', 2, r'include file "missing\.p4" not found'),
    ("#include nothing\n", 1, r'#include expects "FILENAME" or <FILENAME>'),
    ("#include\n", 1, r"#include expects"),
    ("a;\n#if 1\nb;\n", 2, r"unterminated #if"),
    ("a;\n#ifdef X\n", 2, r"unterminated #ifdef"),
    ("a;\n\n#else\n", 3, r"#else without #if"),
    ("#endif\n", 1, r"#endif without #if"),
    ("#elif 1\n", 1, r"#elif without #if"),
    ("x;\n#error stop right here\n", 2, r"#error stop right here"),
    ("\n#frobnicate\n", 2, r"invalid preprocessing directive #frobnicate"),
    ("\n#ifdef\n#endif\n", 2, r"no macro name given in #ifdef"),
    ("#ifndef\n#endif\n", 1, r"no macro name given in #ifndef"),
    ("x;\n#if\n#endif\n", 2, r"#if with no expression"),
    ("#if\n#endif\n", 1, r"#if with no expression"),
    ("x;\n#if 1 +\n#endif\n", 2, r"cannot evaluate #if expression"),
    ("x;\n#define\n", 2, r"no macro name given"),
    ("x;\n#define 12 3\n", 2, r"not a valid macro name"),
    ("x;\n#undef\n", 2, r"no macro name given in #undef"),
    ("#define F(a, b) a\nx;\ny = F(1);\n", 3, r"requires 2 arguments"),
    ("#define F(a) a\n\ny = F(1;\n", 3, r"unterminated argument list"),
    ("a;\nb /* never\nclosed;\n", 2, r"unterminated comment"),
    ('a;\nb = "open;\n', 2, r'missing terminating " character'),
    ("x;\n#ifdef 3\n#endif\n", 2, r"macro names must be identifiers"),
    ("x;\n#line nine\n", 2, r"#line directive requires a positive integer"),
]


@pytest.mark.parametrize(("source", "line", "message"), ERROR_CASES)
def test_errors_name_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], source: str, line: int, message: str
) -> None:
    src = write(tmp_path / "e.p4", source)
    with pytest.raises(CompileError) as info:
        preprocess(src)
    assert info.value.pos == SourcePos(str(src), line)
    assert re.search(message, info.value.message)
    assert "\n" not in info.value.message
    assert capsys.readouterr() == ("", "")  # pcpp must never print on its own


def test_directives_in_skipped_blocks_are_not_diagnosed(tmp_path: Path) -> None:
    src = write(tmp_path / "s.p4", "#if 0\n#error no\n#frob\n#define 12\n#endif\nok;\n")
    assert "ok;" in preprocess(src)


def test_error_inside_an_included_file_names_that_file(tmp_path: Path) -> None:
    write(tmp_path / "inc" / "bad.p4", "ok;\n\n#error in include\n")
    src = write(tmp_path / "m.p4", "a;\n#include <bad.p4>\n")
    with pytest.raises(CompileError) as info:
        preprocess(src, [tmp_path / "inc"])
    assert info.value.pos == SourcePos(str(tmp_path / "inc" / "bad.p4"), 3)


def test_recursive_include_stops_at_the_depth_limit(tmp_path: Path) -> None:
    src = write(tmp_path / "self.p4", 'x;\n#include "self.p4"\n')
    with pytest.raises(CompileError, match=f"exceeds maximum of {MAX_INCLUDE_DEPTH}.*recursive"):
        preprocess(src)


def test_guarded_self_include_is_fine(tmp_path: Path) -> None:
    src = write(tmp_path / "g.p4", '#ifndef G\n#define G\n#include "g.p4"\nbody;\n#endif\n')
    assert preprocess(src).count("body;") == 1


def test_missing_and_directory_inputs(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="No such file"):
        preprocess(tmp_path / "absent.p4")
    with pytest.raises(CompileError, match="is a directory"):
        preprocess(tmp_path)


# ------------------------------------------------------------------ odd input


def test_undecodable_bytes_survive_for_the_lexer(tmp_path: Path) -> None:
    src = tmp_path / "b.p4"
    src.write_bytes(b"\xff\xfe\x00abc;\n\x80 def;\n")
    out = preprocess(src)
    assert "\udcff\udcfe\x00abc;" in out and "\udc80 def;" in out


def test_bom_crlf_and_odd_line_breaks_keep_line_numbers(tmp_path: Path) -> None:
    src = tmp_path / "o.p4"
    src.write_bytes(b"\xef\xbb\xbfa;\r\nb\x0cc;\r\n\xc2\x85 d;\n\xe2\x80\xa8 e;\nT_o_5;\n")
    out = preprocess(src)
    assert check_tags(out, {"o": str(src)}, str(src)) == 1
    assert "b c;" in out  # a form feed is whitespace, and never a line break


def test_file_without_final_newline_and_empty_file(tmp_path: Path) -> None:
    assert preprocess(write(tmp_path / "n.p4", "a;")).endswith("a;\n")
    assert preprocess(write(tmp_path / "e.p4", "")) == ""


@pytest.mark.timeout(60)
def test_two_thousand_lines_preprocess_completely(tmp_path: Path) -> None:
    """A pathological (e.g. quadratic rescanning) slowdown shows up as a hang that the test's
    own timeout fails; the assertions are on the work done, never on the wall clock."""
    body = ["#define W 16", "#define ADD(a, b) ((a) + (b))"]
    for i in range(400):
        body += [
            f"header h{i}_t {{",
            f"    bit<W> f{i}; // field",
            f"    bit<16> g{i}; /* field */",
            "}",
            f"const bit<32> C{i} = ADD(32w0x1F, 8s-3);",
        ]
    src = write(tmp_path / "big.p4", "\n".join(body) + "\n")
    out = preprocess(src)
    for i in (0, 199, 399):
        assert f"bit<16> f{i};" in out
        assert f"const bit<32> C{i} = ((32w0x1F) + (8s-3));" in out
    assert "//" not in out and "/*" not in out and "ADD(" not in out
    assert out.count("header h") == 400
    # every output line still maps back to its source line
    lines = mapped_lines(out, str(src))
    last = [entry for entry in lines if entry[2].startswith("const bit<32> C399")]
    assert last and last[0][1] == 2 + 5 * 399 + 5


def test_a_string_literal_may_span_lines_as_in_cpp_assembler_mode(tmp_path: Path) -> None:
    """A '"' with no closing quote on its line passes through (cpp -x assembler-with-cpp);
    comments inside are kept (p4c runs cpp with -C, and p4c 1.2.5's P4Info shows them), no
    line marker lands inside the string, and tokens after it
    keep their lines even when the string holds more lines than a marker gap."""
    from p4reduce.switch.frontend.lexer import tokenize

    body = "".join(f"  // don't {i}\n" for i in range(12))
    src = write(tmp_path / "m.p4", f'#define N 3\n@r("\n{body}  a -> b; N\n")\nafter;\n')
    text = preprocess(src)
    tokens = tokenize(text, str(src))
    string = next(t for t in tokens if t.kind == "str")
    assert string.pos.line == 2 and "#line" not in string.text
    assert "  // don't 0\n" in string.text and "  // don't 11\n" in string.text
    assert "a -> b; 3" in string.text
    assert next(t for t in tokens if t.text == "after").pos.line == 17


def test_an_unclosed_quote_is_reported_where_it_opens(tmp_path: Path) -> None:
    src = write(tmp_path / "u.p4", 'a;\n@r("\nb;\nc;\n')
    with pytest.raises(CompileError) as info:
        preprocess(src)
    assert info.value.pos == SourcePos(str(src), 2)
