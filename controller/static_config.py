"""The configuration a switch needs before any job: its own addresses, and forwarding for
ordinary traffic.

- ``switch_ipv4``: the switch's IPv4 address -> ``is_switch(mac)`` (aggregation packets are
  taken only when sent to it; results leave from ``mac``); ``arp_replies``: that address ->
  ``reply(mac)``.
- hosts (MAC, port): ``l2_forward`` MAC -> ``to_port(port)``, and the flood group
  ``FLOOD_MGID`` = 1 with every host port (rid 0).
- routes (prefix -> port, source MAC, destination MAC): ``ipv4_routes`` -> ``route``.

Writes are idempotent: what exists is modified in place.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import addr, program
from .errors import InvalidArgument
from .jobs import multicast_group, replica_port, upsert
from .p4info import Schema
from .p4rt import Connection


@dataclass(frozen=True)
class Host:
    """A host behind a switch port (for L2 forwarding and flooding)."""

    port: int
    mac: str

    @classmethod
    def parse(cls, text: str) -> Host:
        """``PORT:MAC``."""
        port, sep, mac = text.partition(":")
        if not sep:
            raise InvalidArgument(f"bad host {text!r} (want PORT:MAC, e.g. 1:02:00:00:00:00:01)")
        return cls(
            addr.switch_port(port, f"port of host {text!r}"),
            addr.mac_str(addr.mac(mac, f"MAC of host {text!r}")),
        )


@dataclass(frozen=True)
class Route:
    """An IPv4 route: prefix -> out of ``port``, rewriting the MACs."""

    prefix: str
    port: int
    src_mac: str
    dst_mac: str

    @classmethod
    def parse(cls, text: str) -> Route:
        """``PREFIX/LEN:PORT:SRC_MAC:DST_MAC``."""
        parts = text.split(":")
        if len(parts) == 4:
            src, dst = parts[2], parts[3]
        elif len(parts) == 14:
            src, dst = ":".join(parts[2:8]), ":".join(parts[8:14])
        else:
            raise InvalidArgument(f"bad route {text!r} (want PREFIX/LEN:PORT:SRC_MAC:DST_MAC)")
        value, plen = addr.prefix(parts[0], f"prefix of route {text!r}")
        return cls(
            f"{addr.ipv4_str(value)}/{plen}",
            addr.switch_port(parts[1], f"port of route {text!r}"),
            addr.mac_str(addr.mac(src, f"source MAC of route {text!r}")),
            addr.mac_str(addr.mac(dst, f"destination MAC of route {text!r}")),
        )


@dataclass
class StaticConfig:
    switch_ip: str | None = None
    switch_mac: str | None = None
    hosts: tuple[Host, ...] = ()
    routes: tuple[Route, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "switch_ip": self.switch_ip,
            "switch_mac": self.switch_mac,
            "hosts": [asdict(h) for h in self.hosts],
            "routes": [asdict(r) for r in self.routes],
        }


def install(conn: Connection, schema: Schema, cfg: StaticConfig) -> None:
    if (cfg.switch_ip is None) != (cfg.switch_mac is None):
        raise InvalidArgument("give the switch's IPv4 address and MAC together")
    entries = []
    if cfg.switch_ip is not None and cfg.switch_mac is not None:
        ip = addr.ipv4(cfg.switch_ip, "switch IPv4 address")
        mac = addr.mac(cfg.switch_mac, "switch MAC address")
        # is_switch(mac): results leave from this MAC (a build without the parameter: none)
        params = {"mac": mac} if "mac" in schema.action(program.IS_SWITCH).params else {}
        entries.append(
            schema.table_entry(
                program.SWITCH_IPV4, {program.F_IPV4_DST: ip}, program.IS_SWITCH, params
            )
        )
        entries.append(
            schema.table_entry(
                program.ARP_REPLIES, {program.F_ARP_TPA: ip}, program.ARP_REPLY, {"mac": mac}
            )
        )
    for h in cfg.hosts:
        entries.append(
            schema.table_entry(
                program.L2_FORWARD,
                {program.F_ETH_DST: addr.mac(h.mac)},
                program.TO_PORT,
                {"port": h.port},
            )
        )
    for r in cfg.routes:
        entries.append(
            schema.table_entry(
                program.IPV4_ROUTES,
                {program.F_IPV4_DST: addr.prefix(r.prefix)},
                program.ROUTE,
                {"port": r.port, "src_mac": addr.mac(r.src_mac), "dst_mac": addr.mac(r.dst_mac)},
            )
        )
    if entries:
        upsert(conn, entries, "static config")
    ports = sorted({h.port for h in cfg.hosts})
    if ports:
        upsert(conn, [multicast_group(program.FLOOD_MGID, [(p, 0) for p in ports])], "flood group")


def read(conn: Connection, schema: Schema) -> StaticConfig:
    """The static configuration on the switch (the first switch address when there are several)."""
    cfg = StaticConfig()
    ips = conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.SWITCH_IPV4).id)],
        "read switch_ipv4",
    )
    arps = {}
    for te in conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.ARP_REPLIES).id)],
        "read arp_replies",
    ):
        d = schema.decode_entry(te)
        if d.action == program.ARP_REPLY:
            arps[d.match[program.F_ARP_TPA]] = d.params["mac"]
    for te in ips:
        d = schema.decode_entry(te)
        if d.action == program.IS_SWITCH:
            ip = d.match[program.F_IPV4_DST]
            cfg.switch_ip = addr.ipv4_str(ip)
            mac = d.params.get("mac", arps.get(ip))
            cfg.switch_mac = addr.mac_str(mac) if mac is not None else None
            break
    hosts = []
    for te in conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.L2_FORWARD).id)], "read l2_forward"
    ):
        d = schema.decode_entry(te)
        if d.action == program.TO_PORT:
            hosts.append(Host(d.params["port"], addr.mac_str(d.match[program.F_ETH_DST])))
    cfg.hosts = tuple(sorted(hosts, key=lambda h: (h.port, h.mac)))
    routes = []
    for te in conn.read(
        [p4runtime_pb2.TableEntry(table_id=schema.table(program.IPV4_ROUTES).id)],
        "read ipv4_routes",
    ):
        d = schema.decode_entry(te)
        if d.action == program.ROUTE:
            value, plen = d.match[program.F_IPV4_DST]
            p = d.params
            routes.append(
                Route(
                    f"{addr.ipv4_str(value)}/{plen}",
                    p["port"],
                    addr.mac_str(p["src_mac"]),
                    addr.mac_str(p["dst_mac"]),
                )
            )
    cfg.routes = tuple(routes)
    return cfg


def flood_ports(conn: Connection) -> list[int]:
    pre = p4runtime_pb2.PacketReplicationEngineEntry()
    pre.multicast_group_entry.multicast_group_id = program.FLOOD_MGID
    out: list[int] = []
    for g in conn.read([pre], "read flood group"):
        out += [replica_port(r) for r in g.multicast_group_entry.replicas]
    return sorted(out)
