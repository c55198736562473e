"""Fixtures of the controller tests: the p4src programs compiled once per session, and a fresh
embedded switch (P4Runtime on an ephemeral port) per test, stopped afterwards."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from ctl_helpers import SWITCH_IP, SWITCH_MAC, Switch, compile_program  # noqa: E402
from p4reduce.controller import Controller, Host, StaticConfig  # noqa: E402


@pytest.fixture(scope="session")
def programs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("ctl-build")
    return {name: compile_program(name, out) for name in ("dense", "sparse")}


@pytest.fixture
def switch() -> Iterator[Switch]:
    sw = Switch().start()
    try:
        yield sw
    finally:
        sw.stop()


STATIC = StaticConfig(
    SWITCH_IP, SWITCH_MAC, tuple(Host(p, f"02:00:00:00:00:{p:02x}") for p in range(1, 5))
)


@pytest.fixture
def ctl(switch: Switch, programs: dict[str, Path]) -> Iterator[Controller]:
    """A primary controller with the dense program pushed and the static config installed."""
    c = Controller(switch.addr).connect()  # the default timeout: a loaded machine is slow
    try:
        c.push(programs["dense"])
        c.install_static(STATIC)
        yield c
    finally:
        c.close()


@pytest.fixture
def sparse_ctl(switch: Switch, programs: dict[str, Path]) -> Iterator[Controller]:
    c = Controller(switch.addr).connect()  # the default timeout: a loaded machine is slow
    try:
        c.push(programs["sparse"])
        c.install_static(STATIC)
        yield c
    finally:
        c.close()
