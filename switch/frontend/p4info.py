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

The work is split by concern: ``p4info_ids.py`` (ids, aliases, field ids),
``p4info_annotations.py``, ``p4info_types.py`` (type specs and ``type_info``) and one builder
mixin per part of the message (``p4info_tables.py``, ``p4info_externs.py``,
``p4info_digests.py``), assembled here into the builder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from google.protobuf import text_format

from p4reduce.proto import p4info_pb2

from .cpmodel import Annotations, ControlPlaneModel, CPAction
from .p4info_annotations import (
    ParsedAnnotation,
    add_annotations,
    add_documentation,
    parsed_annotations,
    set_preamble,
    split_top_level,
    string_literal,
)
from .p4info_digests import DigestsMixin
from .p4info_externs import ExternsMixin
from .p4info_ids import (
    ACTION,
    ACTION_PROFILE,
    CONTROLLER_HEADER,
    COUNTER,
    DIGEST,
    DIRECT_COUNTER,
    DIRECT_METER,
    METER,
    REGISTER,
    TABLE,
    VALUE_SET,
    SymbolTable,
    collect_symbols,
    jenkins_one_at_a_time,
)
from .p4info_tables import TablesMixin
from .p4info_types import TypeInfo

# p4c's .txtpb files start with these two comment lines (text_format.Parse skips them).
TXTPB_HEADER = "# proto-file: p4/config/v1/p4info.proto\n# proto-message: p4.config.v1.P4Info\n\n"


@dataclass
class _Builder(TablesMixin, ExternsMixin, DigestsMixin):
    """The P4Info of one model: the message and what its parts share (ids, ``type_info``,
    parameter ids); each part of the message is filled by one mixin (p4info_*.py)."""

    model: ControlPlaneModel
    symbols: SymbolTable
    p4info: p4info_pb2.P4Info = field(default_factory=p4info_pb2.P4Info)
    types: TypeInfo = field(init=False)
    actions: dict[str, CPAction] = field(init=False)
    # Parameter ids per action, needed again for initial_default_action arguments.
    action_param_ids: dict[str, list[int]] = field(default_factory=dict)
    # Whether p4c would have created type_info (see ControlPlaneModel.touches_type_info).
    touched_type_info: bool = False

    def __post_init__(self) -> None:
        self.types = TypeInfo(self.model, self.p4info)
        self.actions = {a.name: a for a in self.model.actions}

    def preamble(
        self, out: p4info_pb2.Preamble, kind: int, name: str, annotations: Annotations, skip=()
    ) -> None:
        """The usual preamble: the symbol's id and alias, its annotations and doc."""
        alias = self.symbols.alias(name)
        set_preamble(out, self.symbols.id_of(kind, name), name, alias, annotations, skip)

    def _set_type_name(self, out, type_name: str | None) -> None:
        shown = self.types.emitted_type_name(type_name)
        if shown:
            out.type_name.name = shown
        self.types.register_use(type_name)

    # -- pkg_info ----------------------------------------------------------------------------

    def add_pkg_info(self) -> None:
        pkg = self.p4info.pkg_info
        pkg.arch = self.model.arch
        for anno in parsed_annotations(self.model.pkg_annotations):
            if anno.name == "pkginfo":
                self._apply_pkginfo(pkg, anno)
        add_annotations(pkg, self.model.pkg_annotations, skip={"pkginfo"})
        add_documentation(pkg, self.model.pkg_annotations)

    @staticmethod
    def _apply_pkginfo(pkg: p4info_pb2.PkgInfo, anno: ParsedAnnotation) -> None:
        # @pkginfo(name="...", version="...") sets PkgInfo's string fields (arch included,
        # which p4c allows with a warning).
        for item in split_top_level(anno.inner):
            key, _, value = item.partition("=")
            key = key.strip()
            if key in ("name", "version", "organization", "contact", "url", "arch"):
                setattr(pkg, key, string_literal(value))

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
    "ACTION",
    "ACTION_PROFILE",
    "CONTROLLER_HEADER",
    "COUNTER",
    "DIGEST",
    "DIRECT_COUNTER",
    "DIRECT_METER",
    "METER",
    "REGISTER",
    "TABLE",
    "TXTPB_HEADER",
    "VALUE_SET",
    "SymbolTable",
    "build_p4info",
    "collect_symbols",
    "jenkins_one_at_a_time",
    "p4info_to_text",
)
