"""User types in P4Info: type specs of fields, parameters and digests, and ``type_info``,
which holds only the user types the message refers to.
"""

from __future__ import annotations

from p4reduce.proto import p4info_pb2, p4types_pb2

from .cpmodel import ControlPlaneModel, CPDataType, CPEnum, CPNewType, CPStruct, CPTypeSpecField
from .p4info_ids import internal_error


class TypeInfo:
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
            raise internal_error(f"P4Info type '{type_name}' is not described in the model")
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
            bitstring(f.bitwidth, f.signed, out.bitstring)

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
            bitstring(data.bitwidth, data.signed, out.bitstring)
        else:
            raise internal_error(f"P4Info data type '{data.kind}' is unknown")

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
            raise internal_error(f"P4Info type '{name}' is not described in the model")

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
                bitstring(f.bitwidth, f.signed, member.type_spec)

    def _add_new_type(self, new_type: CPNewType) -> None:
        if new_type.name in self._info.new_types:
            return
        spec = self._info.new_types[new_type.name]
        if new_type.translation_uri is None and new_type.boolean:
            spec.original_type.bool.SetInParent()
            return
        if new_type.translation_uri is None:
            bitstring(new_type.bitwidth, new_type.signed, spec.original_type.bitstring)
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
            spec.members.add(name=m.name, value=bytes_of(m.value or 0, enum.bitwidth))

    def _add_error(self) -> None:
        if not self._info.HasField("error"):
            self._info.error.SetInParent()
            self._info.error.members.extend(self._model.errors)


def bitstring(bitwidth: int, signed: bool, out) -> None:
    """Fill a P4BitstringLikeTypeSpec."""
    if signed:
        out.int.bitwidth = bitwidth
    else:
        out.bit.bitwidth = bitwidth


def bytes_of(value: int, bitwidth: int) -> bytes:
    """p4c's padded byte string: big-endian on ceil(W/8) bytes, two's complement for negatives."""
    size = max(1, (bitwidth + 7) // 8)
    return (value % (1 << max(bitwidth, 1))).to_bytes(size, "big")
