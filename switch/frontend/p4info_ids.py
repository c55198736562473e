"""P4Runtime ids and aliases as p4c's P4RuntimeSymbolTable computes them, and field ids.

* ids are ``(prefix << 24) | (jenkins(name) & 0xFFFFFF)``; ``@id`` ids are reserved first,
  the rest of each kind are hashed in sorted-name order with linear probing on collisions;
* aliases are the shortest dot-separated suffix that is unique among *all* symbol names;
* match fields, action parameters, packet-metadata fields and value-set fields get ids
  1..N in declaration order, skipping ids taken by ``@id``.
"""

from __future__ import annotations

from collections.abc import Sequence

from .cpmodel import ControlPlaneModel
from .errors import CompileError

# The 8-bit id prefixes of p4info.proto's P4Ids.Prefix.
ACTION = 0x01
TABLE = 0x02
VALUE_SET = 0x03
CONTROLLER_HEADER = 0x04
ACTION_PROFILE = 0x11
COUNTER = 0x12
DIRECT_COUNTER = 0x13
METER = 0x14
DIRECT_METER = 0x15
REGISTER = 0x16
DIGEST = 0x17

_MASK24 = 0xFFFFFF
_MASK32 = 0xFFFFFFFF


def jenkins_one_at_a_time(data: bytes) -> int:
    """Bob Jenkins' one-at-a-time hash on 32 bits, as p4c's P4RuntimeSymbolTable computes it."""
    h = 0
    for byte in data:
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    return (h + (h << 15)) & _MASK32


def internal_error(message: str) -> CompileError:
    return CompileError(None, message)


def _with_prefix(kind: int, explicit_id: int, name: str) -> int:
    """An ``@id`` value with its 8-bit type prefix: added when absent, checked when present."""
    if not 0 <= explicit_id <= _MASK32:
        raise internal_error(f"{name}: @id should be an unsigned integer")
    prefix = explicit_id & ~_MASK24 & _MASK32
    if prefix and prefix != kind << 24:
        raise internal_error(f"{name}: @id has the wrong 8-bit prefix")
    return explicit_id | (kind << 24)


class _SuffixSet:
    """p4c's P4SymbolSuffixSet: a tree of reversed name components counting passing names."""

    def __init__(self) -> None:
        self._names: set[str] = set()
        self._root: dict[str, list] = {}  # component -> [count, children]

    def add(self, name: str) -> None:
        if name in self._names:  # p4c counts each distinct name once, whatever its kinds
            return
        self._names.add(name)
        children = self._root
        for component in reversed(name.split(".")):
            node = children.setdefault(component, [0, {}])
            node[0] += 1
            children = node[1]

    def shortest_unique_suffix(self, name: str) -> str:
        components = name.split(".")
        needed = 0
        children = self._root
        for component in reversed(components):
            count, children = children[component]
            needed += 1
            if count < 2:
                break
        return ".".join(components[len(components) - needed :])


class SymbolTable:
    """Control-plane names of every kind with their P4Runtime ids, plus aliases."""

    def __init__(self) -> None:
        self._requested: dict[int, dict[str, int | None]] = {}
        self._ids: dict[int, dict[str, int]] = {}
        self._taken: set[int] = set()
        self._suffixes = _SuffixSet()

    def add(self, kind: int, name: str, explicit_id: int | None = None) -> None:
        """Record a symbol; a second symbol of the same kind and name is ignored, as in p4c."""
        table = self._requested.setdefault(kind, {})
        if name in table:
            return
        if explicit_id is not None:
            explicit_id = _with_prefix(kind, explicit_id, name)
            if explicit_id in self._taken:
                raise internal_error(f"@id {explicit_id} is assigned to multiple declarations")
            self._taken.add(explicit_id)
        table[name] = explicit_id
        self._suffixes.add(name)

    def compute_ids(self) -> None:
        """Hash every symbol without an ``@id``; sorted names make probing deterministic."""
        for kind, table in self._requested.items():
            ids = self._ids.setdefault(kind, {})
            pending = sorted((n for n, i in table.items() if i is None), key=str.encode)
            for name, explicit_id in table.items():
                if explicit_id is not None:
                    ids[name] = explicit_id
            for name in pending:
                ids[name] = self._probe(kind, jenkins_one_at_a_time(name.encode()))

    def _probe(self, kind: int, start: int) -> int:
        value = start
        while True:
            candidate = (kind << 24) | (value & _MASK24)
            if candidate not in self._taken:
                self._taken.add(candidate)
                return candidate
            value = (value + 1) & _MASK32
            if value == start:
                raise internal_error("No available id to represent a symbol in P4Runtime")

    def id_of(self, kind: int, name: str) -> int:
        try:
            return self._ids[kind][name]
        except KeyError:
            raise internal_error(
                f"P4Info refers to '{name}', which the model does not declare"
            ) from None

    def alias(self, name: str) -> str:
        return self._suffixes.shortest_unique_suffix(name)


def collect_symbols(model: ControlPlaneModel) -> SymbolTable:
    """Every control-plane symbol of the model, ids assigned (hidden ones included, as in p4c)."""
    symbols = SymbolTable()
    for action in model.actions:
        symbols.add(ACTION, action.name, action.explicit_id)
    for table in model.tables:
        symbols.add(TABLE, table.name, table.explicit_id)
    for value_set in model.value_sets:
        symbols.add(VALUE_SET, value_set.name, value_set.explicit_id)
    # Controller headers are known by their header type's name, not the annotation's string.
    for header in model.controller_headers:
        symbols.add(CONTROLLER_HEADER, header.type_name, header.explicit_id)
    for profile in model.action_profiles:
        symbols.add(ACTION_PROFILE, profile.name, profile.explicit_id)
    for counter in model.counters:
        kind = DIRECT_COUNTER if counter.direct_table else COUNTER
        symbols.add(kind, counter.name, counter.explicit_id)
    for meter in model.meters:
        symbols.add(DIRECT_METER if meter.direct_table else METER, meter.name, meter.explicit_id)
    for register in model.registers:
        symbols.add(REGISTER, register.name, register.explicit_id)
    # v1model digests come from digest<T>() calls, which cannot carry an @id.
    for digest in model.digests:
        symbols.add(DIGEST, digest.name)
    symbols.compute_ids()
    return symbols


def allocate_field_ids(explicit: Sequence[int | None], what: str) -> list[int]:
    """p4c's FieldIdAllocator: @id values first, then 1, 2, ... skipping taken ones.

    An element with an @id still advances the counter, so positions matter, not just ids.
    """
    taken: set[int] = set()
    for value in explicit:
        if value is None:
            continue
        if value == 0:
            raise internal_error(f"{what}: 0 is not a valid @id value")
        if value in taken:
            raise internal_error(f"{what}: @id {value} is used multiple times")
        taken.add(value)
    ids: list[int] = []
    index = 1
    for value in explicit:
        if value is not None:
            ids.append(value)
            index += 1
            continue
        while index in taken:
            index += 1
        ids.append(index)
        taken.add(index)
    return ids
