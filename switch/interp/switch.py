"""The packet path of BMv2 simple_switch around a compiled pipeline.

``V1Switch.process`` takes one packet arriving on a port and runs it, and everything it
spawns (clones, multicast copies, resubmits, recirculations), to completion. It returns the
packets sent, in the order they left. docs/interpreter.md, 'Semantics', lists the rules followed here:
metadata zeroed on arrival, the end-of-ingress order (I2E clone, digest, resubmit, multicast,
drop, unicast) and the end-of-egress order (E2E clone, drop, deparse, recirculate, send).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .builder import Pipeline
from .pre import PacketReplicationEngine
from .runtime import ExitPipeline, PacketContext, ParserError

log = logging.getLogger("p4reduce.switch")

NORMAL, INGRESS_CLONE, EGRESS_CLONE, COALESCED, RECIRC, REPLICATION, RESUBMIT = range(7)
DROP_PORT = 511
MAX_PASSES = 1000  # resubmit/recirculate loops are cut here (BMv2 would loop for ever)


@dataclass
class _Ingress:
    port: int  # the port the packet object arrived on (BMv2 keeps it across resubmits)
    data: bytes
    S: list[Any]  # metadata already set up for this pass


@dataclass
class _Egress:
    port: int
    S: list[Any]
    P: PacketContext
    truncate: int = 0


def log_msg_text(fmt: str, values: tuple[Any, ...]) -> str:
    """v1model log_msg's text: ``{}`` placeholders replaced by the values, in order (one
    left without a value stays ``{}``); the native engine formats with this too."""
    parts = fmt.split("{}")
    text = parts[0]
    for i, part in enumerate(parts[1:]):
        text += (str(values[i]) if i < len(values) else "{}") + part
    return text


class V1Switch:
    def __init__(
        self,
        pipeline: Pipeline,
        clock: Callable[[], int] | None = None,
        trace: bool = False,
    ) -> None:
        self.pipeline = pipeline
        self.pre = PacketReplicationEngine()
        start = time.monotonic()
        self.clock = clock or (lambda: int((time.monotonic() - start) * 1e6))
        self.trace = trace
        self.digests: list[tuple[str, tuple[Any, ...]]] = []
        self.last_trace: list[str] = []
        st = pipeline.stages
        self._parser, self._verify = st["parser"], st["verify"]
        self._ingress, self._egress = st["ingress"], st["egress"]
        self._compute, self._deparser = st["compute"], st["deparser"]
        self._init = pipeline.storage.init
        std = pipeline.std
        self._ingress_port = std["ingress_port"]
        self._egress_spec = std["egress_spec"]
        self._egress_port = std["egress_port"]
        self._instance_type = std["instance_type"]
        self._packet_length = std["packet_length"]
        self._mcast_grp = std["mcast_grp"]
        self._egress_rid = std["egress_rid"]
        self._parser_error = std["parser_error"]
        self._ingress_ts = std.get("ingress_global_timestamp")
        self._egress_ts = std.get("egress_global_timestamp")
        self._enq_ts = std.get("enq_timestamp")
        self._meta = pipeline.metadata_slots
        self.log_messages: list[str] = []  # log_msg output, newest last (bounded)
        pipeline.namespace["LOG_MSG"] = self.log_msg

    def log_msg(self, fmt: str, values: tuple[Any, ...]) -> None:
        """v1model log_msg: ``{}`` placeholders replaced by the values, in order."""
        text = log_msg_text(fmt, values)
        log.info("log_msg: %s", text)
        self.log_messages.append(text)
        del self.log_messages[:-1000]
        if self.trace:
            self.last_trace.append(f"log_msg: {text}")

    # ------------------------------------------------------------------ the packet path
    # The rules follow targets/simple_switch/simple_switch.cpp (receive_, ingress_thread,
    # egress_thread): see docs/interpreter.md.
    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """Run one packet arriving on ``port``; return the (port, bytes) it produced."""
        out: list[tuple[int, bytes]] = []
        self.last_trace = []
        ingress: deque[_Ingress] = deque()
        egress: deque[_Egress] = deque()
        S = self.fresh(None)
        S[self._ingress_port] = port
        S[self._packet_length] = len(data)
        S[self._instance_type] = NORMAL
        if self._ingress_ts is not None:
            S[self._ingress_ts] = self.clock()
        ingress.append(_Ingress(port, bytes(data), S))
        passes = 0
        while ingress or egress:
            passes += 1
            if passes > MAX_PASSES:
                log.warning(
                    "packet from port %d looped more than %d times; dropped", port, MAX_PASSES
                )
                break
            if ingress:
                self.run_ingress(ingress.popleft(), ingress, egress)
            else:
                self.run_egress(egress.popleft(), ingress, egress, out)
        return out

    def fresh(self, preserved: dict[int, Any] | None) -> list[Any]:
        S = list(self._init)
        if preserved:
            for slot, v in preserved.items():
                S[slot] = v
        return S

    def reset_metadata(self, S: list[Any]) -> None:
        init = self._init
        for slot in self._meta:
            S[slot] = init[slot]

    def parse(self, S: list[Any], P: PacketContext) -> None:
        try:
            self._parser(S, P)
        except ParserError as e:
            if e.code >= 0:
                S[self._parser_error] = e.code
        self._verify(S, P)

    def context(self, data: bytes) -> PacketContext:
        P = PacketContext(data, self.clock())
        if self.trace:
            P.trace = self.last_trace
        return P

    def run_ingress(self, job: _Ingress, ingress: deque[_Ingress], egress: deque[_Egress]) -> None:
        S, data = job.S, job.data
        P = self.context(data)
        ingress_size = len(data)
        self.parse(S, P)
        try:
            self._ingress(S, P)
        except ExitPipeline:
            pass
        if P.trace is not None:
            P.trace.append(
                f"ingress done: egress_spec={S[self._egress_spec]} mcast_grp={S[self._mcast_grp]}"
            )
        # 1. ingress-to-egress clone: the original packet parsed again (with the ingress port
        # the parser may branch on), then metadata reset but for the field list
        clone = P.clone
        if clone is not None and clone.kind == 0:
            targets = self.pre.clone_targets(clone.session)
            if targets is not None:
                kept = self.preserved(S, clone.field_list, clone.explicit_slots)
                session = self.pre.sessions[clone.session]
                S2 = self.fresh(None)
                S2[self._ingress_port] = job.port
                P2 = self.context(data)
                self.parse(S2, P2)
                self.reset_metadata(S2)
                for slot, v in kept.items():
                    S2[slot] = v
                S2[self._instance_type] = INGRESS_CLONE
                P2.length = ingress_size
                self.replicate(S2, P2, targets, egress, session.truncate)
        # 2. digests
        self.digests.extend(P.digests)
        # 3. resubmit: the original packet, metadata reset but for the field list
        if P.resubmit is not None:
            S2 = self.fresh(self.preserved(S, P.resubmit.field_list, P.resubmit.explicit_slots))
            S2[self._instance_type] = RESUBMIT
            S2[self._packet_length] = ingress_size
            ingress.append(_Ingress(job.port, data, S2))
            return
        # 4. multicast: copies of the whole state, the original is discarded
        grp = S[self._mcast_grp]
        if grp:
            S[self._instance_type] = REPLICATION
            self.replicate(S, P, self.pre.replicas(grp), egress, 0)
            return
        # 5. drop, 6. unicast
        spec = S[self._egress_spec]
        if spec == DROP_PORT:
            if P.trace is not None:
                P.trace.append("dropped at the end of ingress")
            return
        S[self._instance_type] = NORMAL
        self.enqueue(egress, _Egress(spec, S, P))

    def replicate(
        self,
        S: list[Any],
        P: PacketContext,
        targets: list[tuple[int, int]],
        egress: deque[_Egress],
        truncate: int,
    ) -> None:
        for eport, rid in targets:
            S2 = list(S)
            S2[self._egress_rid] = rid
            self.enqueue(egress, _Egress(eport, S2, self.copy_context(P), truncate))

    def enqueue(self, egress: deque[_Egress], job: _Egress) -> None:
        if self._enq_ts is not None:
            job.S[self._enq_ts] = self.clock() & 0xFFFFFFFF
        egress.append(job)

    def copy_context(self, P: PacketContext) -> PacketContext:
        P2 = PacketContext(P.data, P.now_us)
        P2.pos = P.pos
        P2.trace = P.trace
        P2.length = P.length
        P2.truncate = P.truncate
        return P2

    def preserved(
        self, S: list[Any], field_list: int | None, explicit: tuple[int, ...]
    ) -> dict[int, Any]:
        slots: list[int] = list(explicit)
        if field_list is not None:
            slots += self.pipeline.field_lists.get(field_list, [])
        return {slot: S[slot] for slot in slots}

    def run_egress(
        self,
        job: _Egress,
        ingress: deque[_Ingress],
        egress: deque[_Egress],
        out: list[tuple[int, bytes]],
    ) -> None:
        S, P = job.S, job.P
        P.clone = None
        P.resubmit = None
        P.recirculate = None
        P.digests = []
        S[self._egress_port] = job.port
        S[self._egress_spec] = 0  # simple_switch writes 512, which a 9-bit field holds as 0
        S[self._packet_length] = P.length  # the packet-length register
        if self._egress_ts is not None:
            S[self._egress_ts] = self.clock()
        try:
            self._egress(S, P)
        except ExitPipeline:
            pass
        # 1. egress-to-egress clone: the end-of-egress state, metadata reset but the field list
        clone = P.clone
        if clone is not None and clone.kind == 1:
            targets = self.pre.clone_targets(clone.session, S[self._egress_rid])
            if targets is not None:
                kept = self.preserved(S, clone.field_list, clone.explicit_slots)
                session = self.pre.sessions[clone.session]
                S2 = list(S)
                self.reset_metadata(S2)
                for slot, v in kept.items():
                    S2[slot] = v
                S2[self._instance_type] = EGRESS_CLONE
                self.replicate(S2, P, targets, egress, session.truncate)
        # 2. drop
        if S[self._egress_spec] == DROP_PORT:
            if P.trace is not None:
                P.trace.append("dropped at the end of egress")
            return
        # 3. deparse (the compute-checksum control runs inside the deparser)
        P.out = []
        self._compute(S, P)
        self._deparser(S, P)
        packet = b"".join(P.out) + P.data[P.pos :]
        # 4. recirculate: the deparsed packet back to ingress, metadata reset but the field list
        if P.recirculate is not None:
            S2 = self.fresh(
                self.preserved(S, P.recirculate.field_list, P.recirculate.explicit_slots)
            )
            S2[self._instance_type] = RECIRC
            S2[self._packet_length] = len(packet)
            ingress.append(_Ingress(job.port, packet, S2))
            return
        limit = P.truncate if P.truncate is not None else 0
        if job.truncate:
            limit = min(limit, job.truncate) if limit else job.truncate
        if limit:
            packet = packet[:limit]
        if P.trace is not None:
            P.trace.append(f"sent on port {job.port} ({len(packet)} bytes)")
        out.append((job.port, packet))
