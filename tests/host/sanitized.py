"""The native core (host/_engine/*.c) built with a sanitizer, and a child Python that runs a
script on it (a sanitized shared object needs its runtime preloaded, so it cannot be
loaded into the test process). Used by test_native_core.py and test_udp_offload.py."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections.abc import Sequence
from pathlib import Path

from p4reduce.switch.native.build import compiler

ROOT = Path(__file__).resolve().parents[2]

# The head of a child's script: argv[1] is the sanitized module, loaded in place of the
# installed p4reduce.host._engine_c (and of the native core's reference to it).
LOAD_ENGINE = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("p4reduce.host._engine_c", sys.argv[1])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
sys.modules["p4reduce.host._engine_c"] = mod
import p4reduce.host
p4reduce.host._engine_c = mod
from p4reduce.host.protocol import native
native._C = mod
"""


def runtime(name: str) -> str | None:
    """The path of the compiler's sanitizer runtime ``name`` (libasan.so, libtsan.so), or
    None where there is no compiler or it has none."""
    cc = compiler()
    if cc is None:
        return None
    out = subprocess.run([cc, f"-print-file-name={name}"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


def build_engine(out: Path, sanitize: Sequence[str], timeout: float = 300) -> Path:
    """host/_engine/*.c as one shared object at ``out``, with ``sanitize`` flags."""
    cc = compiler()
    assert cc is not None
    sources = [str(p) for p in sorted((ROOT / "host" / "_engine").glob("*.c"))]
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-g", "-ffp-contract=off", "-fno-strict-aliasing",
         *sanitize, "-pthread", f"-I{sysconfig.get_paths()['include']}", *sources,
         "-o", str(out)],
        check=True, capture_output=True, timeout=timeout,
    )  # fmt: skip
    return out


def run_child(
    script: str, args: Sequence[str], env: dict[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``script`` in a child Python with ``args`` and ``env`` added to this environment."""
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        env=os.environ | env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def asan_engine(tmp_path: Path) -> tuple[Path, dict[str, str]] | None:
    """The core under AddressSanitizer and UBSan (any report aborts the child) and the
    environment its child needs; None where the compiler has no libasan."""
    asan = runtime("libasan.so")
    if asan is None:
        return None
    so = build_engine(
        tmp_path / "_engine_c_asan.so",
        ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined",
         "-fno-omit-frame-pointer"],
    )  # fmt: skip
    env = {
        "LD_PRELOAD": asan,
        # CPython's own allocations are not instrumented; leaks at exit are its own
        "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
        "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1",
        "PYTHONMALLOC": "malloc",
    }
    return so, env
