"""Tests of the torch integration (p4reduce.host.torch): scenarios of ranks.py run as one
process per rank by ranks_harness.py, which is imported by name, so this folder goes on
sys.path."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
