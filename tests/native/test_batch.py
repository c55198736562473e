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


def test_every_clone_and_copy_comes_back_on_both_paths(monkeypatch: pytest.MonkeyPatch) -> None:
    """A packet that sends more frames than its multicast group has members (I2E clones to
    a group, E2E clones of each copy, recirculations): the C module and the ctypes path
    (whose first buffer is sized by the largest group, then grows in C) return every frame,
    in the interpreter's order."""
    from p4reduce.switch.frontend.compiler import CompileOptions
    from p4reduce.switch.interp.load import load_pipeline
    from p4reduce.switch.native.select import make_switch

    root = Path(__file__).resolve().parents[2]
    opts = CompileOptions(include_dirs=[root / "bmv2_tests"])
    path = Path(__file__).parent / "p4" / "passes_ops.p4"
    sws = [make_switch(load_pipeline(path, opts), e, clock=lambda: 0) for e in ("python", "native")]
    sws.append(make_switch(load_pipeline(path, opts), "native", clock=lambda: 0))
    for sw in sws:
        sw.pre.set_group(2, [(p, 1) for p in range(1, 5)])
        sw.pre.mirroring_add_mc(3, 2)  # I2E and E2E clones: four copies each
    ref, fast, slow = sws
    assert fast.engine == slow.engine == "native"
    # op 0x81: I2E clones (field list 1) to the group, unicast to port 2, each of the five
    # recirculated once (25 frames); op 0x41: the same clones, each with four E2E clones
    # (25 frames); a packet too short for the header; 200-byte payloads, so the frames
    # outgrow a buffer sized for one group's copies
    payload = bytes(range(200))
    frames = [
        (1, bytes([0x81, 3, 1, 0, 2, 1, 0]) + payload),
        (2, bytes([0x41, 3, 1, 0, 2, 0, 0]) + payload),
        (3, bytes([0x18, 3])),
    ]
    expected = [ref.process(p, f) for p, f in frames]
    assert [len(x) for x in expected] == [25, 25, 1]
    assert [fast.process(p, f) for p, f in frames] == expected
    monkeypatch.setattr(native_engine, "_batch", None)  # the ctypes path
    assert [slow.process(p, f) for p, f in frames] == expected
    assert slow.process_batch(frames) == [x for p, f in frames for x in ref.process(p, f)]
