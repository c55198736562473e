"""The BMv2 differential oracle: its modules live next to the tests (bmv2_oracle.py,
bmv2_run.py, case_gen.py, agg_gen.py) and use tests/dataplane's frame encoders."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
for d in (HERE, HERE.parent / "dataplane"):
    if str(d) not in sys.path:
        sys.path.insert(0, str(d))
