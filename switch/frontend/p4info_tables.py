"""Actions and tables in P4Info: parameters, match fields, action references, default actions
and the tables' implementation and direct resources.
"""

from __future__ import annotations

from p4reduce.proto import p4info_pb2

from .cpmodel import Annotations, CPAction, CPMatchField, CPParam, CPTable
from .p4info_annotations import (
    add_annotations,
    add_documentation,
    field_explicit_id,
    has_annotation,
    is_hidden,
)
from .p4info_ids import (
    ACTION,
    ACTION_PROFILE,
    DIRECT_COUNTER,
    DIRECT_METER,
    TABLE,
    allocate_field_ids,
    internal_error,
)
from .p4info_types import bytes_of

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


class TablesMixin:
    """Builder methods for actions and tables (mixed into p4info._Builder)."""

    # -- actions -----------------------------------------------------------------------------

    def add_actions(self) -> None:
        seen: set[int] = set()
        for action in self.model.actions:
            self.action_param_ids[action.name] = allocate_field_ids(
                [field_explicit_id(p.annotations) for p in action.params], action.name
            )
            action_id = self.symbols.id_of(ACTION, action.name)
            # p4c deduplicates actions by id (a global action is inlined in every control).
            if is_hidden(action.annotations) or action_id in seen:
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
        add_annotations(out, param.annotations)
        add_documentation(out, param.annotations)
        enum = self.types.enum(param.type_name)
        if not (enum and not enum.bitwidth):  # plain enums have no width
            out.bitwidth = self.types.width(param.bitwidth, param.type_name)
        self._set_type_name(out, param.type_name)
        self.touched_type_info = True

    # -- tables ------------------------------------------------------------------------------

    def add_tables(self) -> None:
        for table in self.model.tables:
            if not is_hidden(table.annotations):
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
        ids = allocate_field_ids(
            [field_explicit_id(m.annotations) for m in table.match_fields], table.name
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
        add_annotations(out, match.annotations, skip={"match"} if in_value_set else ())
        add_documentation(out, match.annotations)
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
        add_annotations(out, annotations)
        # p4c derives the scope from the annotations on the reference.
        table_only, default_only = (
            has_annotation(annotations, "tableonly"),
            has_annotation(annotations, "defaultonly"),
        )
        if table_only and default_only:
            raise internal_error(f"action reference '{action}' is both @tableonly and @defaultonly")
        if table_only:
            scope = "TABLE_ONLY"
        elif default_only:
            scope = "DEFAULT_ONLY"
        out.scope = _SCOPES[scope]

    def _set_initial_default_action(self, out, table: CPTable, action_name: str) -> None:
        out.action_id = self.symbols.id_of(ACTION, action_name)
        action = self.actions.get(action_name)
        if action is None:
            raise internal_error(f"table '{table.name}': default action '{action_name}' is unknown")
        param_ids = self.action_param_ids[action_name]
        if len(table.default_action_args) > len(action.params):
            raise internal_error(f"table '{table.name}': too many default action arguments")
        for value, param, param_id in zip(
            table.default_action_args, action.params, param_ids, strict=False
        ):
            width = self.types.width(param.bitwidth, param.type_name)
            out.arguments.add(param_id=param_id, value=bytes_of(value, width))

    def _add_table_resources(self, out: p4info_pb2.Table, table: CPTable) -> None:
        if table.implementation:
            out.implementation_id = self.symbols.id_of(ACTION_PROFILE, table.implementation)
        if table.direct_counter:
            out.direct_resource_ids.append(self.symbols.id_of(DIRECT_COUNTER, table.direct_counter))
        if table.direct_meter:
            out.direct_resource_ids.append(self.symbols.id_of(DIRECT_METER, table.direct_meter))
