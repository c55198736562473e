"""``prebuild``: a program's native engine put into the cache before a switch starts on it
(LocalStack does this outside its start deadline), so that the switch then loads it
without compiling; what it reports where the engine cannot be built."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from p4reduce.switch.frontend.cli import main as p4c_main
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.native.select import make_switch, prebuild

ROOT = Path(__file__).resolve().parents[2]
BMV2 = ROOT / "bmv2_tests"


def compiled(name: str, out: Path, where: Path = BMV2) -> Path:
    """``WHERE/NAME.p4`` (bmv2_tests by default) compiled by p4reduce-p4c, as LocalStack
    compiles its program."""
    assert p4c_main(["-I", str(BMV2), "-o", str(out), str(where / f"{name}.p4")]) == 0
    return out / f"{name}.json"


def test_prebuild_fills_the_cache_and_the_switch_then_needs_no_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    prog = compiled("table_exact", tmp_path)
    calls: list[int] = []
    first = prebuild(prog, lambda: calls.append(1))
    assert first.compiled and first.reason is None and calls == [1]
    assert first.path is not None and first.path.exists()
    # a cache hit, found without generating the C again (K = 1024: many seconds)
    from p4reduce.switch.native import cprogram

    def no_generation(*_: object) -> None:
        raise AssertionError("generated again")

    monkeypatch.setattr(cprogram, "generate", no_generation)
    again = prebuild(prog, lambda: calls.append(2))
    assert (again.path, again.compiled, calls) == (first.path, False, [1])
    monkeypatch.undo()
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    first.path.unlink()  # the index names an object that is gone: generate and compile
    third = prebuild(prog, lambda: calls.append(3))
    assert (third.path, third.compiled, calls) == (first.path, True, [1, 3])
    # the switch generates the same C from the same file: it loads the cached object and
    # does not look for a compiler (there is none now)
    monkeypatch.setenv("P4REDUCE_CC", "/nonexistent/cc")
    lines: list[str] = []
    sw = make_switch(load_pipeline(prog), notice=lines.append)
    assert sw.engine == "native" and lines == []


def test_prebuild_says_why_it_could_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    own = Path(__file__).resolve().parent / "p4"  # every bmv2_tests program runs natively
    refused = prebuild(compiled("refused_signed_wide", tmp_path, own), lambda: pytest.fail("cc"))
    assert refused.path is None and "signed, over 64 bits" in (refused.reason or "")
    prog = compiled("table_exact", tmp_path)
    monkeypatch.setenv("P4REDUCE_CC", "/nonexistent/cc")
    missing = prebuild(prog, lambda: pytest.fail("compiled"))
    assert missing.path is None and missing.reason == "no C compiler found"
    slow = tmp_path / "slow-cc"  # a compiler that outlives the bound
    slow.write_text("#!/bin/sh\nexec sleep 30\n")
    slow.chmod(slow.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("P4REDUCE_CC", str(slow))
    late = prebuild(prog, timeout=0.5)
    assert late.path is None and late.reason is not None
    assert "did not finish within 0.5 s" in late.reason, late.reason
    assert not any(p.name.endswith(".so") for p in (tmp_path / "cache").iterdir())
    assert os.listdir(tmp_path / "cache") == []  # its work directory was removed
