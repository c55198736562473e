"""Fixtures for the P4Runtime server tests (helpers live in p4rt_client.py)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from p4rt_client import PROGRAM, Compiled, Harness, compile_program  # noqa: E402


@pytest.fixture(scope="session")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> Compiled:
    return compile_program(PROGRAM, tmp_path_factory.mktemp("p4rt"))


@pytest.fixture
def harness(compiled: Compiled) -> Iterator[Harness]:
    h = Harness(compiled)
    try:
        yield h
    finally:
        h.close()


@pytest.fixture
def bare(compiled: Compiled) -> Iterator[Harness]:
    """A running server with no pipeline pushed (the primary client is connected)."""
    h = Harness(compiled, push=False)
    try:
        yield h
    finally:
        h.close()
