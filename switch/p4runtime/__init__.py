"""P4Runtime server for the embedded v1model switch (docs/p4runtime.md)."""

from .device import Device
from .errors import P4RTError
from .server import API_VERSION, P4RuntimeServer

__all__ = ["Device", "P4RuntimeServer", "P4RTError", "API_VERSION"]
