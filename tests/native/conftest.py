"""Fixtures for the native I/O loop tests: the loop's library and a tiny C test handler."""

from __future__ import annotations

import ctypes
import importlib.util
import subprocess
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest
from p4reduce.switch.native import ioloop

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def lib() -> ctypes.CDLL:
    loaded = ioloop.load()
    if loaded is None:
        pytest.skip(f"native I/O loop unavailable: {ioloop.unavailable_reason()}")
    return loaded


class TestCtx(ctypes.Structure):
    _fields_ = [
        ("cpu_port", ctypes.c_uint32),
        ("nports", ctypes.c_uint32),
        ("ports", ctypes.c_uint32 * 64),
        ("calls", ctypes.c_uint64),
    ]


@dataclass
class Handler:
    """test_handler.c loaded: ``fn`` its address, ``ctx`` a context to configure."""

    so: ctypes.CDLL
    fn: int
    ctx: TestCtx

    @property
    def ctx_address(self) -> int:
        return ctypes.addressof(self.ctx)

    def group(self, ports: list[int]) -> None:
        self.ctx.nports = len(ports)
        for i, p in enumerate(ports):
            self.ctx.ports[i] = p


@pytest.fixture(scope="session")
def handler_so(tmp_path_factory: pytest.TempPathFactory, lib: ctypes.CDLL) -> Path:
    compiler = ioloop.compiler()
    out = tmp_path_factory.mktemp("handler") / "test_handler.so"
    subprocess.run(
        [compiler, "-O2", "-shared", "-fPIC", "-I", str(ioloop.RUNTIME), "-o", str(out),
         str(HERE / "test_handler.c")],
        check=True,
    )  # fmt: skip
    return out


@pytest.fixture
def handler(handler_so: Path) -> Handler:
    so = ctypes.CDLL(str(handler_so))
    fn = ctypes.cast(so.test_handler, ctypes.c_void_p).value
    assert fn
    return Handler(so, fn, TestCtx())


def load_bench_floor() -> ModuleType:
    """bench/floor.py (bench/ is not a package: loaded by path), for the tests of the run-time
    build and of the kernel floor."""
    path = HERE.parents[1] / "bench" / "floor.py"
    spec = importlib.util.spec_from_file_location("p4r_bench_floor", path)
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
