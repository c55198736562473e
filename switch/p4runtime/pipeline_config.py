"""SetForwardingPipelineConfig / GetForwardingPipelineConfig.

The device config (``p4_device_config``) is the JSON document ``p4reduce-p4c -o DIR PROG.p4``
writes (``DIR/PROG.json``), as bytes. Verification parses and builds it (the interpreter's
``load_compiled``) and checks the P4Info against the program (``Schema.check_pipeline``). When
the request's P4Info is empty, the P4Info embedded in the device config is used.

Actions: VERIFY (build and check, nothing kept), VERIFY_AND_SAVE (kept aside), COMMIT (the
saved config replaces the running one), VERIFY_AND_COMMIT (replaces the running one, every
piece of forwarding state starts afresh), RECONCILE_AND_COMMIT (replaces it keeping the state
whose names match; see ``reconcile``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from google.protobuf import text_format

from p4reduce.proto import p4info_pb2, p4runtime_pb2

from ..frontend.errors import CompileError
from ..interp.externs import ExternError
from ..interp.load import load_compiled
from ..interp.tables import TableError
from ..native.select import make_switch
from .entity_digests import DigestEngine
from .errors import failed_precondition, invalid
from .schema import Schema
from .state import PipelineState

Req = p4runtime_pb2.SetForwardingPipelineConfigRequest
Resp = p4runtime_pb2.GetForwardingPipelineConfigRequest


def parse_device_config(data: bytes) -> Any:
    """The pipeline of a device config (INVALID_ARGUMENT when it is not a valid one)."""
    if not data:
        raise invalid("p4_device_config is empty: give the JSON written by p4reduce-p4c -o")
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise invalid(f"p4_device_config is not JSON: {exc}") from None
    try:
        return doc, load_compiled(doc)
    except CompileError as exc:
        raise invalid(f"p4_device_config: {exc}") from None
    except RecursionError:
        raise invalid("p4_device_config: program nested too deeply") from None
    except Exception as exc:  # CodegenError and anything the builder refuses
        raise invalid(f"p4_device_config: {type(exc).__name__}: {exc}") from None


def build_state(
    config: Any,
    clock: Callable[[], int] | None = None,
    engine: str = "auto",
    trace: bool = False,
) -> PipelineState:
    """Verify a ForwardingPipelineConfig and build (but do not install) its pipeline.

    ``engine``: "auto"/"native" (generated C, falling back to the interpreter with one line
    when the program or the machine cannot run it) or "python"; tracing needs the interpreter.
    """
    device_config = bytes(config.p4_device_config)
    doc, pipeline = parse_device_config(device_config)
    p4info = p4info_pb2.P4Info()
    if config.HasField("p4info") and config.p4info.ByteSize():
        p4info.CopyFrom(config.p4info)
    else:
        text = doc.get("p4info") if isinstance(doc, dict) else None
        if not isinstance(text, str):
            raise invalid("no P4Info given and none embedded in the device config")
        try:
            text_format.Parse(text, p4info, allow_unknown_field=True)
        except text_format.ParseError as exc:
            raise invalid(f"embedded P4Info: {exc}") from None
    schema = Schema(p4info)
    schema.check_pipeline(pipeline)
    state = PipelineState(
        switch=make_switch(pipeline, engine, clock=clock, trace=trace),
        schema=schema,
        p4info=p4info,
        device_config=device_config,
        cookie=config.cookie.cookie if config.HasField("cookie") else None,
    )
    state.digests = DigestEngine()
    return state


# ---------------------------------------------------------------------- reconcile
def _cannot(what: str, why: Any) -> Exception:
    return invalid(f"cannot reconcile {what}: {why}")


def reconcile(old: PipelineState, new: PipelineState) -> None:
    """Carry ``old``'s state into ``new`` where names match.

    Carried: action profile members and groups, table entries (not the program's own) with
    their counters, meter rates and metadata, changed default actions, register, counter and
    meter cells (when the array keeps its size and width; otherwise it starts afresh), value
    set members, the whole packet replication engine, and digest configurations. Objects
    gone from the new program are dropped. An entry or member the new program cannot hold
    (its table's keys or action changed shape) fails the request with INVALID_ARGUMENT, and
    the running pipeline is left as it was.
    """
    op, np_ = old.pipeline, new.pipeline
    for name, oprof in op.profiles.items():
        nprof = np_.profiles.get(name)
        if nprof is None:
            continue
        for mid, m in oprof.members.items():
            try:
                nprof.members[mid] = nprof.make_member(m.action, list(m.args))
            except ExternError as exc:
                raise _cannot(f"action profile {name} member {mid}", exc) from None
        for gid, members in oprof.groups.items():
            if nprof.selector_algo is None:
                raise _cannot(f"action profile {name} group {gid}", "no longer a selector")
            nprof.set_group(gid, list(members))
    for (pname, gid), msg in old.groups.items():
        info = new.schema.profile_by_name.get(pname)
        if info is not None and gid in np_.profiles[pname].groups:
            copy = p4runtime_pb2.ActionProfileGroup()
            copy.CopyFrom(msg)
            copy.action_profile_id = info.id
            new.groups[(pname, gid)] = copy
    for name, ot in op.tables.items():
        nt = np_.tables.get(name)
        if nt is None:
            continue
        same_keys = [(k.match_kind, k.width) for k in ot.keys] == [
            (k.match_kind, k.width) for k in nt.keys
        ]
        for e in ot.entries:
            if e.is_const:
                continue
            if not same_keys:
                raise _cannot(f"table {name}", "its match fields changed")
            if nt.find(e.matches, e.priority) is not None:
                continue  # the new program declares it
            try:
                ne = nt.add_entry(
                    list(e.matches),
                    e.action,
                    list(e.args),
                    e.priority,
                    member=e.member,
                    group=e.group,
                )
            except (TableError, ExternError) as exc:
                raise _cannot(f"table {name}", exc) from None
            ne.packets, ne.bytes = e.packets, e.bytes
            if e.meter is not None and ne.meter is not None:
                rates = e.meter.array[0].get_rates()
                if rates:
                    ne.meter.array[0].set_rates(rates)
            md = old.entry_metadata.get(e)
            if md is not None:
                new.entry_metadata[ne] = md
        od = ot.default_entry
        if (od.action, list(od.args)) != (ot.initial_default[0], list(ot.initial_default[1])):
            if nt.const_default:
                raise _cannot(f"table {name}", "its default action became const")
            try:
                nt.set_default(od.action, list(od.args))
            except TableError as exc:
                raise _cannot(f"table {name} default action", exc) from None
    for name, r in op.registers.items():
        nr = np_.registers.get(name)
        if nr is not None and (nr.size, nr.width, nr.signed) == (r.size, r.width, r.signed):
            nr.values[:] = r.values  # in place: the generated code holds the list
    for name, c in op.counters.items():
        nc = np_.counters.get(name)
        if nc is not None and nc.size == c.size:
            nc.packets, nc.bytes = list(c.packets), list(c.bytes)
    for name, m in op.meters.items():
        nm = np_.meters.get(name)
        if nm is not None and nm.size == m.size and nm.unit == m.unit:
            for i in range(m.size):
                rates = m.array[i].get_rates()
                if rates:
                    nm.array[i].set_rates(rates)
    for name, vs in op.value_sets.items():
        nvs = np_.value_sets.get(name)
        if nvs is not None and nvs.widths == vs.widths and len(vs.members) <= nvs.size:
            nvs.members = list(vs.members)
    new.switch.pre = old.switch.pre
    new.multicast_groups = dict(old.multicast_groups)
    new.clone_sessions = dict(old.clone_sessions)
    for did, config in old.digest_configs.items():
        info = old.schema.digests.get(did)
        ninfo = new.schema.digest_by_name.get(info.name) if info is not None else None
        if ninfo is not None:
            new.digest_configs[ninfo.id] = config


# ---------------------------------------------------------------------- the RPCs
def set_forwarding_pipeline_config(device: Any, request: Any) -> None:
    action = request.action
    if action == Req.COMMIT:
        with device.lock:
            if device.saved is None:
                raise failed_precondition("COMMIT: no config was saved (use VERIFY_AND_SAVE)")
            new, device.saved = device.saved, None
            device.install(new)
        return
    if action not in (
        Req.VERIFY,
        Req.VERIFY_AND_SAVE,
        Req.VERIFY_AND_COMMIT,
        Req.RECONCILE_AND_COMMIT,
    ):
        raise invalid(f"unsupported action {action}")
    if not request.HasField("config"):
        raise invalid("no config given")
    engine = "python" if action == Req.VERIFY else getattr(device, "engine", "auto")
    new = build_state(request.config, device.clock, engine, getattr(device, "trace", False))
    if action == Req.VERIFY:
        return
    with device.lock:
        if action == Req.VERIFY_AND_SAVE:
            device.saved = new
            return
        if action == Req.RECONCILE_AND_COMMIT and device.state is not None:
            reconcile(device.state, new)
        device.install(new)


def get_forwarding_pipeline_config(device: Any, request: Any) -> Any:
    with device.lock:
        state = device.state
        if state is None:
            raise failed_precondition("no forwarding pipeline config has been set")
        rtype = request.response_type
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        cfg = resp.config
        if rtype in (Resp.ALL, Resp.P4INFO_AND_COOKIE):
            cfg.p4info.CopyFrom(state.p4info)
        if rtype in (Resp.ALL, Resp.DEVICE_CONFIG_AND_COOKIE):
            cfg.p4_device_config = state.device_config
        if rtype not in (
            Resp.ALL,
            Resp.COOKIE_ONLY,
            Resp.P4INFO_AND_COOKIE,
            Resp.DEVICE_CONFIG_AND_COOKIE,
        ):
            raise invalid(f"unknown response_type {rtype}")
        if state.cookie is not None:
            cfg.cookie.cookie = state.cookie
        return resp
