"""The in-process packet path (switch/native/_batch.c): ``process`` and ``process_batch``
through the C module give what the ctypes path and the interpreter give, on the same
aggregation traffic (multicast, unicast, junk), and bad arguments raise with context."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from p4reduce.switch.native import engine as native_engine
from p4reduce.switch.native.build import compiler

sys.path.insert(0, str(Path(__file__).parents[1] / "dataplane"))

pytestmark = pytest.mark.skipif(
    compiler() is None or native_engine._batch is None, reason="no C compiler or no _batch"
)


def _fabric(engine: str) -> object:
    import fabric

    fabric.ENGINE["name"] = engine
    try:
        fab = fabric.Fabric("dense", seed=1)
    finally:
        fabric.ENGINE["name"] = "python"
    fab.flood_group([1, 2, 3])
    fab.add_job(job_id=9, index=1, n=2, base=0, count=2, ports=[1, 2])
    return fab


def _traffic(fab: object) -> list[tuple[int, bytes | bytearray]]:
    job = fab.jobs[0]  # type: ignore[attr-defined]
    frames: list[tuple[int, bytes | bytearray]] = []
    for slot in range(2):
        for set_ in range(2):
            for w in job.workers:
                frames.append((w.port, w.packet(slot, set_, list(range(slot, slot + 64)))))
    frames.append((3, b"\x00" * 20))  # too short for anything
    frames.append((1, b""))
    frames.append((2, bytearray(frames[0][1])))  # any bytes-like object
    return frames


def test_batch_module_matches_ctypes_path_and_interpreter(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fast, slow, ref = _fabric("native"), _fabric("native"), _fabric("python")
    assert fast.switch.engine == "native"  # type: ignore[attr-defined]
    frames = _traffic(ref)
    expected = [ref.switch.process(p, bytes(f)) for p, f in frames]  # type: ignore[attr-defined]
    # one call per packet, then the whole stream as one batch (registers carry on)
    got_one = [fast.switch.process(p, f) for p, f in frames]  # type: ignore[attr-defined]
    assert got_one == expected
    got_batch = fast.switch.process_batch(frames)  # type: ignore[attr-defined]
    expected_batch = [x for p, f in frames for x in ref.switch.process(p, bytes(f))]  # type: ignore[attr-defined]
    assert got_batch == expected_batch
    monkeypatch.setattr(native_engine, "_batch", None)  # the ctypes path
    assert [slow.switch.process(p, bytes(f)) for p, f in frames] == expected  # type: ignore[attr-defined]
    assert slow.switch.process_batch([(p, bytes(f)) for p, f in frames]) == expected_batch  # type: ignore[attr-defined]
    assert fast.switch.process_batch([]) == []  # type: ignore[attr-defined]


def test_batch_bad_arguments_raise_with_context() -> None:
    sw = _fabric("native").switch  # type: ignore[attr-defined]
    with pytest.raises(TypeError, match="packet 1: expected a \\(port, bytes\\) tuple"):
        sw.process_batch([(1, b"\x00" * 60), [1, b"\x00"]])
    with pytest.raises(TypeError):
        sw.process_batch([(1, "not bytes")])
    with pytest.raises(TypeError):
        sw.process_batch(42)
    sw.close()
    with pytest.raises((TypeError, ValueError)):
        sw.process(1, b"\x00" * 60)  # a closed engine is refused, never touched
