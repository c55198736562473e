"""Everything the server knows about the pipeline in force: the switch plus the P4Runtime view.

The interpreter holds the forwarding state (entries, extern cells, the PRE). What P4Runtime
needs on top — the P4Info and cookie, the form in which replication entries were written, group
sizes and weights, table-entry metadata, digest configuration — lives here, next to it, and is
replaced with it when a new pipeline is committed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..interp.builder import Pipeline
from ..interp.switch import V1Switch
from .schema import Schema


@dataclass
class PipelineState:
    switch: V1Switch
    schema: Schema
    p4info: Any  # p4.config.v1.P4Info
    device_config: bytes
    cookie: int | None = None
    # PacketReplicationEngineEntry messages as written (canonical), by id
    multicast_groups: dict[int, Any] = field(default_factory=dict)
    clone_sessions: dict[int, Any] = field(default_factory=dict)
    # ActionProfileGroup messages as written, by (profile name, group id)
    groups: dict[tuple[str, int], Any] = field(default_factory=dict)
    # TableEntry (interpreter object) -> (metadata bytes, controller_metadata)
    entry_metadata: dict[Any, tuple[bytes, int]] = field(default_factory=dict)
    # p4.v1.DigestEntry.Config by digest id
    digest_configs: dict[int, Any] = field(default_factory=dict)
    digests: Any = None  # entity_digests.DigestEngine, set by the device

    @property
    def pipeline(self) -> Pipeline:
        return self.switch.pipeline
