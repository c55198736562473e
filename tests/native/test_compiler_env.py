"""One compiler lookup for every run-time build (switch/native/build.py): the native engine,
the native I/O loop and the benchmarks' reflector all compile with $P4REDUCE_CC when it is
set, and all report a P4REDUCE_CC that names no program as one line (their callers then fall
back to Python)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from p4reduce.switch.native import build, ioloop

from tests.native.conftest import load_bench_floor


def _users():
    floor = load_bench_floor()
    return {
        "engine": (lambda: build.build("int p4r_probe_fn(void) { return 7; }\n"), build.BuildError),
        "ioloop": (ioloop.build, ioloop.NativeUnavailable),
        "floor": (floor.build, floor.FloorUnavailable),
    }


def test_every_user_compiles_with_p4reduce_cc(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = build.compiler()
    if real is None:
        pytest.skip("no C compiler")
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "logging-cc"
    wrapper.write_text(f'#!/bin/sh\necho "$@" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("P4REDUCE_CC", str(wrapper))
    monkeypatch.setenv("CC", "/nonexistent/cc")  # P4REDUCE_CC wins over CC
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    for name, (make, _) in _users().items():
        before = log.read_text().count("\n") if log.exists() else 0
        out = make()
        assert out.exists() and out.parent == tmp_path / "cache", name
        assert log.read_text().count("\n") == before + 1, f"{name} did not use P4REDUCE_CC"
        assert make() == out and log.read_text().count("\n") == before + 1  # cached
    # the reflector is a program that runs
    floor_exe = _users()["floor"][0]()
    assert floor_exe.stat().st_mode & 0o111


@pytest.mark.parametrize("var", ["P4REDUCE_CC", "CC"])
def test_a_missing_named_compiler_is_one_line_for_every_user(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, var: str
) -> None:
    monkeypatch.delenv("P4REDUCE_CC", raising=False)
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.setenv(var, str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    assert build.compiler() is None  # a named compiler that is missing: none, not cc
    for name, (make, error) in _users().items():
        with pytest.raises(error, match="no C compiler found") as err:
            make()
        assert "\n" not in str(err.value), name
    assert not (tmp_path / "cache").exists()  # the lookup fails before anything is written


def test_the_lookup_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4REDUCE_CC", sys.executable)
    monkeypatch.setenv("CC", "/bin/sh")
    assert build.compiler() == sys.executable
    monkeypatch.delenv("P4REDUCE_CC")
    assert build.compiler() == "/bin/sh"
