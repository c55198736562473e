"""python -m p4reduce.contracts [--check] [--root DIR] [--spec FILE]: regenerate
p4src/include/constants.p4 and host/_engine/contracts.h from spec.py (--check: only say which
are stale, exit 1 if any)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import generate

ROOT = Path(__file__).resolve().parents[2]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m p4reduce.contracts", description=__doc__)
    ap.add_argument("--check", action="store_true", help="report stale files, write nothing")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout (default: this one)")
    ap.add_argument("--spec", type=Path, help="a spec file instead of p4reduce/contracts/spec.py")
    a = ap.parse_args(argv)
    for rel in generate.outputs():
        if not (a.root / rel).parent.is_dir():
            ap.error(f"{a.root}: no {Path(rel).parent}/ (not a p4reduce checkout)")
    try:
        spec = generate.load_spec(a.spec)
    except (OSError, SyntaxError, ValueError, AttributeError) as e:
        ap.error(f"{a.spec}: {e}")
    if a.check:
        bad = generate.stale(a.root, spec)
        for rel in bad:
            print(f"{rel}: stale (run python -m p4reduce.contracts)", file=sys.stderr)
        return 1 if bad else 0
    for rel in generate.write(a.root, spec):
        print(f"wrote {rel}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
