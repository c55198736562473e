"""The packet replication engine: multicast groups and clone (mirroring) sessions.

Mirrors simple_switch's PRE as its CLI exposes it: nodes are (rid, ports) pairs with handles
0, 1, 2, ... in creation order, groups are lists of nodes, clone sessions send to a port or a
multicast group, optionally truncating the copy. The P4Runtime server maps its
MulticastGroupEntry/CloneSessionEntry onto the same calls.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


class PreError(Exception):
    """A request the replication engine refuses; the message names the problem."""


@dataclass
class McNode:
    rid: int
    ports: list[int]
    group: int | None = None
    owned: bool = False  # created by set_group (P4Runtime), destroyed when the group changes


@dataclass
class CloneSession:
    """A mirroring session: copies go to ``group``'s replicas and/or to ``port``."""

    port: int | None = None
    group: int | None = None
    truncate: int = 0  # 0: whole packet


class PreStore:
    """Where the replication state goes beyond this object: nowhere by default (the
    interpreter reads the groups and sessions here); the native engine's store pushes the
    changed groups and the sessions into the engine (switch/native/mirror.py)."""

    def sync(self, pre: PacketReplicationEngine) -> None:
        """Called after every change (whether it succeeded or raised)."""


def _changes(method: F) -> F:
    """A mutator: the store hears of the change afterwards, even of a half-done one."""

    @functools.wraps(method)
    def wrapper(self: PacketReplicationEngine, *args: Any, **kw: Any) -> Any:
        try:
            return method(self, *args, **kw)
        finally:
            self.store.sync(self)

    return wrapper  # type: ignore[return-value]


class PacketReplicationEngine:
    def __init__(self, store: PreStore | None = None) -> None:
        self.nodes: dict[int, McNode] = {}
        self.groups: dict[int, list[int]] = {}  # group id -> node handles
        self.sessions: dict[int, CloneSession] = {}
        self._next_handle = 0
        self.store = store if store is not None else PreStore()

    def use_store(self, store: PreStore) -> None:
        """Mirror into ``store`` from now on (it is synced with the present state)."""
        self.store = store
        store.sync(self)

    # ------------------------------------------------------------------ multicast (CLI style)
    @_changes
    def mgrp_create(self, group: int) -> None:
        if not 0 < group < 65536:
            raise PreError(f"multicast group id {group} must be in 1..65535")
        # as BMv2's McSimplePre: creating a group that exists succeeds and keeps its nodes
        # (found by the BMv2 oracle, tests/oracle)
        self.groups.setdefault(group, [])

    @_changes
    def mgrp_destroy(self, group: int) -> None:
        # as BMv2: destroying a group that does not exist succeeds
        for h in self.groups.pop(group, []):
            self.nodes[h].group = None

    @_changes
    def drop_group(self, group: int) -> None:
        """Remove a group made by ``set_group`` with the nodes it made (no error if absent)."""
        for h in self.groups.pop(group, []):
            node = self.nodes[h]
            if node.owned:
                del self.nodes[h]
            else:
                node.group = None

    def node_create(self, rid: int, ports: list[int]) -> int:
        handle = self._next_handle
        self._next_handle += 1
        self.nodes[handle] = McNode(rid, list(ports))
        return handle

    @_changes
    def node_update(self, handle: int, ports: list[int]) -> None:
        self.node(handle).ports = list(ports)

    @_changes
    def node_destroy(self, handle: int) -> None:
        node = self.node(handle)
        if node.group is not None:
            self.groups[node.group].remove(handle)
        del self.nodes[handle]

    @_changes
    def node_associate(self, group: int, handle: int) -> None:
        node = self.node(handle)
        if group not in self.groups:
            raise PreError(f"no multicast group {group}")
        if node.group is not None:
            raise PreError(f"node {handle} is already associated with group {node.group}")
        node.group = group
        self.groups[group].append(handle)

    @_changes
    def node_dissociate(self, group: int, handle: int) -> None:
        node = self.node(handle)
        if node.group != group:
            raise PreError(f"node {handle} is not associated with group {group}")
        node.group = None
        self.groups[group].remove(handle)

    def node(self, handle: int) -> McNode:
        try:
            return self.nodes[handle]
        except KeyError:
            raise PreError(f"no multicast node with handle {handle}") from None

    # ------------------------------------------------------------------ multicast (P4Runtime style)
    @_changes
    def set_group(
        self, group: int, replicas: list[tuple[int, int]], internal: bool = False
    ) -> None:
        """Replace a group's members by (port, rid) replicas (creates the group if needed).

        ``internal``: a group id above 65535, which no program can name, for the replicas of a
        P4Runtime clone session (simple_switch_grpc builds those the same way).
        """
        if internal and group < 65536:
            raise PreError(f"internal group id {group} must be above 65535")
        if group in self.groups:
            owned = [h for h in self.groups[group] if self.nodes[h].owned]
            self.mgrp_destroy(group)
            for handle in owned:  # nodes set_group made are its own: do not leak them
                del self.nodes[handle]
        if internal:
            self.groups[group] = []
        else:
            self.mgrp_create(group)
        by_rid: dict[int, list[int]] = {}
        for port, rid in replicas:
            by_rid.setdefault(rid, []).append(port)
        for rid, ports in by_rid.items():
            handle = self.node_create(rid, ports)
            self.nodes[handle].owned = True
            self.node_associate(group, handle)

    def replicas(self, group: int) -> list[tuple[int, int]]:
        """(port, rid) copies of a group, in node order then port order; empty if unknown."""
        out = []
        for h in self.groups.get(group, ()):
            node = self.nodes[h]
            out += [(p, node.rid) for p in node.ports]
        return out

    # ------------------------------------------------------------------ clone sessions
    @_changes
    def mirroring_add(self, session: int, port: int, truncate: int = 0) -> None:
        _check_session(session, truncate)
        if not 0 <= port < 1 << 32:
            raise PreError(f"clone session {session}: port {port} out of range")
        self.sessions[session] = CloneSession(port=port, truncate=truncate)

    @_changes
    def mirroring_add_mc(self, session: int, group: int, truncate: int = 0) -> None:
        _check_session(session, truncate)
        self.sessions[session] = CloneSession(group=group, truncate=truncate)

    @_changes
    def mirroring_delete(self, session: int) -> None:
        if session not in self.sessions:
            raise PreError(f"no clone session {session}")
        del self.sessions[session]

    def clone_targets(self, session: int, rid: int = 0) -> list[tuple[int, int]] | None:
        """(port, rid) copies of a clone session; None when the session is not configured.

        As simple_switch does: the group's replicas first, then the port; the port's copy
        carries the rid the last replica set (``rid`` when there was none).
        """
        s = self.sessions.get(session)
        if s is None:
            return None
        out = self.replicas(s.group) if s.group is not None else []
        if s.port is not None:
            out.append((s.port, out[-1][1] if out else rid))
        return out


def _check_session(session: int, truncate: int) -> None:
    # v1model's clone session is bit<32>; a truncation is a byte count
    if not 0 <= session < 1 << 32:
        raise PreError(f"clone session id {session} must be in 0..{(1 << 32) - 1}")
    if not 0 <= truncate < 1 << 32:
        raise PreError(f"clone session {session}: truncation {truncate} out of range")
