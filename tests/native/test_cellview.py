"""CellView (switch/native/mirror.py): a slice assignment stores only the cells of the
slice, so it cannot undo what packets changed in the other cells between a read of every
cell and a write of them all (the race NativeRegister.cp_fill was fixed for)."""

from __future__ import annotations

import pytest
from p4reduce.switch.native.mirror import CellView


def view(cells: list[int], log: list[str]) -> CellView:
    def put(i: int, v: int) -> None:
        log.append(f"put {i}")
        cells[i] = v

    def put_all(vs: list[int]) -> None:
        log.append("put_all")
        cells[:] = vs

    return CellView(len(cells), cells.__getitem__, put, lambda: list(cells), put_all)


def test_a_partial_slice_stores_only_its_cells() -> None:
    cells, log = [0] * 6, []
    v = view(cells, log)
    cells[5] = 9  # a packet updates a cell outside the slice meanwhile
    v[1:3] = [7, 8]
    assert cells == [0, 7, 8, 0, 0, 9] and log == ["put 1", "put 2"]
    log.clear()
    v[::-2] = [1, 2, 3]  # an extended slice, in its own order
    assert cells == [0, 3, 8, 2, 0, 1] and log == ["put 5", "put 3", "put 1"]


def test_the_whole_range_is_one_store_and_lengths_must_match() -> None:
    cells, log = [0] * 4, []
    v = view(cells, log)
    v[:] = [1, 2, 3, 4]
    assert cells == [1, 2, 3, 4] and log == ["put_all"]
    with pytest.raises(ValueError, match="number of cells"):
        v[1:3] = [5]
    with pytest.raises(ValueError, match="number of cells"):
        v[:] = [1, 2, 3]
    assert cells == [1, 2, 3, 4]
