"""The types P4Info describes: digests (their data types), user types for ``type_info``
(``type``s, enums, structs, headers) and controller headers' packet metadata."""

from __future__ import annotations

from . import ast as A
from . import types as T
from .cpbuild_names import annotation_texts, qualify
from .cpmodel import (
    CPControllerHeader,
    CPDataType,
    CPDigest,
    CPEnum,
    CPEnumMember,
    CPHeaderField,
    CPNewType,
    CPStruct,
    CPTypeSpecField,
)
from .digests import assign_digest_names
from .errors import CompileError


class TypesMixin:
    """ModelBuilder methods for digests, user types and controller headers (mixed into
    cpbuild.ModelBuilder)."""

    def digests(self) -> None:
        """One P4Info digest per control-plane name, in p4c's order (digests.py)."""
        for site in assign_digest_names(self.checked):
            if any(dg.name == site.name for dg in self.model.digests):
                continue
            self.model.touches_type_info = True
            t = site.type
            if isinstance(t, T.StructT) and t.kind == "struct":
                self.model.digests.append(
                    CPDigest(site.name, self.user_type(t), self.type_fields(t))
                )
            else:
                digest = CPDigest(site.name, str(t), data_type=self.data_type(t, site.call))
                self.model.digests.append(digest)

    def data_type(self, t: T.Type, call: A.Call) -> CPDataType:
        """The P4DataTypeSpec of a digest's data type (p4c's TypeSpecConverter)."""
        if isinstance(t, (T.NewType, T.EnumT)) or (
            isinstance(t, T.StructT) and t.kind in ("struct", "header") and not t.anonymous
        ):
            return CPDataType("named", type_name=self.user_type(t))
        if isinstance(t, T.Bits):
            return CPDataType("bits", t.width, t.signed)
        if t is T.BOOL:
            return CPDataType("bool")
        if t is T.ERROR:
            return CPDataType("error")
        if isinstance(t, T.Varbit):
            return CPDataType("varbit", t.width)
        if isinstance(t, T.TupleT):
            return CPDataType("tuple", members=[self.data_type(e, call) for e in t.elems])
        raise CompileError(
            call.pos,
            f"digest of a value of type {t}: this switch sends digests of bit<W>, int<W>, "
            "bool, varbit, error, enums, `type`s, structs, headers and tuples of those",
        )

    def type_fields(self, t: T.StructT) -> list[CPTypeSpecField]:
        out = []
        for fname, ft in t.fields.items():
            b = T.strip_newtype(ft)
            f = CPTypeSpecField(fname, T.width_of(b) or 0, isinstance(b, T.Bits) and b.signed)
            if b is T.BOOL:
                f.kind = "bool"
            elif b is T.ERROR:
                f.kind = "error"
            elif isinstance(b, T.Varbit):
                f.kind = "varbit"
            if isinstance(ft, (T.NewType, T.EnumT, T.StructT)):
                f.type_name = self.user_type(ft)
            out.append(f)
        return out

    def user_type(self, t: T.Type) -> str:
        """Register a user type for type_info and return its name."""
        name = str(t)
        if name in self.seen_types:
            return name
        self.seen_types.add(name)
        if isinstance(t, T.NewType):
            base = T.strip_newtype(t)
            nt = CPNewType(t.name, T.width_of(base) or 0, isinstance(base, T.Bits) and base.signed,
                           base == T.BOOL)  # fmt: skip
            for a in t.decl.annotations if t.decl else []:
                if a.name == "p4runtime_translation" and a.args:
                    if isinstance(a.args[0], A.StringLit):
                        nt.translation_uri = a.args[0].value
                    if len(a.args) > 1:
                        if isinstance(a.args[1], A.IntLit):
                            nt.translation_bitwidth = a.args[1].value
                        elif isinstance(a.args[1], A.TypeExpr):
                            nt.translation_string = True
            self.model.new_types.append(nt)
        elif isinstance(t, T.EnumT):
            members = [CPEnumMember(m, t.values.get(m)) for m in t.members]
            self.model.enums.append(
                CPEnum(
                    t.name,
                    members,
                    t.underlying.width if t.underlying else 0,
                    bool(t.underlying and t.underlying.signed),
                )
            )
        elif isinstance(t, T.StructT):
            self.model.structs.append(CPStruct(t.name, self.type_fields(t), t.kind == "header"))
        return name

    def controller_header(self, d: A.StructLike) -> None:
        for a in d.annotations:
            if a.name == "controller_header" and a.args and isinstance(a.args[0], A.StringLit):
                st = self.checked.scope.names[d.name].type
                self.model.controller_headers.append(
                    CPControllerHeader(
                        a.args[0].value,
                        # p4c knows the header by its type's control-plane name (@name wins)
                        qualify("", d),
                        self.controller_fields(d, st),
                        annotation_texts(d.annotations),
                        self.explicit_id(d.annotations, 0x04),
                    )
                )

    def controller_fields(self, d: A.StructLike, st: T.StructT) -> list[CPHeaderField]:
        """The packet-metadata fields of a controller header, as p4c's FlattenHeader gives them.

        A header with a struct-typed field is flattened: every leaf becomes a field named by
        its dotted path (``s.f``; the path replaces any ``@name``), carrying the annotations
        of the fields above it, the innermost one winning for a repeated annotation name.
        Without a struct field the fields are the header's own, named by their ``@name``.
        """
        flatten = any(
            isinstance(ft, T.StructT) and ft.kind == "struct" for ft in st.fields.values()
        )
        out: list[CPHeaderField] = []

        def leaf(fdecl: A.FieldDecl, ft: T.Type, name: str, annos: list[A.Annotation]) -> None:
            if not isinstance(ft, (T.Bits, T.NewType)) and not (
                isinstance(ft, T.EnumT) and ft.underlying is not None
            ):
                raise CompileError(
                    fdecl.pos,
                    f"controller header {d.name}: field {name} has type {ft}, which is not "
                    "bit<>, int<>, type, or serializable enum (P4Runtime packet metadata)",
                )
            hf = CPHeaderField(
                name, T.width_of(ft) or 0, annotation_texts([x for x in annos if x.name != "name"])
            )
            if isinstance(ft, (T.NewType, T.EnumT)):
                hf.type_name = self.user_type(ft)
            out.append(hf)

        def visit(t: T.StructT, decl: A.StructLike, path: list[str], stack: list) -> None:
            for fdecl, (fname, ft) in zip(decl.fields, t.fields.items(), strict=True):
                if isinstance(ft, T.StructT) and ft.decl is not None:
                    visit(ft, ft.decl, [*path, fname], [*stack, fdecl.annotations])
                    continue
                merged: list[A.Annotation] = []
                for annos in reversed([*stack, fdecl.annotations]):
                    for x in annos:
                        if all(m.name != x.name for m in merged):
                            merged.append(x)
                leaf(fdecl, ft, ".".join([*path, fname]), merged)

        if flatten:
            visit(st, d, [], [])
        else:
            for fdecl, ft in zip(d.fields, st.fields.values(), strict=True):
                leaf(fdecl, ft, qualify("", fdecl), fdecl.annotations)
        return out
