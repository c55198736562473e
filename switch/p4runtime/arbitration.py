"""Client arbitration (P4Runtime specification section 5; docs/p4runtime.md).

Each StreamChannel is a ``Connection``. Its first message must be a MasterArbitrationUpdate;
controllers are grouped by role name ("" is the default role) and, within a role, the
connection with the highest election id is the primary. Rules:

* a device id other than the server's: the stream ends with NOT_FOUND;
* an election id another connection of the role already holds: INVALID_ARGUMENT;
* a later update that changes the device or the role: FAILED_PRECONDITION;
* an update with no election id makes a backup that never becomes primary.

Replies carry the device id, the role as sent and the primary's election id (the highest ever
seen for the role when there is no primary), with status OK for the primary, ALREADY_EXISTS for
a backup while there is a primary, NOT_FOUND when there is none. When the primary changes
(a higher id arrives, or the primary's stream ends and the next highest takes over, as
simple_switch_grpc does) every connection of the role is told its new status; otherwise only
the sender gets a reply.

Roles carry no configuration here: every role has full access (``Role.config`` is ignored).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from google.rpc import code_pb2

from p4reduce.proto import p4runtime_pb2

from .errors import P4RTError, failed_precondition, invalid, not_found, permission_denied

ElectionId = tuple[int, int]


def election_id(msg: Any) -> ElectionId | None:
    """(high, low) of a message's ``election_id``; None when the field is not set."""
    if not msg.HasField("election_id"):
        return None
    return (msg.election_id.high, msg.election_id.low)


class Connection:
    """One StreamChannel: ``send`` queues a StreamMessageResponse to its client."""

    def __init__(self, send: Callable[[Any], None], peer: str = "") -> None:
        self.send = send
        self.peer = peer
        self.role: str | None = None  # None until the first arbitration update succeeds
        self.role_msg = p4runtime_pb2.Role()
        self.election_id: ElectionId | None = None

    @property
    def arbitrated(self) -> bool:
        return self.role is not None


class Arbitration:
    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self.lock = threading.Lock()
        self.roles: dict[str, list[Connection]] = {}
        self.highest: dict[str, ElectionId] = {}

    # ------------------------------------------------------------------ queries
    def _primary(self, role: str) -> Connection | None:
        best = None
        for c in self.roles.get(role, ()):
            if c.election_id is not None and (best is None or c.election_id > best.election_id):
                best = c
        return best

    def primary(self, role: str = "") -> Connection | None:
        with self.lock:
            return self._primary(role)

    def primaries(self) -> list[Connection]:
        """The primary connection of every role that has one."""
        with self.lock:
            out = [self._primary(r) for r in self.roles]
            return [c for c in out if c is not None]

    def is_primary(self, conn: Connection) -> bool:
        with self.lock:
            return conn.role is not None and self._primary(conn.role) is conn

    def check_primary(self, role: str, eid: ElectionId | None) -> None:
        """PERMISSION_DENIED unless ``eid`` is the election id of the role's primary."""
        with self.lock:
            p = self._primary(role)
            if p is None:
                raise permission_denied(f"role {role!r} has no primary controller")
            if eid != p.election_id:
                raise permission_denied(
                    f"election id {_fmt(eid)} is not the primary's for role {role!r}"
                )

    # ------------------------------------------------------------------ updates
    def update(self, conn: Connection, msg: Any) -> None:
        """Handle a MasterArbitrationUpdate from ``conn`` (P4RTError ends the stream)."""
        if msg.device_id != self.device_id:
            raise not_found(f"no device with id {msg.device_id} (this is {self.device_id})")
        role = msg.role.name
        eid = election_id(msg)
        with self.lock:
            if conn.arbitrated and role != conn.role:
                raise failed_precondition("a stream cannot change its role")
            if eid is not None:
                for c in self.roles.get(role, ()):
                    if c is not conn and c.election_id == eid:
                        raise invalid(f"election id {_fmt(eid)} is already used in role {role!r}")
            before = self._primary(role)
            if not conn.arbitrated:
                self.roles.setdefault(role, []).append(conn)
            conn.role = role
            conn.role_msg = p4runtime_pb2.Role()
            conn.role_msg.CopyFrom(msg.role)
            conn.election_id = eid
            if eid is not None and (role not in self.highest or eid > self.highest[role]):
                self.highest[role] = eid
            after = self._primary(role)
            targets = self.roles[role] if after is not before else [conn]
            for c in targets:
                c.send(self._reply(c, after))

    def remove(self, conn: Connection) -> None:
        """The stream of ``conn`` ended: forget it, promote the next primary if needed."""
        with self.lock:
            if conn.role is None:
                return
            role = conn.role
            members = self.roles.get(role, [])
            before = self._primary(role)
            if conn in members:
                members.remove(conn)
            if not members:
                self.roles.pop(role, None)
            conn.role = None
            after = self._primary(role)
            if after is not before:
                for c in members:
                    c.send(self._reply(c, after))

    def _reply(self, conn: Connection, primary: Connection | None) -> Any:
        resp = p4runtime_pb2.StreamMessageResponse()
        a = resp.arbitration
        a.device_id = self.device_id
        a.role.CopyFrom(conn.role_msg)
        eid = primary.election_id if primary is not None else self.highest.get(conn.role or "")
        if eid is not None:
            a.election_id.high, a.election_id.low = eid
        if primary is None:
            a.status.code = code_pb2.NOT_FOUND
            a.status.message = "there is no primary controller"
        elif primary is conn:
            a.status.code = code_pb2.OK
            a.status.message = "this controller is the primary"
        else:
            a.status.code = code_pb2.ALREADY_EXISTS
            a.status.message = "this controller is a backup"
        return resp


def _fmt(eid: ElectionId | None) -> str:
    return "(unset)" if eid is None else f"({eid[0]}, {eid[1]})"


__all__ = ["Arbitration", "Connection", "election_id", "P4RTError"]
