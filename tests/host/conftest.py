"""Tests of the host agent's pure parts: wire, quantize and the protocol core.

The helpers next to this file (agg_model: a switch model written from docs/protocol.md;
agg_sim: a lossy network on a virtual clock; agg_ref: reference results) are imported by
name, so this folder goes on sys.path.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
