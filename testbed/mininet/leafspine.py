"""The leaf-spine testbed: R racks of W hosts, each rack under its own ToR switch, the ToRs
under one spine, every switch an embedded ``p4reduce-switch`` process in the root namespace
(docs/testbed.md, "Leaf-spine"; docs/protocol.md, "Hierarchical aggregation").

``LeafSpineStack`` is a ``MininetStack`` whose topology has ``racks`` (``topology.py``:
host-ToR and ToR-spine links shaped and lossy alike), whose switches are R + 1 processes,
and whose jobs are installed by the orchestrator itself with ``controller.tree`` (one
P4Runtime connection per switch, held for the stack's life) instead of a registration
service, which places workers on one switch. Ordinary traffic (gloo's ring) is switched by
MAC: each ToR forwards its own hosts' MACs to their ports and every other MAC to its uplink,
the spine every MAC to its rack's ToR; the hosts have static ARP entries for each other,
so nothing is flooded across racks.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator, Sequence
from dataclasses import asdict
from typing import Any

from ...controller import Controller, Member
from ...controller import program as prog
from ...controller.addr import mac as mac_bytes
from ...controller.jobs import upsert
from ...controller.service import Timeouts
from ...controller.static_config import Host as L2Host
from ...controller.static_config import StaticConfig
from ...controller.tree import Parent, Rack, assignments, create_tree, delete_tree
from ..local import Proc, StackError
from .stack import AGG_PORT, SWITCH_NICE, Host, MininetStack

TREE_UDP_PORT = 47000  # each worker's UDP port (on its own host address)


class LeafSpineStack(MininetStack):
    """``racks`` racks of ``hosts // racks`` hosts, R ToRs and a spine (embedded switch)."""

    def __init__(self, hosts: int, *args: Any, racks: int, **kw: Any) -> None:
        if racks < 1 or hosts % racks:
            raise StackError(f"{hosts} hosts in {racks} racks: the racks must divide the hosts")
        super().__init__(hosts, *args, **kw)
        if self.switch_kind.name != "embedded":
            raise StackError("--racks runs the embedded switch only (--switch embedded)")
        self.racks = racks
        self.per_rack = hosts // racks
        self.switches: list[Proc] = []
        self.addrs: list[str] = []  # P4Runtime: spine first, then ToR 0..R-1
        self.trees: list[int] = []  # the job ids installed

    # ------------------------------------------------------------------ start
    def _start_topology(self, extra: dict[str, Any] | None = None) -> None:
        super()._start_topology({**(extra or {}), "racks": self.racks})

    def _start_switch(self, prefix: Any) -> None:
        kind = self.switch_kind
        net = self.net
        ports: list[list[tuple[int, str]]] = [
            [(r["spine_port"], r["spine_intf"]) for r in net["racks"]]
        ]
        for r in net["racks"]:
            mine = [(h.switch_port, h.switch_intf) for h in self.rack_hosts(r["rack"])]
            ports.append([*mine, (r["uplink_port"], r["uplink_intf"])])
        for i, p in enumerate(ports):
            name = "spine" if i == 0 else f"tor{i - 1}"
            argv = kind.argv(prefix, [], kind.grpc_addr())
            argv[2:2] = [a for port, intf in p for a in ("-i", f"{port}@{intf}")]  # after the JSON
            proc = self._spawn(name, argv, nice=SWITCH_NICE)
            self.switches.append(proc)
        for proc in self.switches:
            self.addrs.append(self._embedded_ready(proc, f"p4reduce-switch {proc.name}"))
        self.switch = self.switches[0]  # the one wait() and the CPU windows watch
        self.grpc_addr = self.addrs[0]
        self._log(f"{len(self.switches)} switches ready (spine and {self.racks} ToRs)")

    def watched(self) -> list[Proc | None]:
        return [*self.switches, self.driver]

    @contextlib.contextmanager
    def connected(self) -> Iterator[list[Controller]]:
        """One P4Runtime connection per switch (spine first), for the block only: no gRPC
        thread runs while this process starts the hosts' processes (gRPC's fork handlers
        would complain at every fork)."""
        with contextlib.ExitStack() as s:
            yield [s.enter_context(Controller(a)) for a in self.addrs]

    def _configure(self, prefix: Any) -> None:
        with self.connected() as ctls:
            self._configure_with(prefix, ctls)

    def _configure_with(self, prefix: Any, ctls: list[Controller]) -> None:
        net = self.net
        spine, tors = ctls[0], ctls[1:]
        for c in ctls:
            c.push(prefix)
        spine.install_static(StaticConfig(net["spine_ip"], net["spine_mac"]))
        l2 = []
        for h in self.hosts:
            l2.append(self._l2(spine, h.mac, net["racks"][self.rack_of(h)]["spine_port"]))
        upsert(spine.conn, l2, "spine L2")
        for r, c in zip(net["racks"], tors, strict=True):
            local = [L2Host(h.switch_port, h.mac) for h in self.rack_hosts(r["rack"])]
            c.install_static(StaticConfig(r["ip"], r["mac"], tuple(local)))
            others = [h for h in self.hosts if self.rack_of(h) != r["rack"]]
            if others:
                upsert(c.conn, [self._l2(c, h.mac, r["uplink_port"]) for h in others], "ToR L2")

    @staticmethod
    def _l2(ctl: Controller, mac: str, port: int) -> Any:
        return ctl.schema.table_entry(
            prog.L2_FORWARD, {prog.F_ETH_DST: mac_bytes(mac)}, prog.TO_PORT, {"port": port}
        )

    def _start_serve(self) -> None:
        """No registration service: ``spawn_p4reduce_jobs`` installs each job itself."""

    # ------------------------------------------------------------------ layout
    def rack_of(self, h: Host) -> int:
        return h.rank // self.per_rack

    def rack_hosts(self, r: int) -> list[Host]:
        return self.hosts[r * self.per_rack : (r + 1) * self.per_rack]

    # ------------------------------------------------------------------ jobs
    def install_tree(self, ctls: list[Controller], job_id: int) -> list[dict[str, Any]]:
        """Install job ``job_id`` on every switch (all hosts, rank = host index); every
        worker's assignment, by rank."""
        net = self.net
        spine, tors = ctls[0], ctls[1:]
        racks = [
            Rack(tors[r["rack"]],
                 [Member(h.rank, h.ip, TREE_UDP_PORT, h.mac, h.switch_port)
                  for h in self.rack_hosts(r["rack"])],
                 r["ip"], r["mac"], spine_port=r["spine_port"], uplink_port=r["uplink_port"],
                 udp_port=AGG_PORT)
            for r in net["racks"]
        ]  # fmt: skip
        parent = Parent(net["spine_ip"], net["spine_mac"], AGG_PORT)
        tree = create_tree(spine, parent, racks, job_id, self.slots)
        self.trees.append(job_id)
        t = asdict(Timeouts())
        if self.initial_timeout_ms is not None:
            t["initial_ms"] = self.initial_timeout_ms
        return assignments(tree, racks, AGG_PORT, t)

    def remove_trees(self, ctls: list[Controller]) -> None:
        while self.trees:
            delete_tree(ctls[0], ctls[1:], self.trees.pop())

    def spawn_p4reduce_jobs(
        self, jobs: Sequence[tuple[int, int, Sequence[dict[str, Any]]]], *, timeout: float = 120.0
    ) -> list[Proc]:
        """Each job on every host (n must be all of them), installed on the switches first;
        one ``tree_worker`` per host for all the jobs."""
        if any(n != self.n for _, n, _ in jobs):
            raise StackError(f"a leaf-spine job spans all {self.n} hosts")
        self._seq += 1
        with self.connected() as ctls:
            self.remove_trees(ctls)  # the previous batch's jobs have ended
            every = {jid: self.install_tree(ctls, jid) for jid, _, _ in jobs}
        procs = []
        for i, h in enumerate(self.hosts):
            mine = [{"job": j, "assignment": every[j][i], "plan": list(plan)}
                    for j, _, plan in jobs]  # fmt: skip
            args = [sys.executable, "-m", "p4reduce.testbed.mininet.tree_worker",
                    "--bind", h.ip, "--jobs", json.dumps(mine)]  # fmt: skip
            procs.append(
                self.spawn_in(h, f"p4reduce{self._seq}-{i}", args, env=self._cpu_env(i, h))
            )
        return procs

    def set_loss(self, p: float) -> None:
        """As ``MininetStack.set_loss``, and on both ends of every ToR-spine link."""
        super().set_loss(p)
        for r in self.net["racks"]:
            for dev in (r["uplink_intf"], r["spine_intf"]):
                self._replace_loss([], dev, p)
