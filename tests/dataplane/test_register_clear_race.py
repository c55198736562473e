"""Clearing one job's slots must not undo another job's aggregation (the tenants failure).

The controller clears a job's slot range with one RegisterEntry write per cell when it
creates or deletes the job, while other jobs keep aggregating. On the native engine the data
plane (the I/O loop) updates register cells between any two engine calls the control plane
makes. A write of some cells that read the whole array and wrote it back rewound every
other cell to the snapshot: in the tenants experiment job 2's bitmap of slot 0 went back to
"rank 0 contributed to set 0", so its next use of set 0 was taken as a duplicate and answered
with the stored priming result ("carries exponent 129 for block 128").

The engine here is wrapped so that after each call the control plane makes, a packet of
"another job" writes a fresh cell, as the I/O loop may; every such write must survive.
"""

from __future__ import annotations

import random
from typing import Any

import fabric
import pytest
from fabric import compiled
from p4reduce.controller import program
from p4reduce.switch.interp.builder import build_pipeline
from p4reduce.switch.native.select import make_switch


class _DataPlaneBetweenCalls:
    """The real engine, with a data-plane update of register ``reg`` after every call."""

    def __init__(self, engine: Any, reg: int, cells: list[int]) -> None:
        self._engine, self._reg = engine, reg
        self._cells = iter(cells)
        self.written: dict[int, int] = {}

    def __getattr__(self, name: str) -> Any:
        real = getattr(self._engine, name)
        if not callable(real):
            return real

        def call(*args: Any, **kw: Any) -> Any:
            out = real(*args, **kw)
            cell = next(self._cells)
            value = len(self.written) + 1  # fits every register here (counts: 8 bits)
            self._engine.reg_set(self._reg, cell, value)
            self.written[cell] = value
            return out

        return call


@pytest.mark.parametrize("name", [program.BITMAPS, program.COUNTS])
def test_clearing_some_cells_keeps_concurrent_updates_of_the_others(engine: str, name: str) -> None:
    if engine != "native":
        pytest.skip("the Python engine has no concurrent data plane (cp_write, cell by cell)")
    c = compiled("dense")
    assert c.checked is not None
    sw = make_switch(build_pipeline(c.checked, c.name, random.Random(0)), "native", notice=None)
    fabric.ENGINE["ran"].add(sw.engine)
    if sw.engine != "native":
        pytest.skip("the native engine is unavailable here")
    reg = sw.pipeline.registers[name]
    store = reg.store  # the native engine's (switch/native/mirror.py)
    eng, r = store.eng, store.index
    cleared = list(range(128, 136))  # "job 1's" cells, being cleared
    for i in cleared:
        reg.cp_write(i, 1)
    others = list(range(0, 64))  # "job 2's" cells, aggregating meanwhile
    plane = _DataPlaneBetweenCalls(eng, r, others)
    store.eng = plane
    try:
        for i in cleared:  # the controller's clear: one RegisterEntry (one index) per cell
            reg.cp_fill([i], 0)
    finally:
        store.eng = eng
    assert plane.written, "the data plane never ran between engine calls"
    assert [reg.cp_read(i) for i in cleared] == [0] * len(cleared)
    lost = {i: v for i, v in plane.written.items() if reg.cp_read(i) != v}
    assert not lost, f"the clear rewound cells updated meanwhile: {sorted(lost)}"
