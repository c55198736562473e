"""PacketReplicationEngineEntry: multicast groups and clone sessions.

Replicas may name their port with the deprecated ``egress_port`` (uint32, what p4runtime-shell
sends) or the newer ``port`` bytes; each is read back in the form it was written. Ports are
BMv2's 9-bit ports (OUT_OF_RANGE above 511); duplicate (port, instance) replicas are refused.

A clone session is programmed as simple_switch_grpc (PI) does it: its replicas form a hidden
multicast group (id ``HIDDEN_GROUP_BASE + session``, outside the 16-bit P4Runtime range, never
read back as a multicast group) that the mirroring session points at, truncated to
``packet_length_bytes`` when that is > 0. ``class_of_service`` is stored and read back; the
switch has no queues, so it has no effect.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import bytestrings
from .entity_common import DELETE, INSERT, MODIFY
from .errors import already_exists, invalid, not_found, out_of_range
from .state import PipelineState

HIDDEN_GROUP_BASE = 1 << 16
MAX_PORT = 511


def _replicas(replicas: Any, owner: str) -> tuple[list[tuple[int, int]], list[Any]]:
    """((port, rid) pairs, canonical Replica messages)."""
    pairs: list[tuple[int, int]] = []
    canon: list[Any] = []
    seen = set()
    for r in replicas:
        which = r.WhichOneof("port_kind")
        c = p4runtime_pb2.Replica(instance=r.instance)
        if which == "port":
            port = bytestrings.decode(r.port, 32, f"{owner}: replica port")
            c.port = bytestrings.encode(port)
        else:
            port = r.egress_port
            c.egress_port = port
        if port > MAX_PORT:
            raise out_of_range(f"{owner}: port {port} is above {MAX_PORT}")
        if r.instance >= 1 << 16:
            raise out_of_range(f"{owner}: instance {r.instance} does not fit in 16 bits")
        if (port, r.instance) in seen:
            raise invalid(f"{owner}: replica (port {port}, instance {r.instance}) given twice")
        seen.add((port, r.instance))
        pairs.append((port, r.instance))
        canon.append(c)
    return pairs, canon


def _set_hidden_group(state: PipelineState, gid: int, pairs: list[tuple[int, int]]) -> None:
    """(Re)build the clone session's replicas as a group outside the P4Runtime id range."""
    state.switch.pre.set_group(gid, pairs, internal=True)


def _drop_hidden_group(state: PipelineState, gid: int) -> None:
    state.switch.pre.drop_group(gid)


def _write_multicast(state: PipelineState, update_type: int, msg: Any) -> None:
    gid = msg.multicast_group_id
    owner = f"multicast group {gid}"
    if gid == 0:
        raise invalid("multicast group id 0 is not valid")
    if gid >= HIDDEN_GROUP_BASE:
        raise out_of_range(f"multicast group id {gid} does not fit in 16 bits")
    pre = state.switch.pre
    exists = gid in state.multicast_groups
    _check_update(update_type, exists, owner)
    if update_type == DELETE:
        pre.set_group(gid, [])
        pre.mgrp_destroy(gid)
        del state.multicast_groups[gid]
        return
    pairs, canon = _replicas(msg.replicas, owner)
    pre.set_group(gid, pairs)
    stored = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=gid, metadata=msg.metadata)
    stored.replicas.extend(canon)
    state.multicast_groups[gid] = stored


def _check_update(update_type: int, exists: bool, owner: str) -> None:
    """The status for an update that cannot apply to an entity that does (not) exist."""
    if update_type == DELETE:
        if not exists:
            raise not_found(f"{owner} does not exist")
    elif update_type == INSERT:
        if exists:
            raise already_exists(f"{owner} already exists")
    elif update_type == MODIFY:
        if not exists:
            raise not_found(f"{owner} does not exist")
    else:
        raise invalid("update type UNSPECIFIED")


def _write_clone(state: PipelineState, update_type: int, msg: Any) -> None:
    sid = msg.session_id
    owner = f"clone session {sid}"
    if sid == 0:
        raise invalid("clone session id 0 is not valid")
    pre = state.switch.pre
    exists = sid in state.clone_sessions
    gid = HIDDEN_GROUP_BASE + sid
    _check_update(update_type, exists, owner)
    if update_type == DELETE:
        pre.mirroring_delete(sid)
        _drop_hidden_group(state, gid)
        del state.clone_sessions[sid]
        return
    if msg.packet_length_bytes < 0:
        raise invalid(f"{owner}: packet_length_bytes cannot be negative")
    pairs, canon = _replicas(msg.replicas, owner)
    _set_hidden_group(state, gid, pairs)
    pre.mirroring_add_mc(sid, gid, msg.packet_length_bytes)
    stored = p4runtime_pb2.CloneSessionEntry(
        session_id=sid,
        class_of_service=msg.class_of_service,
        packet_length_bytes=msg.packet_length_bytes,
    )
    stored.replicas.extend(canon)
    state.clone_sessions[sid] = stored


def write(state: PipelineState, update_type: int, msg: Any) -> None:
    which = msg.WhichOneof("type")
    if which == "multicast_group_entry":
        _write_multicast(state, update_type, msg.multicast_group_entry)
    elif which == "clone_session_entry":
        _write_clone(state, update_type, msg.clone_session_entry)
    else:
        raise invalid("empty packet replication engine entry")


def read(state: PipelineState, msg: Any) -> Iterator[Any]:
    which = msg.WhichOneof("type")
    if which == "multicast_group_entry":
        stored, key = state.multicast_groups, msg.multicast_group_entry.multicast_group_id
    elif which == "clone_session_entry":
        stored, key = state.clone_sessions, msg.clone_session_entry.session_id
    else:
        raise invalid("empty packet replication engine entry")
    # id 0 reads them all; an id that does not exist reads nothing
    keys = sorted(stored) if key == 0 else [key] if key in stored else []
    for k in keys:
        e = p4runtime_pb2.Entity()
        getattr(e.packet_replication_engine_entry, which).CopyFrom(stored[k])
        yield e
