"""The doc-test extractor and runner on small Markdown texts: what counts as an example,
how markers parse (and fail), how shell blocks split into commands, synopsis checks, and
that a failing or hanging example fails with its command named."""

from __future__ import annotations

from pathlib import Path

import docapi
import pytest
from docblocks import Block, MarkerError, blocks, commands, parse_marker, strip_comment
from docrunner import DocError, Scratch, run_block, synopsis_programs


def _doc(tmp_path: Path, text: str) -> list[Block]:
    path = tmp_path / "doc.md"
    path.write_text(text)
    return blocks(path)


def test_examples_are_shell_python_and_untagged_commands(tmp_path: Path) -> None:
    found = _doc(
        tmp_path,
        "```json\n{}\n```\n\n```sh\nls\n```\n\n```python\nx = 1\n```\n\n"
        "```\np4reduce check --workers 2\n```\n\n```\np4reduce check: error: no\n```\n\n"
        "```\n +---+ a diagram\n```\n",
    )
    assert [(b.line, b.lang) for b in found] == [(5, "sh"), (9, "python"), (13, "sh")]
    assert found[0].text == "ls\n" and not found[0].marked


def test_markers(tmp_path: Path) -> None:
    found = _doc(
        tmp_path,
        "<!-- doctest: group: g; expect: a; expect: b -->\n```sh\nls\n```\n"
        "<!-- doctest: skip: needs root; and a network -->\n```sh\nsudo x\n```\n",
    )
    assert found[0].options == {"group": ["g"], "expect": ["a", "b"]}
    assert found[1].option("skip") == "needs root; and a network"
    with pytest.raises(MarkerError, match="unknown doctest option 'skp'"):
        parse_marker(" skp: x ", "doc.md:1")
    with pytest.raises(MarkerError, match="'skip' needs a reason"):
        parse_marker(" skip ", "doc.md:1")
    with pytest.raises(MarkerError, match="not an example"):
        _doc(tmp_path, "<!-- doctest: skip: x -->\n```json\n{}\n```\n")
    with pytest.raises(MarkerError, match="never closed"):
        _doc(tmp_path, "```sh\nls\n")


def test_commands_join_continuations_and_drop_comments_and_output() -> None:
    text = "make build   # compile\n# a comment\na --x \\\n    --y 'q # not a comment'\n  # more\nb &\n"
    assert commands(text) == ["make build", "a --x --y 'q # not a comment'", "b &"]
    assert commands("$ a --b\nsome output\n$ c\n") == ["a --b", "c"]
    assert strip_comment("x#y # z") == "x#y"


def test_synopsis_programs() -> None:
    text = (
        "p4reduce-ctl [--grpc-addr A] COMMAND\n  push [--switch-ip IP]\n"
        "  job create --job ID\nsudo .venv/bin/python bench/x.py [--n N]\nmake demo ARGS=x\n"
    )
    assert synopsis_programs(text) == [
        "p4reduce-ctl --help", "p4reduce-ctl push --help", "p4reduce-ctl job create --help",
        ".venv/bin/python bench/x.py --help",
    ]  # fmt: skip


def _block(tmp_path: Path, lang: str, text: str, **options: list[str]) -> Block:
    return Block(tmp_path / "doc.md", 1, lang, text, dict(options))


def test_run_block(tmp_path: Path) -> None:
    with Scratch(tmp_path / "s") as scratch:
        run_block(_block(tmp_path, "sh", "echo hi > f\ncat f\n", expect=["^hi$"]), scratch)
        run_block(_block(tmp_path, "python", "print(open('f').read())\n"), scratch)
        with pytest.raises(DocError, match=r"`false` exited 1"):
            run_block(_block(tmp_path, "sh", "true\nfalse\n"), scratch)
        with pytest.raises(DocError, match="no match for 'bye'"):
            run_block(_block(tmp_path, "sh", "echo hi\n", expect=["bye"]), scratch)
        with pytest.raises(DocError, match="still running after 1 s"):
            run_block(_block(tmp_path, "sh", "sleep 5\n", timeout=["1"]), scratch)
        with pytest.raises(DocError, match="printed no ready line within 1 s"):
            run_block(_block(tmp_path, "sh", "sleep 5 &\n", timeout=["1"]), scratch)
        run_block(_block(tmp_path, "sh", "echo ready; sleep 30 &\n"), scratch)
        proc = scratch.background[-1][0]
    assert proc.poll() is not None  # the group's end stopped it
    assert not (Path(__file__).parents[2] / "f").exists()  # written in the scratch directory


def test_synopsis_check(tmp_path: Path) -> None:
    with Scratch(tmp_path / "s") as scratch:
        run_block(_block(tmp_path, "sh", "p4reduce-stf [--json] P T\n", synopsis=[""]), scratch)
        with pytest.raises(DocError, match="names --jsn, which"):
            run_block(_block(tmp_path, "sh", "p4reduce-stf [--jsn] P T\n", synopsis=[""]), scratch)


def test_api_listings_are_checked_against_the_signatures() -> None:
    wire = "p4reduce.host.wire"
    assert docapi.check("unpack_header(data) -> AggHeader\ncheck_length(h, length, k)\n", wire) == 2
    with pytest.raises(LookupError, match="unpack_header: no parameter 'raw'"):
        docapi.check("unpack_header(raw)\n", wire)
    with pytest.raises(LookupError, match="check_length: the listing lacks k"):
        docapi.check("x; check_length(h, length)\n", wire)
    assert docapi.check("check_length(..., k)   # elided: only k is named\n", wire) == 1
    with pytest.raises(LookupError, match="'nothing_like_it' is in none of the marker's modules"):
        docapi.check("nothing_like_it(a)\n", wire)
    listing = "s.allreduce(array, op, mode, out, exponents)\ns.barrier(name)\n"
    assert docapi.check(listing, "p4reduce.host s=AllreduceSession") == 2
    assert docapi.check("y = unpack_header(b'')  # an example call, not a listing\n", wire) == 0
