"""P4Info generation: the control-plane model turned into the message p4c writes.

Everything here follows p4c 1.2.5's control-plane code (p4RuntimeSymbolTable.cpp,
p4RuntimeSerializer.cpp, p4RuntimeArchStandard.h, typeSpecConverter.cpp) for v1model, so that
a controller built against p4c's P4Info sees the same ids, names, aliases and layout:

* ids are ``(prefix << 24) | (jenkins(name) & 0xFFFFFF)``; ``@id`` ids are reserved first,
  the rest of each kind are hashed in sorted-name order with linear probing on collisions;
* aliases are the shortest dot-separated suffix that is unique among *all* symbol names;
* match fields, action parameters, packet-metadata fields and value-set fields get ids
  1..N in declaration order, skipping ids taken by ``@id`` (and the slots of ``selector``
  keys, which p4c numbers but does not emit);
* annotations are copied as written, except ``@name``, ``@id``, ``@brief`` and
  ``@description`` (the last two become ``doc``);
* ``type_info`` holds only the user types the message refers to.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2, p4types_pb2

from .annoexpr import fold_annotation_expression
from .cpmodel import (
    Annotations,
    ControlPlaneModel,
    CPAction,
    CPActionProfile,
    CPControllerHeader,
    CPCounter,
    CPDataType,
    CPDigest,
    CPEnum,
    CPMatchField,
    CPMeter,
    CPNewType,
    CPParam,
    CPRegister,
    CPStruct,
    CPTable,
    CPTypeSpecField,
    CPValueSet,
)
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

# p4c's .txtpb files start with these two comment lines (text_format.Parse skips them).
TXTPB_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"

# Annotations that P4Info represents elsewhere, never as annotation strings.
_ALWAYS_SKIPPED = frozenset({"name", "id", "brief", "description"})
# Action-profile annotations that become fields of the ActionProfile message.
_PROFILE_ANNOTATIONS = frozenset({"max_group_size", "selector_size_semantics", "max_member_weight"})

_MATCH_TYPES = {
    "exact": p4info_pb2.MatchField.EXACT,
    "lpm": p4info_pb2.MatchField.LPM,
    "ternary": p4info_pb2.MatchField.TERNARY,
    "range": p4info_pb2.MatchField.RANGE,
    "optional": p4info_pb2.MatchField.OPTIONAL,
}
_SCOPES = {
    "TABLE_AND_DEFAULT": p4info_pb2.ActionRef.TABLE_AND_DEFAULT,
    "TABLE_ONLY": p4info_pb2.ActionRef.TABLE_ONLY,
    "DEFAULT_ONLY": p4info_pb2.ActionRef.DEFAULT_ONLY,
}
_COUNTER_UNITS = {
    "BYTES": p4info_pb2.CounterSpec.BYTES,
    "PACKETS": p4info_pb2.CounterSpec.PACKETS,
    "BOTH": p4info_pb2.CounterSpec.BOTH,
    "PACKETS_AND_BYTES": p4info_pb2.CounterSpec.BOTH,  # v1model's CounterType spelling
}
_METER_UNITS = {"BYTES": p4info_pb2.MeterSpec.BYTES, "PACKETS": p4info_pb2.MeterSpec.PACKETS}


# --------------------------------------------------------------------------------------------
# Ids and aliases


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


def _internal(message: str) -> CompileError:
    return CompileError(None, message)


def _with_prefix(kind: int, explicit_id: int, name: str) -> int:
    """An ``@id`` value with its 8-bit type prefix: added when absent, checked when present."""
    if not 0 <= explicit_id <= _MASK32:
        raise _internal(f"{name}: @id should be an unsigned integer")
    prefix = explicit_id & ~_MASK24 & _MASK32
    if prefix and prefix != kind << 24:
        raise _internal(f"{name}: @id has the wrong 8-bit prefix")
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
                raise _internal(f"@id {explicit_id} is assigned to multiple declarations")
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
                raise _internal("No available id to represent a symbol in P4Runtime")

    def id_of(self, kind: int, name: str) -> int:
        try:
            return self._ids[kind][name]
        except KeyError:
            raise _internal(
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


# --------------------------------------------------------------------------------------------
# Annotations


@dataclass(frozen=True)
class _Annotation:
    name: str
    body: str  # text after the name: "", "(...)" or "[...]"

    @property
    def is_structured(self) -> bool:
        return self.body.startswith("[")

    @property
    def inner(self) -> str:
        return self.body[1:-1].strip() if self.body else ""


def _parse_annotation(text: str) -> _Annotation:
    text = text.strip().removeprefix("@")
    end = 0
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return _Annotation(text[:end], text[end:].strip())


def _annotations(annotations: Annotations) -> list[_Annotation]:
    return [_parse_annotation(a) for a in annotations]


def _find(annotations: Annotations, name: str) -> _Annotation | None:
    return next((a for a in _annotations(annotations) if a.name == name), None)


def _has(annotations: Annotations, name: str) -> bool:
    return _find(annotations, name) is not None


def _is_hidden(annotations: Annotations) -> bool:
    return _has(annotations, "hidden")


def _string_literal(text: str) -> str:
    """The value of a P4 string literal ("..." with C escapes)."""
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise _internal(f"expected a string literal, got {text!r}")
    out: list[str] = []
    escapes = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "'": "'", "0": "\0"}
    chars = iter(text[1:-1])
    for ch in chars:
        if ch == "\\":
            escaped = next(chars, "")
            out.append(escapes.get(escaped, escaped))  # unknown escapes keep the character
        else:
            out.append(ch)
    return "".join(out)


def _int_literal(text: str) -> int:
    """A P4 integer literal without width prefix (decimal, 0x, 0o, 0b; '_' allowed)."""
    return int(text.strip().replace("_", ""), 0)


def _field_explicit_id(annotations: Annotations) -> int | None:
    anno = _find(annotations, "id")
    return _int_literal(anno.inner) if anno else None


def _split_top_level(text: str, separator: str = ",") -> list[str]:
    """Split on a separator outside strings and brackets."""
    parts: list[str] = []
    depth, start, in_string, escaped = 0, 0, False, False
    for i, ch in enumerate(text):
        if in_string:
            escaped = ch == "\\" and not escaped
            if ch == '"' and not escaped:
                in_string = False
            continue
        if ch == '"':
            in_string = True
        elif ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        elif ch == separator and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _structured_expression(text: str, out: p4types_pb2.Expression) -> None:
    """A structured annotation's element, constant-folded as p4c does (``1==2`` is false,
    ``5+6`` is 11); an element that is not a compile-time literal expression keeps its text."""
    value = fold_annotation_expression(text)
    if isinstance(value, bool):
        out.bool_value = value
    elif isinstance(value, int):
        out.int64_value = value
    elif isinstance(value, str):
        out.string_value = value
    else:
        out.string_value = text


def _structured(anno: _Annotation, out: p4types_pb2.StructuredAnnotation) -> None:
    """`@name[...]`: an expression list or a key=value list of literals."""
    out.name = anno.name
    items = _split_top_level(anno.inner)
    if not items:
        return
    if all("=" in item and not item.startswith('"') for item in items):
        for item in items:
            key, value = (s.strip() for s in item.split("=", 1))
            pair = out.kv_pair_list.kv_pairs.add(key=key)
            _structured_expression(value, pair.value)
    else:
        for item in items:
            _structured_expression(item, out.expression_list.expressions.add())


def _add_annotations(
    message, annotations: Annotations, skip: Iterable[str] = (), structured: bool = True
) -> None:
    """Copy annotations to message.annotations (and structured_annotations) the way p4c does."""
    skipped = _ALWAYS_SKIPPED | frozenset(skip)
    for text, anno in zip(annotations, _annotations(annotations), strict=True):
        if anno.name in skipped:
            continue
        if anno.is_structured and structured:
            _structured(anno, message.structured_annotations.add())
        else:
            message.annotations.append("@" + text.strip().removeprefix("@"))


def _add_documentation(message, annotations: Annotations) -> None:
    """@brief/@description become the `doc` field, set only when one is present."""
    for anno in _annotations(annotations):
        if anno.name == "brief":
            message.doc.brief = _string_literal(anno.inner)
        elif anno.name == "description":
            message.doc.description = _string_literal(anno.inner)


def _set_preamble(
    preamble: p4info_pb2.Preamble,
    id_: int,
    name: str,
    alias: str,
    annotations: Annotations,
    skip: Iterable[str] = (),
) -> None:
    preamble.id = id_
    preamble.name = name
    preamble.alias = alias
    _add_annotations(preamble, annotations, skip)
    _add_documentation(preamble, annotations)


# --------------------------------------------------------------------------------------------
# Field ids


def _allocate_field_ids(explicit: Sequence[int | None], what: str) -> list[int]:
    """p4c's FieldIdAllocator: @id values first, then 1, 2, ... skipping taken ones.

    An element with an @id still advances the counter, so positions matter, not just ids.
    """
    taken: set[int] = set()
    for value in explicit:
        if value is None:
            continue
        if value == 0:
            raise _internal(f"{what}: 0 is not a valid @id value")
        if value in taken:
            raise _internal(f"{what}: @id {value} is used multiple times")
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


# --------------------------------------------------------------------------------------------
# Types and type_info


class _Types:
    """Looks up user types by name and fills type_info with the ones actually referenced."""

    def __init__(self, model: ControlPlaneModel, p4info: p4info_pb2.P4Info) -> None:
        self._model = model
        self._info = p4info.type_info
        self._new_types = {t.name: t for t in model.new_types}
        self._enums = {e.name: e for e in model.enums}
        self._structs = {s.name: s for s in model.structs}

    def new_type(self, name: str | None) -> CPNewType | None:
        return self._new_types.get(name) if name else None

    def enum(self, name: str | None) -> CPEnum | None:
        return self._enums.get(name) if name else None

    def known_struct(self, name: str) -> bool:
        return name in self._structs

    def register_use(self, name: str | None) -> None:
        """A field/param/index of user type `name` was emitted: describe the type."""
        if name:
            self.spec_for_named(name, p4types_pb2.P4DataTypeSpec())

    def width(self, declared: int, type_name: str | None) -> int:
        """p4c's getTypeWidth: a translated `type` is as wide as its controller type."""
        new_type = self.new_type(type_name)
        if new_type and new_type.translation_uri is not None:
            return 0 if new_type.translation_string else new_type.translation_bitwidth or 0
        enum = self.enum(type_name)
        if enum and enum.bitwidth:
            return enum.bitwidth
        return declared

    def emitted_type_name(self, type_name: str | None) -> str | None:
        """The type_name P4Info shows: `type`s and plain enums, never serializable enums."""
        if self.new_type(type_name):
            return type_name
        enum = self.enum(type_name)
        if enum and not enum.bitwidth:
            return type_name
        if type_name and enum is None and type_name not in self._structs:
            raise _internal(f"P4Info type '{type_name}' is not described in the model")
        return None

    def spec_for_field(self, f: CPTypeSpecField, out: p4types_pb2.P4DataTypeSpec) -> None:
        if f.type_name:
            self.spec_for_named(f.type_name, out)
        elif f.kind == "bool":
            out.bool.SetInParent()
        elif f.kind == "error":
            out.error.SetInParent()
            self._add_error()
        elif f.kind == "varbit":
            out.bitstring.varbit.max_bitwidth = f.bitwidth
        else:
            _bitstring(f.bitwidth, f.signed, out.bitstring)

    def spec_for_data(self, data: CPDataType, out: p4types_pb2.P4DataTypeSpec) -> None:
        """A digest's data type (p4c's TypeSpecConverter): named types go to type_info."""
        if data.kind == "named" and data.type_name:
            self.spec_for_named(data.type_name, out)
        elif data.kind == "bool":
            out.bool.SetInParent()
        elif data.kind == "error":
            out.error.SetInParent()
            self._add_error()
        elif data.kind == "varbit":
            out.bitstring.varbit.max_bitwidth = data.bitwidth
        elif data.kind == "tuple":
            out.tuple.SetInParent()
            for member in data.members:
                self.spec_for_data(member, out.tuple.members.add())
        elif data.kind == "bits":
            _bitstring(data.bitwidth, data.signed, out.bitstring)
        else:
            raise _internal(f"P4Info data type '{data.kind}' is unknown")

    def spec_for_named(self, name: str, out: p4types_pb2.P4DataTypeSpec) -> None:
        if name in self._new_types:
            out.new_type.name = name
            self._add_new_type(self._new_types[name])
        elif name in self._enums:
            enum = self._enums[name]
            if enum.bitwidth:
                out.serializable_enum.name = name
                self._add_serializable_enum(enum)
            else:
                out.enum.name = name
                self._add_enum(enum)
        elif name in self._structs:
            struct = self._structs[name]
            if struct.is_header:
                out.header.name = name
                self._add_header(struct)
            else:
                out.struct.name = name
                self.add_struct(struct)
        else:
            raise _internal(f"P4Info type '{name}' is not described in the model")

    def add_struct(self, struct: CPStruct) -> None:
        if struct.name in self._info.structs:
            return
        spec = self._info.structs[struct.name]
        for f in struct.fields:
            member = spec.members.add(name=f.name)
            self.spec_for_field(f, member.type_spec)

    def _add_header(self, header: CPStruct) -> None:
        if header.name in self._info.headers:
            return
        spec = self._info.headers[header.name]
        for f in header.fields:
            member = spec.members.add(name=f.name)
            if f.kind == "varbit":
                member.type_spec.varbit.max_bitwidth = f.bitwidth
            else:
                _bitstring(f.bitwidth, f.signed, member.type_spec)

    def _add_new_type(self, new_type: CPNewType) -> None:
        if new_type.name in self._info.new_types:
            return
        spec = self._info.new_types[new_type.name]
        if new_type.translation_uri is None:
            _bitstring(new_type.bitwidth, new_type.signed, spec.original_type.bitstring)
            return
        spec.translated_type.uri = new_type.translation_uri
        if new_type.translation_string:
            spec.translated_type.sdn_string.SetInParent()
        else:
            spec.translated_type.sdn_bitwidth = new_type.translation_bitwidth or 0

    def _add_enum(self, enum: CPEnum) -> None:
        if enum.name not in self._info.enums:
            spec = self._info.enums[enum.name]
            for m in enum.members:
                spec.members.add(name=m.name)

    def _add_serializable_enum(self, enum: CPEnum) -> None:
        if enum.name in self._info.serializable_enums:
            return
        spec = self._info.serializable_enums[enum.name]
        spec.underlying_type.bitwidth = enum.bitwidth
        for m in enum.members:
            spec.members.add(name=m.name, value=_bytes_of(m.value or 0, enum.bitwidth))

    def _add_error(self) -> None:
        if not self._info.HasField("error"):
            self._info.error.SetInParent()
            self._info.error.members.extend(self._model.errors)


