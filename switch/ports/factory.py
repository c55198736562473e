"""Opening the ports a switch's ``-i`` options name."""

from __future__ import annotations

from collections.abc import Iterable

from .base import Port, PortSpec
from .raw import RawSocketPort
from .udp import DEFAULT_LISTEN, UdpAdapter


def open_ports(
    specs: Iterable[PortSpec], udp_listen: tuple[str, int] = DEFAULT_LISTEN, **udp_options
) -> dict[int, Port]:
    """One open port per spec, by port number: a RawSocketPort per interface and one shared
    UdpAdapter for all UDP peers (created only if there is one). A port number or interface
    given twice is a ValueError; if any port fails to open, those already open are closed."""
    specs = list(specs)
    numbers: dict[int, PortSpec] = {}
    ifaces: dict[str, PortSpec] = {}
    for spec in specs:
        if spec.number in numbers:
            raise ValueError(f"port {spec.number} is given twice: {numbers[spec.number]}, {spec}")
        numbers[spec.number] = spec
        if spec.iface is not None:
            if spec.iface in ifaces:
                raise ValueError(
                    f"interface {spec.iface!r} is bound twice: {ifaces[spec.iface]}, {spec}"
                )
            ifaces[spec.iface] = spec
    ports: dict[int, Port] = {}
    try:
        if any(spec.is_udp for spec in specs):
            adapter = UdpAdapter.from_specs(specs, udp_listen, **udp_options)
            ports.update(adapter.ports)
        for spec in specs:
            if spec.iface is not None:
                ports[spec.number] = RawSocketPort(spec.number, spec.iface)
    except BaseException:
        for port in ports.values():
            port.close()
        raise
    return dict(sorted(ports.items()))
