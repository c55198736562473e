"""The switch's ports, readable over P4Runtime: what the controller checks job members against.

``p4reduce-switch`` answers a P4Runtime read of the extern type ``PORTS_EXTERN_TYPE_ID`` with
one ``ExternEntry`` per port (``extern_id`` = the port number) and one for its UDP adapter
(``extern_id`` = ``ADAPTER_ID``), each holding a ``google.protobuf.Struct``:

- a UDP port: ``{"port": N, "peer": "IP:PORT"}``; an interface port: ``{"port": N,
  "iface": NAME}``;
- the adapter: ``{"listen": "IP:PORT", "unknown_sender": COUNT}`` (datagrams it dropped
  because no port stands for their sender).

The extern type id is p4reduce's own (no P4Info declares it), so a switch that does not know
it (BMv2) answers UNIMPLEMENTED or INVALID_ARGUMENT, and the controller then checks nothing.
The switch side encodes, the controller decodes: both through this one module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf import json_format, struct_pb2

from p4reduce.proto import p4runtime_pb2

PORTS_EXTERN_TYPE_ID = 0x7034_5201
"""'p4R' and 1: far from the ids P4Info gives its externs (a one-byte prefix and an index)."""
ADAPTER_ID = 0xFFFF_FFFF
"""The UDP adapter's entry (no switch port has this number)."""


@dataclass(frozen=True)
class PortMap:
    """The switch's ports as a controller reads them."""

    peers: dict[int, tuple[str, int]]  # UDP ports: number -> the peer it stands for
    ifaces: dict[int, str]  # interface ports: number -> interface name
    unknown_sender: int = 0  # datagrams the UDP adapter dropped: no port's peer sent them
    listen: str | None = None  # the UDP adapter's address, when there is one

    @property
    def numbers(self) -> set[int]:
        return set(self.peers) | set(self.ifaces)


def request() -> Any:
    """The read entity that asks for the port entries."""
    ent = p4runtime_pb2.Entity()
    ent.extern_entry.extern_type_id = PORTS_EXTERN_TYPE_ID
    return ent


def wanted(entity: Any) -> bool:
    """Whether a read entity asks for the port entries."""
    return (
        entity.WhichOneof("entity") == "extern_entry"
        and entity.extern_entry.extern_type_id == PORTS_EXTERN_TYPE_ID
    )


def _entity(extern_id: int, fields: dict[str, Any]) -> Any:
    ent = p4runtime_pb2.Entity()
    ent.extern_entry.extern_type_id = PORTS_EXTERN_TYPE_ID
    ent.extern_entry.extern_id = extern_id
    ent.extern_entry.entry.Pack(json_format.ParseDict(fields, struct_pb2.Struct()))
    return ent


def encode(ports: PortMap) -> list[Any]:
    """The read answer: one entity per port, and the adapter's when there is one."""
    out = [
        _entity(n, {"port": n, "peer": f"{ip}:{p}"}) for n, (ip, p) in sorted(ports.peers.items())
    ]
    out += [_entity(n, {"port": n, "iface": name}) for n, name in sorted(ports.ifaces.items())]
    if ports.listen is not None:
        adapter = {"listen": ports.listen, "unknown_sender": ports.unknown_sender}
        out.append(_entity(ADAPTER_ID, adapter))
    return out


def decode(entities: list[Any]) -> PortMap:
    """A read answer (Entity or ExternEntry messages) back into a PortMap (entries of other
    extern types are ignored)."""
    peers: dict[int, tuple[str, int]] = {}
    ifaces: dict[int, str] = {}
    unknown, listen = 0, None
    for ent in entities:
        if isinstance(ent, p4runtime_pb2.Entity):
            if not wanted(ent):
                continue
            ent = ent.extern_entry
        if not isinstance(ent, p4runtime_pb2.ExternEntry):
            continue
        if ent.extern_type_id != PORTS_EXTERN_TYPE_ID:
            continue
        fields = struct_pb2.Struct()
        ent.entry.Unpack(fields)
        d = json_format.MessageToDict(fields)
        if ent.extern_id == ADAPTER_ID:
            unknown, listen = int(d.get("unknown_sender", 0)), str(d.get("listen", ""))
        elif "peer" in d:
            ip, _, port = str(d["peer"]).rpartition(":")
            peers[int(d["port"])] = (ip, int(port))
        else:
            ifaces[int(d["port"])] = str(d.get("iface", ""))
    return PortMap(peers, ifaces, unknown, listen)
