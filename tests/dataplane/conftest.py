"""Data-plane tests of p4src/dense.p4 and p4src/sparse.p4 on the embedded switch.

The helpers (encoder, control plane, result checks) live in fabric.py next to this file.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def _native_label() -> str:
    from p4reduce.switch.native.build import compiler

    return "native" if compiler() is not None else "native-refused"


@pytest.fixture(autouse=True, params=["python", "native"], ids=["python", _native_label()])
def engine(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every data-plane test runs once per engine (both programs run natively: the id says
    "native-refused" only where no C compiler exists, and the check below holds it to that)."""
    import fabric

    fabric.ENGINE["name"] = request.param
    fabric.ENGINE["ran"] = set()
    yield request.param
    ran = fabric.ENGINE["ran"]
    expected = "python" if request.node.callspec.id.endswith("native-refused") else request.param
    assert ran <= {expected}, f"ran on {ran}, the test id says {expected}"
    fabric.ENGINE["name"] = "python"


@pytest.fixture(params=["dense", "sparse"])
def program(request: pytest.FixtureRequest) -> str:
    return request.param