def _bitstring(bitwidth: int, signed: bool, out) -> None:
    """Fill a P4BitstringLikeTypeSpec."""
    if signed:
        out.int.bitwidth = bitwidth
    else:
        out.bit.bitwidth = bitwidth


def _bytes_of(value: int, bitwidth: int) -> bytes:
    """p4c's padded byte string: big-endian on ceil(W/8) bytes, two's complement for negatives."""
    size = max(1, (bitwidth + 7) // 8)
    return (value % (1 << max(bitwidth, 1))).to_bytes(size, "big")


# --------------------------------------------------------------------------------------------
# The P4Info builder


@dataclass
class _Builder:
    model: ControlPlaneModel
    symbols: SymbolTable
    p4info: p4info_pb2.P4Info = field(default_factory=p4info_pb2.P4Info)
    types: _Types = field(init=False)
    actions: dict[str, CPAction] = field(init=False)
    # Parameter ids per action, needed again for initial_default_action arguments.
    action_param_ids: dict[str, list[int]] = field(default_factory=dict)
    # Whether p4c would have created type_info (see ControlPlaneModel.touches_type_info).
    touched_type_info: bool = False

    def __post_init__(self) -> None:
        self.types = _Types(self.model, self.p4info)
        self.actions = {a.name: a for a in self.model.actions}

    def preamble(
        self, out: p4info_pb2.Preamble, kind: int, name: str, annotations: Annotations, skip=()
    ) -> None:
        """The usual preamble: the symbol's id and alias, its annotations and doc."""
        alias = self.symbols.alias(name)
        _set_preamble(out, self.symbols.id_of(kind, name), name, alias, annotations, skip)

    # -- pkg_info ----------------------------------------------------------------------------

    def add_pkg_info(self) -> None:
        pkg = self.p4info.pkg_info
        pkg.arch = self.model.arch
        for anno in _annotations(self.model.pkg_annotations):
            if anno.name == "pkginfo":
                self._apply_pkginfo(pkg, anno)
        _add_annotations(pkg, self.model.pkg_annotations, skip={"pkginfo"})
        _add_documentation(pkg, self.model.pkg_annotations)

    @staticmethod
    def _apply_pkginfo(pkg: p4info_pb2.PkgInfo, anno: _Annotation) -> None:
        # @pkginfo(name="...", version="...") sets PkgInfo's string fields (arch included,
        # which p4c allows with a warning).
        for item in _split_top_level(anno.inner):
            key, _, value = item.partition("=")
            key = key.strip()
            if key in ("name", "version", "organization", "contact", "url", "arch"):
                setattr(pkg, key, _string_literal(value))

    # -- actions -----------------------------------------------------------------------------

    def add_actions(self) -> None:
        seen: set[int] = set()
        for action in self.model.actions:
            self.action_param_ids[action.name] = _allocate_field_ids(
                [_field_explicit_id(p.annotations) for p in action.params], action.name
            )
            action_id = self.symbols.id_of(ACTION, action.name)
            # p4c deduplicates actions by id (a global action is inlined in every control).
            if _is_hidden(action.annotations) or action_id in seen:
                continue
            seen.add(action_id)
            self._add_action(action)

    def _add_action(self, action: CPAction) -> None:
        message = self.p4info.actions.add()
        self.preamble(message.preamble, ACTION, action.name, action.annotations)
        for param, param_id in zip(action.params, self.action_param_ids[action.name], strict=True):
            self._add_param(message.params.add(), param, param_id)

    def _add_param(self, out: p4info_pb2.Action.Param, param: CPParam, param_id: int) -> None:
        out.id = param_id
        out.name = param.name
        _add_annotations(out, param.annotations)
        _add_documentation(out, param.annotations)
        enum = self.types.enum(param.type_name)
        if not (enum and not enum.bitwidth):  # plain enums have no width
            out.bitwidth = self.types.width(param.bitwidth, param.type_name)
        self._set_type_name(out, param.type_name)
        self.touched_type_info = True

    def _set_type_name(self, out, type_name: str | None) -> None:
        shown = self.types.emitted_type_name(type_name)
        if shown:
            out.type_name.name = shown
        self.types.register_use(type_name)

    # -- tables ------------------------------------------------------------------------------

    def add_tables(self) -> None:
        for table in self.model.tables:
            if not _is_hidden(table.annotations):
                self._add_table(table)

    def _add_table(self, table: CPTable) -> None:
        out = self.p4info.tables.add()
        self.preamble(out.preamble, TABLE, table.name, table.annotations)
        self._add_match_fields(out, table)
        for ref in table.actions:
            self._add_action_ref(out.action_refs.add(), ref.action, ref.scope, ref.annotations)
        const_default = table.const_default_action
        if const_default:
            out.const_default_action_id = self.symbols.id_of(ACTION, const_default)
        default = table.default_action or const_default
        if default:
            self._set_initial_default_action(out.initial_default_action, table, default)
        self._add_table_resources(out, table)
        out.size = table.size or 1024  # p4c: a zero size means the default size
        if table.idle_timeout:
            out.idle_timeout_behavior = p4info_pb2.Table.NOTIFY_CONTROL
        out.is_const_table = table.is_const_table
        has_entries = table.has_initial_entries
        out.has_initial_entries = table.is_const_table if has_entries is None else has_entries
        self.touched_type_info = True

    def _add_match_fields(self, out: p4info_pb2.Table, table: CPTable) -> None:
        # Selector keys take an id slot (p4c allocates ids over all key elements) but are
        # not control-plane match fields.
        ids = _allocate_field_ids(
            [_field_explicit_id(m.annotations) for m in table.match_fields], table.name
        )
        for match, match_id in zip(table.match_fields, ids, strict=True):
            if match.match_type != "selector":
                self._add_match_field(out.match_fields.add(), match, match_id)

    def _add_match_field(
        self, out: p4info_pb2.MatchField, match: CPMatchField, id_: int, in_value_set=False
    ) -> None:
        out.id = id_
        if match.name:  # a bit<W> value set has one anonymous field
            out.name = match.name
        _add_annotations(out, match.annotations, skip={"match"} if in_value_set else ())
        _add_documentation(out, match.annotations)
        if in_value_set:
            out.bitwidth = match.bitwidth
        else:
            out.bitwidth = self.types.width(match.bitwidth, match.type_name)
        if match.match_type in _MATCH_TYPES:
            out.match_type = _MATCH_TYPES[match.match_type]
        else:  # an architecture-specific match kind
            out.other_match_type = match.match_type
        if not in_value_set:
            self._set_type_name(out, match.type_name)

    def _add_action_ref(self, out, action: str, scope: str, annotations: Annotations) -> None:
        out.id = self.symbols.id_of(ACTION, action)
        _add_annotations(out, annotations)
        # p4c derives the scope from the annotations on the reference.
        table_only, default_only = _has(annotations, "tableonly"), _has(annotations, "defaultonly")
        if table_only and default_only:
            raise _internal(f"action reference '{action}' is both @tableonly and @defaultonly")
        if table_only:
            scope = "TABLE_ONLY"
        elif default_only:
            scope = "DEFAULT_ONLY"
        out.scope = _SCOPES[scope]

    def _set_initial_default_action(self, out, table: CPTable, action_name: str) -> None:
        out.action_id = self.symbols.id_of(ACTION, action_name)
        action = self.actions.get(action_name)
        if action is None:
            raise _internal(f"table '{table.name}': default action '{action_name}' is unknown")
        param_ids = self.action_param_ids[action_name]
        if len(table.default_action_args) > len(action.params):
            raise _internal(f"table '{table.name}': too many default action arguments")
        for value, param, param_id in zip(
            table.default_action_args, action.params, param_ids, strict=False
        ):
            width = self.types.width(param.bitwidth, param.type_name)
            out.arguments.add(param_id=param_id, value=_bytes_of(value, width))

    def _add_table_resources(self, out: p4info_pb2.Table, table: CPTable) -> None:
        if table.implementation:
            out.implementation_id = self.symbols.id_of(ACTION_PROFILE, table.implementation)
        if table.direct_counter:
            out.direct_resource_ids.append(self.symbols.id_of(DIRECT_COUNTER, table.direct_counter))
        if table.direct_meter:
            out.direct_resource_ids.append(self.symbols.id_of(DIRECT_METER, table.direct_meter))

    # -- externs -----------------------------------------------------------------------------

    def add_externs(self) -> None:
        for profile in self.model.action_profiles:
            self._add_action_profile(profile)
        for counter in self.model.counters:
            self._add_counter(counter)
        for meter in self.model.meters:
            self._add_meter(meter)
        for register in self.model.registers:
            self._add_register(register)
        if self.model.action_profiles or self.model.counters or self.model.meters:
            self.touched_type_info = True
        if self.model.registers or self.model.digests:
            self.touched_type_info = True

    def _profile_tables(self, profile: CPActionProfile) -> list[str]:
        # p4c keeps the referencing tables in a std::set, i.e. sorted by name.
        names = set(profile.table_names)
        names.update(t.name for t in self.model.tables if t.implementation == profile.name)
        return sorted(names, key=str.encode)

    def _add_action_profile(self, profile: CPActionProfile) -> None:
        out = self.p4info.action_profiles.add()
        self.preamble(
            out.preamble, ACTION_PROFILE, profile.name, profile.annotations, _PROFILE_ANNOTATIONS
        )
        out.table_ids.extend(self.symbols.id_of(TABLE, t) for t in self._profile_tables(profile))
        out.with_selector = profile.with_selector
        out.size = profile.size
        if profile.with_selector:  # p4c ignores (with a warning) these without a selector
            self._set_selector_fields(out, profile)

    @staticmethod
    def _set_selector_fields(out: p4info_pb2.ActionProfile, profile: CPActionProfile) -> None:
        group = _find(profile.annotations, "max_group_size")
        out.max_group_size = profile.max_group_size or (_int_literal(group.inner) if group else 0)
        semantics = _find(profile.annotations, "selector_size_semantics")
        kind = _string_literal(semantics.inner).lower() if semantics else "sum_of_weights"
        if kind == "sum_of_members":
            out.sum_of_members.SetInParent()
            weight = _find(profile.annotations, "max_member_weight")
            if weight:
                out.sum_of_members.max_member_weight = _int_literal(weight.inner)
        else:
            out.sum_of_weights.SetInParent()

    def _add_counter(self, counter: CPCounter) -> None:
        if counter.direct_table:
            out = self.p4info.direct_counters.add()
            kind = DIRECT_COUNTER
            out.direct_table_id = self.symbols.id_of(TABLE, counter.direct_table)
        else:
            out = self.p4info.counters.add()
            kind = COUNTER
            out.size = counter.size
            self._set_index_type(out, counter.index_type_name)
        self.preamble(out.preamble, kind, counter.name, counter.annotations)
        out.spec.unit = _COUNTER_UNITS[counter.unit.upper()]

    def _add_meter(self, meter: CPMeter) -> None:
        if meter.direct_table:
            out = self.p4info.direct_meters.add()
            kind = DIRECT_METER
            out.direct_table_id = self.symbols.id_of(TABLE, meter.direct_table)
        else:
            out = self.p4info.meters.add()
            kind = METER
            out.size = meter.size
            self._set_index_type(out, meter.index_type_name)
        self.preamble(out.preamble, kind, meter.name, meter.annotations)
        out.spec.unit = _METER_UNITS[meter.unit.upper()]

    def _set_index_type(self, out, index_type_name: str | None) -> None:
        # Only a user `type` index is named (v1model with V1MODEL_VERSION >= 20200408).
        if index_type_name and self.types.new_type(index_type_name):
            out.index_type_name.name = index_type_name
            self.types.register_use(index_type_name)

    def _add_register(self, register: CPRegister) -> None:
        out = self.p4info.registers.add()
        self.preamble(out.preamble, REGISTER, register.name, register.annotations)
        if register.type_name:
            self.types.spec_for_named(register.type_name, out.type_spec)
        else:
            _bitstring(register.bitwidth, register.signed, out.type_spec.bitstring)
        out.size = register.size
        self._set_index_type(out, register.index_type_name)

    # -- digests, packet I/O headers, value sets --------------------------------------------------

    def add_digests(self) -> None:
        seen: set[int] = set()
        for digest in self.model.digests:
            digest_id = self.symbols.id_of(DIGEST, digest.name)
            if digest_id not in seen:  # one entry per data type, however many calls
                seen.add(digest_id)
                self._add_digest(digest, digest_id)

    def _add_digest(self, digest: CPDigest, digest_id: int) -> None:
        out = self.p4info.digests.add()
        # v1model digests carry no annotations: p4c serializes them from the call, not a
        # declaration.
        _set_preamble(out.preamble, digest_id, digest.name, self.symbols.alias(digest.name), [])
        if digest.data_type is not None:
            self.types.spec_for_data(digest.data_type, out.type_spec)
            return
        out.type_spec.struct.name = digest.type_name
        if digest.fields or not self.types.known_struct(digest.type_name):
            self.types.add_struct(CPStruct(digest.type_name, digest.fields))
        else:  # described in the model's struct registry instead
            self.types.register_use(digest.type_name)

    def add_controller_headers(self) -> None:
        for header in self.model.controller_headers:
            if not _is_hidden(header.annotations):
                self._add_controller_header(header)

    def _add_controller_header(self, header: CPControllerHeader) -> None:
        out = self.p4info.controller_packet_metadata.add()
        header_id = self.symbols.id_of(CONTROLLER_HEADER, header.type_name)
        # The preamble uses the @controller_header string as both name and alias.
        _set_preamble(out.preamble, header_id, header.name, header.name, header.annotations)
        ids = _allocate_field_ids(
            [_field_explicit_id(f.annotations) for f in header.fields], header.type_name
        )
        for f, field_id in zip(header.fields, ids, strict=True):
            if _is_hidden(f.annotations):
                continue
            metadata = out.metadata.add(id=field_id, name=f.name)
            _add_annotations(metadata, f.annotations)
            metadata.bitwidth = self.types.width(f.bitwidth, f.type_name)
            self._set_type_name(metadata, f.type_name)
            self.touched_type_info = True

    def add_value_sets(self) -> None:
        for value_set in self.model.value_sets:
            self._add_value_set(value_set)

    def _add_value_set(self, value_set: CPValueSet) -> None:
        out = self.p4info.value_sets.add()
        self.preamble(out.preamble, VALUE_SET, value_set.name, value_set.annotations)
        ids = _allocate_field_ids(
            [_field_explicit_id(m.annotations) for m in value_set.match_fields], value_set.name
        )
        for match, match_id in zip(value_set.match_fields, ids, strict=True):
            # p4c describes value-set fields by width only (no type_name, no type_info) and
            # leaves their @match annotation out.
            self._add_match_field(out.match.add(), match, match_id, in_value_set=True)
        out.size = value_set.size

    # -- the whole message -----------------------------------------------------------------------

    def build(self) -> p4info_pb2.P4Info:
        self.add_pkg_info()
        self.add_actions()
        self.add_tables()
        self.add_externs()
        self.add_digests()
        self.add_controller_headers()
        self.add_value_sets()
        if self.touched_type_info or self.model.touches_type_info:
            self.p4info.type_info.SetInParent()  # p4c prints an empty `type_info {}` then
        return self.p4info


def build_p4info(model: ControlPlaneModel) -> p4info_pb2.P4Info:
    """The P4Info p4c would produce for the program the model describes."""
    return _Builder(model, collect_symbols(model)).build()


def p4info_to_text(p4info: p4info_pb2.P4Info) -> str:
    """Text format with p4c's two header comments, as in ``--p4runtime-files x.p4info.txtpb``."""
    return TXTPB_HEADER + text_format.MessageToString(p4info)


__all__: Sequence[str] = (
    "SymbolTable",
    "build_p4info",
    "collect_symbols",
    "jenkins_one_at_a_time",
    "p4info_to_text",
)
