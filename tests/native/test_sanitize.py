"""The native I/O loop under AddressSanitizer and UBSan: asan_fuzz.py in a subprocess with
libasan preloaded (a sanitized shared object cannot be loaded into an unsanitized Python
otherwise). Skipped, with the reason, where the compiler has no libasan."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from p4reduce.switch.native import ioloop

HERE = Path(__file__).resolve().parent


def _libasan() -> str | None:
    cc = ioloop.compiler()
    if cc is None:
        return None
    out = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if out.returncode == 0 and os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.timeout(300)
def test_framing_and_loop_under_asan_and_ubsan(lib, handler_so: Path) -> None:
    libasan = _libasan()
    if libasan is None:
        pytest.skip("the C compiler has no libasan.so (-fsanitize=address unavailable)")
    env = dict(
        os.environ,
        LD_PRELOAD=libasan,
        # Python itself leaks by design at exit; every other report aborts the run.
        ASAN_OPTIONS="detect_leaks=0:abort_on_error=0:halt_on_error=1",
        UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1",
        PYTHONMALLOC="malloc",
    )
    proc = subprocess.run(
        [sys.executable, str(HERE / "asan_fuzz.py"), str(handler_so)],
        env=env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    report = proc.stdout[-3000:] + proc.stderr[-6000:]
    assert proc.returncode == 0, report
    assert "asan-fuzz ok" in proc.stdout, report
    assert "runtime error" not in proc.stderr, report  # UBSan's reports
