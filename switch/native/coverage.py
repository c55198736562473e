"""How many of a folder's STF programs the native engine runs, and why it refuses the others.

    python -m p4reduce.switch.native.coverage [FOLDER]   (default: the repository's bmv2_tests)

Prints one line per refused program (``NAME: reason``) and then ``N of M run natively``.
Answers come from ``probe.native_engine_for`` (cached, as the test suite's ids are).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..frontend.compiler import CompileOptions
from .probe import native_engine_for


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    folder = Path(args[0]) if args else Path(__file__).resolve().parents[2] / "bmv2_tests"
    cases = sorted(p.stem for p in folder.glob("*.stf") if p.with_suffix(".p4").is_file())
    if not cases:
        print(f"coverage: error: no NAME.stf with a NAME.p4 in {folder}", file=sys.stderr)
        return 2
    options = CompileOptions(include_dirs=[folder])
    native = 0
    for name in cases:
        reason = native_engine_for(folder / f"{name}.p4", options)
        if reason is None:
            native += 1
        else:
            print(f"{name}: {reason}")
    print(f"{native} of {len(cases)} run natively")
    return 0


if __name__ == "__main__":
    sys.exit(main())
