"""Match-action tables at run time: entries, lookup and the default action.

Lookup picks the cheapest structure the key's match kinds allow: a dict for exact keys, a
dict per prefix length for one lpm key beside exact ones, and a priority-ordered scan
otherwise. Priorities follow P4Runtime: the highest number wins (const entries are given
descending priorities so that the earlier one wins).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .matches import Exact, Lpm, Match, Optional, Range, Ternary


class TableError(Exception):
    """A control-plane request the table cannot honour; the message names the problem."""


@dataclass(frozen=True)
class KeySpec:
    name: str
    match_kind: str  # exact | lpm | ternary | range | optional
    width: int


@dataclass
class ActionSpec:
    name: str
    fn: Callable[..., Any]
    params: list[tuple[str, int]]  # directionless parameters: (name, width)
    convert: Callable[[list[int]], tuple[Any, ...]]  # control-plane values -> Python arguments
    scope: str = "TABLE_AND_DEFAULT"  # @tableonly / @defaultonly


@dataclass
class EntryCounts:
    """Where a table entry's direct-counter values live: here by default; the native
    engine's store reads and writes the entry's cell in the engine (mirror_externs.py)."""

    packets: int = 0
    bytes: int = 0


@dataclass(eq=False)
class TableEntry:
    matches: tuple[Match, ...]
    action: str
    args: tuple[int, ...]  # as the control plane gave them
    priority: int
    is_const: bool = False
    counts: EntryCounts = field(default_factory=EntryCounts, repr=False)
    meter: Any = None
    member: int | None = None  # action profile member or group, for indirect tables
    group: int | None = None
    seq: int = 0
    # filled in by the table: the Python call and the apply() result
    fn: Callable[..., Any] | None = None
    call_args: tuple[Any, ...] = ()
    result: tuple[bool, str] = (True, "")
    checks: tuple[tuple[int, int, int, int], ...] = ()  # (key index, kind, a, b)

    def use_store(self, counts: EntryCounts) -> None:
        """Keep the direct-counter values in ``counts`` (the caller moves them over)."""
        self.counts = counts

    @property
    def packets(self) -> int:
        return self.counts.packets

    @packets.setter
    def packets(self, value: int) -> None:
        self.counts.packets = value

    @property
    def bytes(self) -> int:
        return self.counts.bytes

    @bytes.setter
    def bytes(self, value: int) -> None:
        self.counts.bytes = value


KIND_MASK, KIND_RANGE = 0, 1
NO_COLOR = 255  # P.color after a miss of a table with a direct meter: no meter ran
# The action_run of a miss that ran no action (an indirect table without a default): no
# action's control-plane name, so no case of a switch on action_run takes it.
NO_ACTION = ""


def _no_action(S: list[Any], P: Any) -> None:
    return None


class TableStore:
    """Where a table's entries go beyond the table's own indexes: nowhere by default (the
    interpreter looks them up in the table); the native engine's store reloads its copy of
    the entries or the default after each change (switch/native/mirror.py)."""

    def entries_changed(self, table: Table) -> None:
        """An entry was added, deleted or modified, or the entries were replaced."""

    def default_changed(self, table: Table) -> None:
        """The default entry changed."""


class Table:
    def __init__(
        self,
        name: str,
        keys: list[KeySpec],
        actions: dict[str, ActionSpec],
        default_action: str,
        default_args: list[int],
        const_default: bool,
        size: int,
        key_fn: Callable[..., tuple[int, ...]],
        length_slot: int,
    ) -> None:
        self.name = name
        self.keys = keys
        self.actions = actions
        self.size = size
        self.key_fn = key_fn
        self.const_default = const_default
        self.length_slot = length_slot
        self.direct_counter: str | None = None
        self.direct_meter: Any = None  # a factory for per-entry meters
        self.profile: Any = None  # ActionProfile when the table has an implementation
        self.selector_fn: Callable[..., bytes] | None = None
        self.has_const_entries = False
        kinds = [k.match_kind for k in keys]
        if all(k == "exact" for k in kinds):
            self.mode = "exact"
        elif kinds.count("lpm") == 1 and all(k in ("exact", "lpm") for k in kinds):
            self.mode = "lpm"
            self.lpm_index = kinds.index("lpm")
        else:
            self.mode = "scan"
        self.entries: list[TableEntry] = []
        self._seq = itertools.count()
        self._exact: dict[tuple[int, ...], TableEntry] = {}
        self._lpm: dict[int, dict[tuple[int, ...], TableEntry]] = {}
        self._plens: list[int] = []  # prefix lengths present, longest first
        self._lpm_masks: dict[int, int] = {}
        self._scan: list[TableEntry] = []
        self._by_key: dict[tuple[tuple[Match, ...], int], TableEntry] = {}  # (matches, priority)
        self.default_entry = TableEntry((), "", (), 0)
        self.store = TableStore()
        self.initial_default = (default_action, list(default_args))
        self.set_default(default_action, default_args, force=True)

    # ------------------------------------------------------------------ control plane
    @property
    def needs_priority(self) -> bool:
        return any(k.match_kind in ("ternary", "range", "optional") for k in self.keys)

    def bind_action(self, entry: TableEntry, action: str, args: list[int], default: bool) -> None:
        spec = self.actions.get(action)
        if spec is None:
            raise TableError(f"{self.name}: action {action} is not one of the table's actions")
        if default and spec.scope == "TABLE_ONLY":
            raise TableError(
                f"{self.name}: action {action} cannot be the default action (@tableonly)"
            )
        if not default and spec.scope == "DEFAULT_ONLY":
            raise TableError(
                f"{self.name}: action {action} can only be the default action (@defaultonly)"
            )
        if len(args) != len(spec.params):
            raise TableError(
                f"{self.name}: action {action} takes {len(spec.params)} arguments, got {len(args)}"
            )
        for (pname, width), v in zip(spec.params, args, strict=True):
            if not 0 <= v < (1 << width):
                raise TableError(
                    f"{self.name}: {action} argument {pname}={v} does not fit in {width} bits"
                )
        entry.action = action
        entry.args = tuple(args)
        entry.fn = spec.fn
        entry.call_args = spec.convert(list(args))
        entry.result = (not default, action)

    def set_default(self, action: str, args: list[int], force: bool = False) -> None:
        if self.const_default and not force:
            raise TableError(f"{self.name}: the default action is const and cannot be changed")
        entry = TableEntry((), "", (), 0)
        if action == NO_ACTION and self.profile is not None:
            entry.fn, entry.result = _no_action, (False, NO_ACTION)
        else:
            self.bind_action(entry, action, args, default=True)
        self.default_entry = entry
        self.store.default_changed(self)

    def use_store(self, store: TableStore) -> None:
        """Mirror into ``store`` from now on (it gets the entries, then the default)."""
        self.store = store
        store.entries_changed(self)
        store.default_changed(self)

    def reset_default(self) -> None:
        self.set_default(*self.initial_default, force=True)

    def make_indirect(self, profile: Any) -> None:
        """The table's entries point into ``profile`` (``implementation = ...``). Its
        default_action is then ignored, as p4c-bm2-ss ignores it ("Target does not support
        default_action ... due to action profiles"): BMv2's MatchTableIndirect::lookup runs
        an empty action on a miss until the control plane sets a default, and a switch on
        action_run takes none of its cases, ``default:`` included (the table's
        base_default_next). ``apply`` then returns (False, NO_ACTION)."""
        self.profile = profile
        self.initial_default = (NO_ACTION, [])
        self.set_default(NO_ACTION, [], force=True)

    def check_matches(self, matches: list[Match]) -> tuple[Match, ...]:
        if len(matches) != len(self.keys):
            raise TableError(
                f"{self.name}: expected {len(self.keys)} match fields, got {len(matches)}"
            )
        out: list[Match] = []
        for k, m in zip(self.keys, matches, strict=True):
            limit = 1 << k.width
            if k.match_kind == "exact" and isinstance(m, Exact):
                ok = 0 <= m.value < limit
            elif k.match_kind == "lpm" and isinstance(m, Lpm):
                ok = 0 <= m.value < limit and 0 <= m.prefix_len <= k.width
                if ok:
                    m = Lpm(m.value & _prefix_mask(k.width, m.prefix_len), m.prefix_len)
            elif k.match_kind == "ternary" and isinstance(m, Ternary):
                ok = 0 <= m.value < limit and 0 <= m.mask < limit
                m = Ternary(m.value & m.mask, m.mask)
            elif k.match_kind == "range" and isinstance(m, Range):
                ok = 0 <= m.low <= m.high < limit
            elif k.match_kind == "optional" and isinstance(m, Optional):
                ok = m.value is None or 0 <= m.value < limit
            else:
                raise TableError(
                    f"{self.name}: key {k.name} is {k.match_kind}, got a {type(m).__name__} match"
                )
            if not ok:
                raise TableError(f"{self.name}: match value for key {k.name} is out of range: {m}")
            out.append(m)
        return tuple(out)

    def add_entry(
        self,
        matches: list[Match],
        action: str,
        args: list[int],
        priority: int | None = None,
        is_const: bool = False,
        member: int | None = None,
        group: int | None = None,
    ) -> TableEntry:
        ms = self.check_matches(matches)
        if self.needs_priority:
            if priority is None:
                raise TableError(f"{self.name}: entries of this table need a priority")
        else:
            priority = 0
        if self.find(ms, priority) is not None:
            raise TableError(f"{self.name}: an entry with the same match already exists")
        if len(self.entries) >= self.size and not is_const:
            raise TableError(f"{self.name}: table is full ({self.size} entries)")
        entry = TableEntry(ms, "", (), priority, is_const, seq=next(self._seq))
        self.attach(entry, action, args, member, group)
        if self.direct_meter is not None:
            entry.meter = self.direct_meter()
        self.entries.append(entry)
        self.index(entry)
        return entry

    def attach(
        self, entry: TableEntry, action: str, args: list[int], member: int | None, group: int | None
    ) -> None:
        if self.profile is not None and (member is not None or group is not None):
            self.profile.check_ref(member, group)
            entry.member, entry.group = member, group
            entry.action, entry.args = "", ()
            entry.fn = None
        else:
            self.bind_action(entry, action, args, default=False)

    def find(self, matches: tuple[Match, ...], priority: int) -> TableEntry | None:
        return self._by_key.get((matches, priority))

    def modify_entry(
        self,
        matches: list[Match],
        priority: int | None,
        action: str,
        args: list[int],
        member: int | None = None,
        group: int | None = None,
    ) -> TableEntry:
        entry = self.find(self.check_matches(matches), priority if self.needs_priority else 0)
        if entry is None:
            raise TableError(f"{self.name}: no such entry")
        if entry.is_const:
            raise TableError(f"{self.name}: const entries cannot be modified")
        self.attach(entry, action, args, member, group)
        self.store.entries_changed(self)
        return entry

    def delete_entry(self, matches: list[Match], priority: int | None) -> None:
        entry = self.find(self.check_matches(matches), priority if self.needs_priority else 0)
        if entry is None:
            raise TableError(f"{self.name}: no such entry")
        if entry.is_const:
            raise TableError(f"{self.name}: const entries cannot be deleted")
        self.entries.remove(entry)
        self.unindex(entry)

    def clear(self) -> None:
        self.entries = [e for e in self.entries if e.is_const]
        self.reindex()

    # ------------------------------------------------------------------ indexes
    def index(self, e: TableEntry) -> None:
        self._index(e)
        self.store.entries_changed(self)

    def _index(self, e: TableEntry) -> None:
        self._by_key[(e.matches, e.priority)] = e
        if self.mode == "exact":
            self._exact[tuple(m.value for m in e.matches)] = e
        elif self.mode == "lpm":
            plen = e.matches[self.lpm_index].prefix_len  # type: ignore[union-attr]
            if plen not in self._lpm:  # a new prefix length: the lookup order changes
                self._lpm[plen] = {}
                self._plens = sorted(self._lpm, reverse=True)
                self._lpm_masks[plen] = _prefix_mask(self.keys[self.lpm_index].width, plen)
            self._lpm[plen][tuple(m.value for m in e.matches)] = e
        else:
            e.checks = tuple(self.compile_checks(e))
            bisect.insort(self._scan, e, key=_scan_order)

    def unindex(self, e: TableEntry) -> None:
        del self._by_key[(e.matches, e.priority)]
        if self.mode == "exact":
            del self._exact[tuple(m.value for m in e.matches)]
        elif self.mode == "lpm":
            plen = e.matches[self.lpm_index].prefix_len  # type: ignore[union-attr]
            bucket = self._lpm[plen]
            del bucket[tuple(m.value for m in e.matches)]
            if not bucket:
                del self._lpm[plen]
                self._plens.remove(plen)
        else:
            self._scan.remove(e)
        self.store.entries_changed(self)

    def reindex(self) -> None:
        self._exact, self._lpm, self._plens, self._scan = {}, {}, [], []
        self._by_key, self._lpm_masks = {}, {}
        for e in self.entries:
            self._index(e)
        self.store.entries_changed(self)  # once, not per entry

    def compile_checks(self, e: TableEntry) -> list[tuple[int, int, int, int]]:
        checks = []
        for i, (k, m) in enumerate(zip(self.keys, e.matches, strict=True)):
            full = (1 << k.width) - 1
            if isinstance(m, Exact):
                checks.append((i, KIND_MASK, full, m.value))
            elif isinstance(m, Lpm):
                checks.append((i, KIND_MASK, _prefix_mask(k.width, m.prefix_len), m.value))
            elif isinstance(m, Ternary):
                if m.mask:
                    checks.append((i, KIND_MASK, m.mask, m.value))
            elif isinstance(m, Optional):
                if m.value is not None:
                    checks.append((i, KIND_MASK, full, m.value))
            elif isinstance(m, Range):
                checks.append((i, KIND_RANGE, m.low, m.high))
        return checks

    # ------------------------------------------------------------------ data plane
    def lookup(self, key: tuple[int, ...]) -> TableEntry | None:
        if self.mode == "exact":
            return self._exact.get(key)
        if self.mode == "lpm":
            i = self.lpm_index
            for plen in self._plens:
                k = list(key)
                k[i] &= self._lpm_masks[plen]
                e = self._lpm[plen].get(tuple(k))
                if e is not None:
                    return e
            return None
        for e in self._scan:
            for i, kind, a, b in e.checks:
                v = key[i]
                if kind == KIND_MASK:
                    if v & a != b:
                        break
                elif not a <= v <= b:
                    break
            else:
                return e
        return None

    def apply(self, S: list[Any], P: Any) -> tuple[bool, str]:
        entry = self.lookup(self.key_fn(S, P)) if self.keys else None
        chosen = None
        if entry is not None and entry.fn is None:  # an action profile member or selector group
            chosen = self.profile.resolve(entry, S, P, self.selector_fn)
            if chosen is None:  # an empty group: nothing to run, the table misses
                entry = None
        if entry is None:
            if self.direct_meter is not None:
                # as BMv2: a miss executes no direct meter, and its read() in the default
                # action leaves the destination unchanged (found by the BMv2 oracle)
                P.color = NO_COLOR
            d = self.default_entry
            if P.trace is not None:
                P.trace.append(f"table {self.name}: miss, default action {d.action}")
            d.fn(S, P, *d.call_args)
            return d.result
        if self.direct_counter is not None:
            c = entry.counts  # the store's attributes: no property call per packet
            c.packets += 1
            c.bytes += S[self.length_slot]
        if entry.meter is not None:
            P.color = entry.meter.execute(S[self.length_slot], P.now_us)
            target = self.direct_meter.read_target
            if target is not None:  # BMv2 writes read()'s field on every hit
                S[target[0]] = P.color & ((1 << target[1]) - 1)
        if chosen is not None:
            fn, call_args, result = chosen
            if P.trace is not None:
                P.trace.append(f"table {self.name}: hit, action {result[1]} (profile)")
            fn(S, P, *call_args)
            return result
        if P.trace is not None:
            P.trace.append(f"table {self.name}: hit, action {entry.action}{list(entry.args)}")
        entry.fn(S, P, *entry.call_args)
        return entry.result


def _scan_order(e: TableEntry) -> tuple[int, int]:
    return (-e.priority, e.seq)  # highest priority first, then the earlier entry


def _prefix_mask(width: int, plen: int) -> int:
    return ((1 << plen) - 1) << (width - plen)


def matches_for_wildcard(keys: list[KeySpec]) -> list[Match]:
    """Matches that accept anything, one per key (STF: an omitted key)."""
    out: list[Match] = []
    for k in keys:
        if k.match_kind == "exact":
            out.append(Exact(0))
        elif k.match_kind == "lpm":
            out.append(Lpm(0, 0))
        elif k.match_kind == "ternary":
            out.append(Ternary(0, 0))
        elif k.match_kind == "range":
            out.append(Range(0, (1 << k.width) - 1))
        else:
            out.append(Optional(None))
    return out
