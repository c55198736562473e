"""DigestEntry (digest configuration) and the DigestList messages sent on the stream.

A digest is streamed only while its DigestEntry is configured, as in simple_switch_grpc.
Simplification: lists are built when a packet finishes (all the digests of one type that the
packet produced, split into lists of at most ``max_list_size`` when that is > 0) and sent at
once; ``max_timeout_ns`` batching across packets is not done. ``ack_timeout_ns`` is honoured:
a digest value that is in a list not yet acknowledged (and whose ack timeout, if > 0, has not
run out) is not sent again; a DigestListAck releases the list's values.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any

from p4reduce.proto import p4runtime_pb2

from . import p4data
from .entity_common import DELETE, INSERT, MODIFY, lookup
from .errors import already_exists, invalid, not_found
from .state import PipelineState


class DigestEngine:
    def __init__(self) -> None:
        self._list_ids = itertools.count(1)
        # (digest id, list id) -> (deadline in ns or None, keys of the values in the list)
        self.pending: dict[tuple[int, int], tuple[int | None, list[bytes]]] = {}
        self.in_flight: dict[int, set[bytes]] = {}  # digest id -> values awaiting an ack

    def _expire(self, now_ns: int) -> None:
        for key, (deadline, values) in list(self.pending.items()):
            if deadline is not None and now_ns >= deadline:
                self._release(key, values)

    def _release(self, key: tuple[int, int], values: list[bytes]) -> None:
        del self.pending[key]
        flight = self.in_flight.get(key[0], set())
        flight.difference_update(values)

    def ack(self, digest_id: int, list_id: int) -> bool:
        entry = self.pending.get((digest_id, list_id))
        if entry is None:
            return False
        self._release((digest_id, list_id), entry[1])
        return True

    def forget(self, digest_id: int) -> None:
        for key in [k for k in self.pending if k[0] == digest_id]:
            del self.pending[key]
        self.in_flight.pop(digest_id, None)

    def collect(
        self, state: PipelineState, digests: list[tuple[str, tuple[Any, ...]]]
    ) -> list[Any]:
        """DigestList messages for the digests one packet produced (configured ones only)."""
        now_ns = time.time_ns()
        self._expire(now_ns)
        by_id: dict[int, list[tuple[bytes, Any]]] = {}
        errors = list(state.pipeline.errors)
        for name, values in digests:
            info = state.schema.digest_by_name.get(name)
            if info is None or info.id not in state.digest_configs:
                continue
            data = p4data.encode_leaves(info.type_spec, state.schema.type_info, values, errors)
            key = data.SerializeToString()
            flight = self.in_flight.setdefault(info.id, set())
            if key in flight or any(key == k for k, _ in by_id.get(info.id, [])):
                continue
            by_id.setdefault(info.id, []).append((key, data))
        out = []
        for did, items in by_id.items():
            config = state.digest_configs[did]
            n = config.max_list_size if config.max_list_size > 0 else len(items)
            for start in range(0, len(items), n):
                chunk = items[start : start + n]
                list_id = next(self._list_ids)
                msg = p4runtime_pb2.DigestList(digest_id=did, list_id=list_id, timestamp=now_ns)
                msg.data.extend(d for _, d in chunk)
                keys = [k for k, _ in chunk]
                deadline = now_ns + config.ack_timeout_ns if config.ack_timeout_ns > 0 else None
                self.pending[(did, list_id)] = (deadline, keys)
                self.in_flight[did].update(keys)
                out.append(msg)
        return out


def write(state: PipelineState, update_type: int, msg: Any) -> None:
    info = lookup(state.schema.digests, msg.digest_id, "digest")
    owner = f"digest {info.name}"
    configured = info.id in state.digest_configs
    if update_type == DELETE:
        if not configured:
            raise not_found(f"{owner} is not configured")
        del state.digest_configs[info.id]
        state.digests.forget(info.id)
        return
    if update_type == INSERT and configured:
        raise already_exists(f"{owner} is already configured")
    if update_type == MODIFY and not configured:
        raise not_found(f"{owner} is not configured")
    if update_type not in (INSERT, MODIFY):
        raise invalid("update type UNSPECIFIED")
    c = msg.config
    if c.max_timeout_ns < 0 or c.max_list_size < 0 or c.ack_timeout_ns < 0:
        raise invalid(f"{owner}: negative configuration values")
    stored = p4runtime_pb2.DigestEntry.Config()
    stored.CopyFrom(c)
    state.digest_configs[info.id] = stored


def read(state: PipelineState, msg: Any) -> Iterator[Any]:
    if msg.digest_id == 0:
        ids = sorted(state.digest_configs)
    else:
        lookup(state.schema.digests, msg.digest_id, "digest")
        ids = [msg.digest_id] if msg.digest_id in state.digest_configs else []
    for did in ids:
        out = p4runtime_pb2.DigestEntry(digest_id=did)
        out.config.CopyFrom(state.digest_configs[did])
        yield p4runtime_pb2.Entity(digest_entry=out)
