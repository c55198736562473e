"""Data-plane tests of p4src/dense.p4 and p4src/sparse.p4 on the embedded switch.

The helpers (encoder, control plane, result checks) live in fabric.py next to this file.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(params=["dense", "sparse"])
def program(request: pytest.FixtureRequest) -> str:
    return request.param
