"""Print how many bmv2_tests programs the native engine runs (``-v``: each refusal, one line).

.venv/bin/python bmv2_tests/native_coverage.py [-v]
"""

from __future__ import annotations

import sys
from pathlib import Path

from p4reduce.switch.frontend.compiler import CompileOptions
from p4reduce.switch.native.probe import native_engine_for

HERE = Path(__file__).resolve().parent


def main(verbose: bool) -> None:
    options = CompileOptions(include_dirs=[HERE])
    programs = sorted(HERE.glob("*.p4"))
    native = 0
    for p in programs:
        reason = native_engine_for(p, options)
        if reason is None:
            native += 1
        elif verbose:
            print(f"{p.stem}: {reason}")
    print(f"{native} of {len(programs)} bmv2_tests programs run natively")


if __name__ == "__main__":
    main("-v" in sys.argv[1:])
