"""ActionProfileMember and ActionProfileGroup.

Members are action invocations of one of the profile's tables' actions. Groups exist only on
action selectors; a member of weight w is placed w times in the group's selection list (the
selector hashes over that list), and the weight is read back. ``watch``/``watch_port`` are
accepted and read back but have no effect (no port status here). A group's ``max_size`` is fixed
at INSERT (0: the profile's ``max_group_size``, if any) and bounds the sum of its weights.
Members in a group or used by a table entry, and groups used by an entry, cannot be deleted
(FAILED_PRECONDITION). Member and group id 0 in a read are wildcards.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from ..interp.externs import ActionProfile, ExternError
from .entity_common import DELETE, INSERT, MODIFY, decode_action, encode_action, lookup
from .errors import (
    already_exists,
    failed_precondition,
    invalid,
    not_found,
    resource_exhausted,
)
from .schema import ProfileInfo
from .state import PipelineState


def _profile(state: PipelineState, profile_id: int) -> tuple[ProfileInfo, ActionProfile]:
    info = lookup(state.schema.profiles, profile_id, "action profile")
    return info, state.pipeline.profiles[info.name]


def _allowed_actions(state: PipelineState, info: ProfileInfo) -> dict[int, int]:
    allowed: dict[int, int] = {}
    for tid in info.table_ids:
        t = state.schema.tables.get(tid)
        if t is not None:
            allowed.update(t.actions)
    return allowed


def write_member(state: PipelineState, update_type: int, msg: Any) -> None:
    info, profile = _profile(state, msg.action_profile_id)
    mid = msg.member_id
    owner = f"action profile {info.name}"
    exists = mid in profile.members
    try:
        if update_type == DELETE:
            if not exists:
                raise not_found(f"{owner}: no member {mid}")
            if any(mid in g for g in profile.groups.values()):
                raise failed_precondition(f"{owner}: member {mid} is still in a group")
            if profile.in_use(member=mid):
                raise failed_precondition(f"{owner}: member {mid} is used by a table entry")
            profile.delete_member(mid)
            return
        if update_type == INSERT:
            if exists:
                raise already_exists(f"{owner}: member {mid} already exists")
            if info.size and len(profile.members) >= info.size:
                raise resource_exhausted(f"{owner} is full ({info.size} members)")
        elif update_type == MODIFY:
            if not exists:
                raise not_found(f"{owner}: no member {mid}")
        else:
            raise invalid("update type UNSPECIFIED")
        if not msg.HasField("action"):
            raise invalid(f"{owner}: member {mid} has no action")
        action, args = decode_action(state.schema, msg.action, _allowed_actions(state, info), owner)
        if update_type == INSERT:
            profile.members[mid] = profile.make_member(action.name, args)
        else:
            profile.modify_member(mid, action.name, args)
    except ExternError as exc:
        raise invalid(str(exc)) from None


def _group_members(info: ProfileInfo, profile: ActionProfile, msg: Any, max_size: int) -> list[int]:
    owner = f"action profile {info.name}: group {msg.group_id}"
    seen = set()
    expanded: list[int] = []
    for m in msg.members:
        if m.member_id in seen:
            raise invalid(f"{owner}: member {m.member_id} given twice")
        seen.add(m.member_id)
        if m.member_id not in profile.members:
            raise not_found(f"{owner}: no member {m.member_id}")
        if m.weight < 0:
            raise invalid(f"{owner}: member {m.member_id} has a negative weight")
        expanded += [m.member_id] * max(1, m.weight)
    if max_size and len(expanded) > max_size:
        raise resource_exhausted(f"{owner}: total weight {len(expanded)} above max_size {max_size}")
    return expanded


def _canonical_group(info: ProfileInfo, msg: Any, max_size: int) -> Any:
    out = p4runtime_pb2.ActionProfileGroup(
        action_profile_id=info.id, group_id=msg.group_id, max_size=max_size
    )
    for m in msg.members:
        c = out.members.add()
        c.CopyFrom(m)
        c.weight = max(1, m.weight)
    return out


def write_group(state: PipelineState, update_type: int, msg: Any) -> None:
    info, profile = _profile(state, msg.action_profile_id)
    gid = msg.group_id
    owner = f"action profile {info.name}"
    if not info.with_selector or profile.selector_algo is None:
        raise invalid(f"{owner} is not an action selector: it has no groups")
    key = (info.name, gid)
    exists = gid in profile.groups
    if update_type == DELETE:
        if not exists:
            raise not_found(f"{owner}: no group {gid}")
        if profile.in_use(group=gid):
            raise failed_precondition(f"{owner}: group {gid} is used by a table entry")
        profile.delete_group(gid)
        state.groups.pop(key, None)
        return
    if update_type == INSERT:
        if exists:
            raise already_exists(f"{owner}: group {gid} already exists")
        if msg.max_size < 0:
            raise invalid(f"{owner}: group {gid}: negative max_size")
        if info.max_group_size and msg.max_size > info.max_group_size:
            raise invalid(
                f"{owner}: group {gid}: max_size {msg.max_size} is above the profile's "
                f"max_group_size {info.max_group_size}"
            )
        max_size = msg.max_size or info.max_group_size
    elif update_type == MODIFY:
        if not exists:
            raise not_found(f"{owner}: no group {gid}")
        stored = state.groups.get(key)
        max_size = stored.max_size if stored is not None else info.max_group_size
        if msg.max_size and msg.max_size != max_size:
            raise invalid(f"{owner}: group {gid}: max_size cannot change after INSERT")
    else:
        raise invalid("update type UNSPECIFIED")
    expanded = _group_members(info, profile, msg, max_size)
    profile.set_group(gid, expanded)
    state.groups[key] = _canonical_group(info, msg, max_size)


def read_member(state: PipelineState, msg: Any) -> Iterator[Any]:
    if msg.action_profile_id == 0:
        infos = list(state.schema.profiles.values())
    else:
        infos = [_profile(state, msg.action_profile_id)[0]]
    for info in infos:
        profile = state.pipeline.profiles[info.name]
        ids = sorted(profile.members) if msg.member_id == 0 else [msg.member_id]
        for mid in ids:
            m = profile.members.get(mid)
            if m is None:
                continue
            out = p4runtime_pb2.ActionProfileMember(action_profile_id=info.id, member_id=mid)
            encode_action(state.schema, m.action, m.args, out.action)
            yield p4runtime_pb2.Entity(action_profile_member=out)


def read_group(state: PipelineState, msg: Any) -> Iterator[Any]:
    if msg.action_profile_id == 0:
        infos = [i for i in state.schema.profiles.values() if i.with_selector]
    else:
        infos = [_profile(state, msg.action_profile_id)[0]]
    for info in infos:
        profile = state.pipeline.profiles[info.name]
        ids = sorted(profile.groups) if msg.group_id == 0 else [msg.group_id]
        for gid in ids:
            if gid not in profile.groups:
                continue
            out = state.groups.get((info.name, gid))
            if out is None:  # not written over P4Runtime: rebuild it from the selection list
                out = p4runtime_pb2.ActionProfileGroup(action_profile_id=info.id, group_id=gid)
                counts: dict[int, int] = {}
                for m in profile.groups[gid]:
                    counts[m] = counts.get(m, 0) + 1
                for m, w in counts.items():
                    out.members.add(member_id=m, weight=w)
            e = p4runtime_pb2.Entity()
            e.action_profile_group.CopyFrom(out)
            e.action_profile_group.action_profile_id = info.id
            yield e
