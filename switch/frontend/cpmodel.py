"""The control-plane model: what a checked program exposes to a controller.

The semantic passes fill it in (names already fully qualified the way p4c's front end names
them, ``@name`` honoured); ``p4info.py`` turns it into P4Info with p4c's ids. Keeping this
model separate lets P4Info generation be tested without the rest of the compiler.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Annotations are kept as source text without the leading '@', e.g. 'name("x")', 'id(5)'.
Annotations = list[str]


@dataclass
class CPParam:
    name: str
    bitwidth: int
    annotations: Annotations = field(default_factory=list)
    type_name: str | None = None  # set for `type`-declared (user) types, e.g. P4Runtime translation
    # (also set to the enum's name for a serializable-enum parameter: p4info.py then emits no
    # type_name, as p4c does, but adds the enum to type_info; see ControlPlaneModel registries)


@dataclass
class CPAction:
    name: str  # control-plane name, e.g. "ingress.set_port" or "NoAction"
    params: list[CPParam] = field(default_factory=list)
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None  # from @id, already validated


@dataclass
class CPMatchField:
    name: str  # p4c's key name: @name, else the key expression as written ("hdr.ipv4.dstAddr")
    bitwidth: int
    match_type: str  # exact | lpm | ternary | range | optional | selector (selector is not emitted)
    annotations: Annotations = field(default_factory=list)
    # Added for P4Info: the key's user type (`type` or serializable enum), as for CPParam.
    type_name: str | None = None


@dataclass
class CPActionRef:
    action: str  # control-plane name of the action
    scope: str = "TABLE_AND_DEFAULT"  # or TABLE_ONLY / DEFAULT_ONLY
    annotations: Annotations = field(default_factory=list)


@dataclass
class CPTable:
    name: str
    match_fields: list[CPMatchField] = field(default_factory=list)
    actions: list[CPActionRef] = field(default_factory=list)
    size: int = 1024
    const_default_action: str | None = None  # action name when default_action is `const`
    # default action name and its const arguments, for initial_default_action (P4Runtime 1.4)
    default_action: str | None = None
    is_const_table: bool = False  # `const entries` present
    implementation: str | None = None  # action profile/selector control-plane name
    direct_counter: str | None = None
    direct_meter: str | None = None
    idle_timeout: bool = False
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None
    # Added for P4Info: the default action's arguments (constant values, in parameter order)
    # for initial_default_action; negative values are taken modulo 2^bitwidth.
    default_action_args: list[int] = field(default_factory=list)
    # Added for P4Info: `entries` (const or not) with at least one entry; None means "the same
    # as is_const_table" (an empty `const entries = {}` is the only case that differs).
    has_initial_entries: bool | None = None


@dataclass
class CPCounter:
    name: str
    unit: str  # BYTES | PACKETS | BOTH
    size: int = 0
    direct_table: str | None = None  # set for direct counters
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None
    index_type_name: str | None = None


@dataclass
class CPMeter:
    name: str
    unit: str  # BYTES | PACKETS
    size: int = 0
    direct_table: str | None = None
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None
    index_type_name: str | None = None


@dataclass
class CPRegister:
    name: str
    bitwidth: int  # of the element type (bit<W>/int<W>)
    signed: bool = False
    size: int = 0
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None
    # Added for P4Info: a user-named element type (struct, header, `type`, enum); when set it
    # replaces the bit<W>/int<W> spec, and the type goes to type_info.
    type_name: str | None = None
    # Added for P4Info: the index type's name when it is a user `type` (V1MODEL_VERSION >= 20200408).
    index_type_name: str | None = None
    # Registers of struct/other types are expressed by p4c through type_info; we emit
    # bitstring specs only and the passes reject what cannot be described.


@dataclass
class CPActionProfile:
    name: str
    table_names: list[str] = field(default_factory=list)
    with_selector: bool = False
    size: int = 0
    max_group_size: int = 0
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None


@dataclass
class CPHeaderField:
    name: str
    bitwidth: int
    annotations: Annotations = field(default_factory=list)
    type_name: str | None = None  # added for P4Info: user type of the field, as for CPParam


@dataclass
class CPControllerHeader:
    name: str  # preamble name: the @controller_header("...") argument
    type_name: str  # the header type's name; this is what p4c hashes for the id
    fields: list[CPHeaderField] = field(default_factory=list)
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None


@dataclass
class CPTypeSpecField:
    """A field of a struct/header used as a digest or value-set element (P4TypeInfo)."""

    name: str
    bitwidth: int
    signed: bool = False
    # Added for P4Info: a user-named type (struct, header, `type`, enum, serializable enum)
    # described in ControlPlaneModel's registries; it replaces the bit/int spec.
    type_name: str | None = None
    # Added for P4Info: "bits" (bit<W>/int<W>), "bool", "error" or "varbit" (W is the maximum).
    kind: str = "bits"


@dataclass
class CPNewType:
    """A `type` declaration (P4NewTypeSpec), added for P4Info's type_info.new_types."""

    name: str
    bitwidth: int = 0  # of the underlying bit<W>/int<W>
    signed: bool = False
    boolean: bool = False  # a `type bool T;` (P4Info's original_type is `bool`)
    translation_uri: str | None = None  # @p4runtime_translation("uri", ...)
    translation_bitwidth: int | None = None  # its second argument when it is an integer
    translation_string: bool = False  # its second argument is `string`


