"""The p4r_handler_fn contract (switch/native/runtime/p4r_handler.h) that the native I/O loop
calls: driven here through ctypes, it emits what ``process`` returns, in order, and control
plane changes made between calls are seen by the next frame."""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

import pytest
from p4reduce.switch.native.build import compiler

sys.path.insert(0, str(Path(__file__).parents[1] / "dataplane"))

pytestmark = pytest.mark.skipif(compiler() is None, reason="no C compiler")

EMIT = ctypes.CFUNCTYPE(
    None, ctypes.c_void_p, ctypes.c_uint32, ctypes.POINTER(ctypes.c_uint8), ctypes.c_uint32
)
HANDLER = ctypes.CFUNCTYPE(
    ctypes.c_int,
    ctypes.c_void_p,
    ctypes.c_uint32,
    ctypes.c_char_p,
    ctypes.c_uint32,
    EMIT,
    ctypes.c_void_p,
)


def _fabrics() -> tuple[object, object]:
    import fabric

    fabs = []
    for engine in ("native", "native"):
        fabric.ENGINE["name"] = engine
        try:
            fab = fabric.Fabric("dense", seed=1)
        finally:
            fabric.ENGINE["name"] = "python"
        fab.flood_group([1, 2, 3])
        fab.add_job(job_id=9, index=1, n=2, base=0, count=2, ports=[1, 2])
        fabs.append(fab)
    return fabs[0], fabs[1]


def test_handler_emits_what_process_returns() -> None:
    by_call, by_handler = _fabrics()
    assert by_handler.switch.engine == "native"  # type: ignore[attr-defined]
    fn, ctx = by_handler.switch.native_handler()  # type: ignore[attr-defined]
    handler = HANDLER(fn)
    got: list[tuple[int, bytes]] = []

    @EMIT
    def emit(_ctx: object, port: int, frame: object, length: int) -> None:
        got.append((port, ctypes.string_at(frame, length)))

    job = by_call.jobs[0]  # type: ignore[attr-defined]
    frames = []
    for slot in range(2):
        for w in job.workers:
            frames.append((w.port, w.packet(slot, 0, list(range(64)))))
    frames.append((3, b"\x00" * 20))  # too short for anything: flooded or dropped, never a crash
    frames.append((1, b""))
    for port, frame in frames:
        got.clear()
        rc = handler(ctx, port, frame, len(frame), emit, None)
        assert rc == 0
        assert got == by_call.switch.process(port, frame)  # type: ignore[attr-defined]


def test_control_plane_changes_between_frames_are_seen() -> None:
    _, fab = _fabrics()
    fn, ctx = fab.switch.native_handler()  # type: ignore[attr-defined]
    handler = HANDLER(fn)
    got: list[int] = []

    @EMIT
    def emit(_ctx: object, port: int, frame: object, length: int) -> None:
        got.append(port)

    job = fab.jobs[0]  # type: ignore[attr-defined]
    w = job.workers[0]
    frame = w.packet(0, 0, None)
    handler(ctx, w.port, frame, len(frame), emit, None)
    admitted = fab.job_counters(job.index)  # type: ignore[attr-defined]
    assert admitted  # the packet was counted
    fab.tables["SwitchIngress.admission.workers"].clear()  # type: ignore[attr-defined]
    before = dict(fab.job_counters(job.index))  # type: ignore[attr-defined]
    frame2 = w.packet(1, 0, None)
    handler(ctx, w.port, frame2, len(frame2), emit, None)
    after = fab.job_counters(job.index)  # type: ignore[attr-defined]
    assert after == before  # an unknown sender is counted under no job of this index


def test_handler_emits_clones_resubmits_and_recirculations_in_order() -> None:
    """The I/O loop's entry point runs a packet's whole tree of passes (I2E and E2E clones
    through a session to a group, multicast, resubmit, recirculate, truncation) and emits the
    frames in the order the interpreter sends them; a session deleted between frames is seen."""
    from p4reduce.switch.frontend.compiler import CompileOptions
    from p4reduce.switch.interp.load import load_pipeline
    from p4reduce.switch.native.select import make_switch

    opts = CompileOptions(include_dirs=[Path(__file__).resolve().parents[2] / "bmv2_tests"])
    path = Path(__file__).parent / "p4" / "passes_ops.p4"
    ref = make_switch(load_pipeline(path, opts), "python", clock=lambda: 0)
    nat = make_switch(load_pipeline(path, opts), "native", clock=lambda: 0)
    assert nat.engine == "native"
    handler = HANDLER(nat.native_handler()[0])
    got: list[tuple[int, bytes]] = []

    @EMIT
    def emit(_ctx: object, port: int, frame: object, length: int) -> None:
        got.append((port, ctypes.string_at(frame, length)))

    def check(port: int, frame: bytes) -> list[tuple[int, bytes]]:
        got.clear()
        assert handler(nat.native_handler()[1], port, frame, len(frame), emit, None) == 0
        assert got == ref.process(port, frame)
        return list(got)

    for sw in (ref, nat):
        sw.pre.set_group(2, [(3, 1), (4, 2)])
        sw.pre.mirroring_add_mc(3, 2, 12)  # to the group, cut to 12 bytes
    # I2E clones by field list, E2E clones, recirculate once, truncation
    assert len(check(1, bytes([0xC1, 3, 1, 0, 2, 1, 40]) + bytes(60))) > 10
    assert len(check(2, bytes([0x18, 3, 2, 2, 5, 2, 0]) + bytes(8))) == 2  # resubmits, group
    for sw in (ref, nat):
        sw.pre.mirroring_delete(3)
    assert len(check(1, bytes([0x01, 3, 1, 0, 2, 0, 0]))) == 1  # no session: no clone
