"""Building the native I/O loop: the content-hash cache, and the one-line failures that make
the switch fall back to its Python loop (no compiler, a compiler that fails, a cache it
cannot write)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from p4reduce.switch.native import ioloop


def test_cached_by_content_hash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if ioloop.compiler() is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path))
    first = ioloop.build()
    stamp = first.stat().st_mtime_ns
    assert ioloop.build() == first and first.stat().st_mtime_ns == stamp  # not rebuilt
    assert first.parent == tmp_path and [p.name for p in tmp_path.iterdir()] == [first.name]


@pytest.mark.parametrize(
    "cc, needle",
    [("false", "failed on ioloop.c"), ("/nonexistent/cc", "no C compiler found")],
)
def test_a_failing_or_missing_compiler_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cc: str, needle: str
) -> None:
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("CC", cc)
    with pytest.raises(ioloop.NativeUnavailable, match=needle) as err:
        ioloop.build()
    assert "\n" not in str(err.value)
    assert list(tmp_path.iterdir()) == []  # no half-written object left behind


def test_no_compiler_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("P4REDUCE_CC", raising=False)
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ioloop.NativeUnavailable, match="no C compiler"):
        ioloop.build()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories")
def test_an_unwritable_cache_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if ioloop.compiler() is None:
        pytest.skip("no C compiler")
    tmp_path.chmod(0o500)
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    try:
        with pytest.raises(ioloop.NativeUnavailable, match="cache directory"):
            ioloop.build()
    finally:
        tmp_path.chmod(0o700)


def test_a_cache_path_that_is_a_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if ioloop.compiler() is None:
        pytest.skip("no C compiler")
    (tmp_path / "cache").write_text("not a directory")
    monkeypatch.setenv("P4REDUCE_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(ioloop.NativeUnavailable, match="cache directory"):
        ioloop.build()
