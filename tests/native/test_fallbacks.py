"""Every way the native engine can be unavailable ends on the interpreter with one line.

A refused construct, no C compiler, a compiler that crashes, an unwritable cache directory
and a full one: each gives a switch whose ``engine`` is "python", that still forwards, and
exactly one notice line saying why.
"""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.interp.load import load_pipeline
from p4reduce.switch.native import build
from p4reduce.switch.native.select import make_switch

ROOT = Path(__file__).resolve().parents[2]
BMV2 = ROOT / "bmv2_tests"
SUPPORTED = BMV2 / "table_exact.p4"  # runs natively when a compiler works
REFUSED = ROOT / "tests" / "native" / "p4" / "refused_signed_wide.p4"  # int<128>: refused


def _switch(path: Path) -> tuple[object, list[str]]:
    lines: list[str] = []
    sw = make_switch(load_pipeline(path, CompileOptions(include_dirs=[BMV2])), notice=lines.append)
    return sw, lines


def _same_as_python(sw: object, path: Path) -> None:
    py = make_switch(load_pipeline(path, CompileOptions(include_dirs=[BMV2])), "python")
    frame = bytes(range(64))
    assert sw.process(1, frame) == py.process(1, frame)  # type: ignore[attr-defined]


def _one_line(lines: list[str], *words: str) -> None:
    assert len(lines) == 1 and "\n" not in lines[0], lines
    assert "running the Python engine" in lines[0]
    for w in words:
        assert w in lines[0], lines[0]


def test_refused_construct_names_it_and_its_place() -> None:
    sw, lines = _switch(REFUSED)
    assert sw.engine == "python"  # type: ignore[attr-defined]
    _one_line(lines, "refused_signed_wide", "int<128>")
    _same_as_python(sw, REFUSED)


def test_missing_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("P4REDUCE_CC", "/nonexistent/cc")
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))  # nothing cached
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "python"  # type: ignore[attr-defined]
    _one_line(lines, "no C compiler")
    _same_as_python(sw, SUPPORTED)


def test_compiler_crash(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cc = tmp_path / "crashing-cc"
    cc.write_text("#!/bin/sh\nkill -SEGV $$\n")
    cc.chmod(cc.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("P4REDUCE_CC", str(cc))
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "python"  # type: ignore[attr-defined]
    _one_line(lines, "the C compiler", "failed")
    _same_as_python(sw, SUPPORTED)


def test_compiler_rejecting_the_code(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cc = tmp_path / "strict-cc"
    cc.write_text("#!/bin/sh\necho 'engine.c:1:1: error: nothing compiles today' >&2\nexit 1\n")
    cc.chmod(cc.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("P4REDUCE_CC", str(cc))
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "python"  # type: ignore[attr-defined]
    _one_line(lines, "nothing compiles today")


def test_unwritable_cache_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")  # even root cannot create a directory under a file
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(blocker / "cache"))
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "python"  # type: ignore[attr-defined]
    _one_line(lines, "cache directory")
    _same_as_python(sw, SUPPORTED)


def test_full_cache_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))

    def full(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(build.os, "replace", full)
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "python"  # type: ignore[attr-defined]
    _one_line(lines, "cache directory", "No space left on device")
    assert not list((tmp_path / "cache").glob("*.so"))  # nothing half-written left behind


def test_cache_hit_needs_no_compiler(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if build.compiler() is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "native" and not lines  # type: ignore[attr-defined]
    assert len(list((tmp_path / "cache").glob("p4r_*.so"))) == 1
    monkeypatch.setenv("P4REDUCE_CC", str(tmp_path / "no-such-cc"))
    # no compiler now, but the cached object is used (a second start is instant)
    sw2, lines2 = _switch(SUPPORTED)
    assert sw2.engine == "native" and not lines2  # type: ignore[attr-defined]


def test_stf_cli_says_one_line_and_passes() -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "p4reduce.switch.stf.cli",
            str(REFUSED),
            str(REFUSED.with_suffix(".stf")),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    notes = [ln for ln in run.stderr.splitlines() if "native engine not used" in ln]
    assert len(notes) == 1 and run.stderr.count("\n") == 1, run.stderr
    assert "PASS" in run.stdout


def test_a_killed_compile_leaves_nothing_for_long(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A compile killed before its cleanup leaves a .build-* directory; the next build
    removes it once it is older than any compile may take, and leaves a fresh one (a compile
    running beside it) alone."""
    if build.compiler() is None:
        pytest.skip("no C compiler")
    cache = tmp_path / "cache"
    old, fresh = cache / ".build-killed", cache / ".build-running"
    for d in (old, fresh):
        d.mkdir(parents=True)
        (d / "engine.c").write_text("/* half */")
    hours_ago = os.stat(old).st_mtime - 3 * 3600
    os.utime(old, (hours_ago, hours_ago))
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(cache))
    sw, lines = _switch(SUPPORTED)
    assert sw.engine == "native" and not lines  # type: ignore[attr-defined]
    assert not old.exists() and fresh.exists()
