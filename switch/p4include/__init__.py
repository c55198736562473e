"""Our own core.p4 and v1model.p4, declaration-compatible with p4c's, shipped as package data."""

from pathlib import Path

INCLUDE_DIR = Path(__file__).resolve().parent