@dataclass
class CPEnumMember:
    name: str
    value: int | None = None  # set for serializable-enum members


@dataclass
class CPEnum:
    """An enum; serializable when bitwidth > 0 (added for P4Info's type_info)."""

    name: str
    members: list[CPEnumMember] = field(default_factory=list)
    bitwidth: int = 0
    signed: bool = False


@dataclass
class CPStruct:
    """A struct or header type used inside a digest/register type (added for type_info).

    For headers the fields are the flattened ones (nested struct fields named "s.f").
    """

    name: str
    fields: list[CPTypeSpecField] = field(default_factory=list)
    is_header: bool = False


@dataclass
class CPDataType:
    """A P4DataTypeSpec (added for digests of any type): ``kind`` is bits, bool, varbit
    (``bitwidth`` is the maximum), error, tuple (``members``) or named (``type_name``, a type
    of the model's registries: struct, header, enum, serializable enum or ``type``)."""

    kind: str
    bitwidth: int = 0
    signed: bool = False
    type_name: str | None = None
    members: list[CPDataType] = field(default_factory=list)


@dataclass
class CPDigest:
    name: str  # the control-plane name: T's name, or digest_N (p4c names and hashes by it)
    type_name: str
    fields: list[CPTypeSpecField] = field(default_factory=list)
    annotations: Annotations = field(default_factory=list)
    # Added for digests of any type: the data type's spec; when None, the digest is the
    # struct `type_name` with `fields`.
    data_type: CPDataType | None = None


@dataclass
class CPValueSet:
    name: str
    size: int
    match_fields: list[CPMatchField] = field(default_factory=list)
    annotations: Annotations = field(default_factory=list)
    explicit_id: int | None = None


@dataclass
class ControlPlaneModel:
    arch: str = "v1model"
    tables: list[CPTable] = field(default_factory=list)
    actions: list[CPAction] = field(default_factory=list)
    counters: list[CPCounter] = field(default_factory=list)
    meters: list[CPMeter] = field(default_factory=list)
    registers: list[CPRegister] = field(default_factory=list)
    action_profiles: list[CPActionProfile] = field(default_factory=list)
    controller_headers: list[CPControllerHeader] = field(default_factory=list)
    digests: list[CPDigest] = field(default_factory=list)
    value_sets: list[CPValueSet] = field(default_factory=list)
    # Added for P4Info. Registries of user types, looked up by the type_name fields above; only
    # the ones referenced end up in type_info, as with p4c.
    new_types: list[CPNewType] = field(default_factory=list)
    enums: list[CPEnum] = field(default_factory=list)
    structs: list[CPStruct] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # all error members, in declaration order
    # Annotations on the `main` package instance (@pkginfo(...), @brief, others).
    pkg_annotations: Annotations = field(default_factory=list)
    # p4c creates an (empty) type_info whenever it looks at a type: for every table, action
    # parameter, controller-header field, extern instance and extern *function call* in an
    # action or control body (mark_to_drop, hash, ...). Those calls are not in this model, so
    # the passes set this flag when there is one.
    touches_type_info: bool = False
