"""Digests, controller packet metadata (packet-in/out headers) and value sets in P4Info."""

from __future__ import annotations

from .cpmodel import CPControllerHeader, CPDigest, CPStruct, CPValueSet
from .p4info_annotations import add_annotations, field_explicit_id, is_hidden, set_preamble
from .p4info_ids import CONTROLLER_HEADER, DIGEST, VALUE_SET, allocate_field_ids


class DigestsMixin:
    """Builder methods for digests, packet metadata and value sets (mixed into p4info._Builder)."""

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
        set_preamble(out.preamble, digest_id, digest.name, self.symbols.alias(digest.name), [])
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
            if not is_hidden(header.annotations):
                self._add_controller_header(header)

    def _add_controller_header(self, header: CPControllerHeader) -> None:
        out = self.p4info.controller_packet_metadata.add()
        header_id = self.symbols.id_of(CONTROLLER_HEADER, header.type_name)
        # The preamble uses the @controller_header string as both name and alias.
        set_preamble(out.preamble, header_id, header.name, header.name, header.annotations)
        ids = allocate_field_ids(
            [field_explicit_id(f.annotations) for f in header.fields], header.type_name
        )
        for f, field_id in zip(header.fields, ids, strict=True):
            if is_hidden(f.annotations):
                continue
            metadata = out.metadata.add(id=field_id, name=f.name)
            add_annotations(metadata, f.annotations)
            metadata.bitwidth = self.types.width(f.bitwidth, f.type_name)
            self._set_type_name(metadata, f.type_name)
            self.touched_type_info = True

    def add_value_sets(self) -> None:
        for value_set in self.model.value_sets:
            self._add_value_set(value_set)

    def _add_value_set(self, value_set: CPValueSet) -> None:
        out = self.p4info.value_sets.add()
        self.preamble(out.preamble, VALUE_SET, value_set.name, value_set.annotations)
        ids = allocate_field_ids(
            [field_explicit_id(m.annotations) for m in value_set.match_fields], value_set.name
        )
        for match, match_id in zip(value_set.match_fields, ids, strict=True):
            # p4c describes value-set fields by width only (no type_name, no type_info) and
            # leaves their @match annotation out.
            self._add_match_field(out.match.add(), match, match_id, in_value_set=True)
        out.size = value_set.size
