"""Switch ports for the ``p4reduce-switch`` process (simple_switch_grpc's ``-i`` option):
``N@IFACE`` binds a Linux interface with a raw socket (``RawSocketPort``), ``N@udp:HOST:PORT``
makes port N stand for a UDP peer behind the loopback adapter (``UdpAdapter``).
See docs/ports.md."""

from __future__ import annotations

from .base import (
    DROP_PORT,
    MAX_FRAME,
    MAX_PORT_NUMBER,
    MIN_FRAME,
    FrameSource,
    Port,
    PortCounters,
    PortSpec,
    frame_sources,
    parse_host_port,
    parse_port_spec,
)
from .factory import open_ports
from .raw import RawSocketPort, have_raw_socket_privilege
from .udp import DEFAULT_LISTEN, DEFAULT_SWITCH_MAC, UdpAdapter, UdpPort

__all__ = [
    "DEFAULT_LISTEN",
    "DEFAULT_SWITCH_MAC",
    "DROP_PORT",
    "MAX_FRAME",
    "MAX_PORT_NUMBER",
    "MIN_FRAME",
    "FrameSource",
    "Port",
    "PortCounters",
    "PortSpec",
    "RawSocketPort",
    "UdpAdapter",
    "UdpPort",
    "frame_sources",
    "have_raw_socket_privilege",
    "open_ports",
    "parse_host_port",
    "parse_port_spec",
]
