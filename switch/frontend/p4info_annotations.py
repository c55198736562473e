"""Annotations in P4Info: copied as written (structured ones constant-folded), except
``@name``, ``@id``, ``@brief`` and ``@description`` (the last two become ``doc``); and the
literal values P4Info reads from annotations (``@id``, ``@pkginfo``, selector sizes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from p4reduce.proto import p4info_pb2, p4types_pb2

from .annoexpr import fold_annotation_expression
from .cpmodel import Annotations
from .p4info_ids import internal_error

# Annotations that P4Info represents elsewhere, never as annotation strings.
_ALWAYS_SKIPPED = frozenset({"name", "id", "brief", "description"})


@dataclass(frozen=True)
class ParsedAnnotation:
    name: str
    body: str  # text after the name: "", "(...)" or "[...]"

    @property
    def is_structured(self) -> bool:
        return self.body.startswith("[")

    @property
    def inner(self) -> str:
        return self.body[1:-1].strip() if self.body else ""


def _parse_annotation(text: str) -> ParsedAnnotation:
    text = text.strip().removeprefix("@")
    end = 0
    while end < len(text) and (text[end].isalnum() or text[end] == "_"):
        end += 1
    return ParsedAnnotation(text[:end], text[end:].strip())


def parsed_annotations(annotations: Annotations) -> list[ParsedAnnotation]:
    return [_parse_annotation(a) for a in annotations]


def find_annotation(annotations: Annotations, name: str) -> ParsedAnnotation | None:
    return next((a for a in parsed_annotations(annotations) if a.name == name), None)


def has_annotation(annotations: Annotations, name: str) -> bool:
    return find_annotation(annotations, name) is not None


def is_hidden(annotations: Annotations) -> bool:
    return has_annotation(annotations, "hidden")


def string_literal(text: str) -> str:
    """The value of a P4 string literal ("..." with C escapes)."""
    text = text.strip()
    if len(text) < 2 or text[0] != '"' or text[-1] != '"':
        raise internal_error(f"expected a string literal, got {text!r}")
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


def int_literal(text: str) -> int:
    """A P4 integer literal without width prefix (decimal, 0x, 0o, 0b; '_' allowed)."""
    return int(text.strip().replace("_", ""), 0)


def field_explicit_id(annotations: Annotations) -> int | None:
    anno = find_annotation(annotations, "id")
    return int_literal(anno.inner) if anno else None


def split_top_level(text: str, separator: str = ",") -> list[str]:
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


def _structured(anno: ParsedAnnotation, out: p4types_pb2.StructuredAnnotation) -> None:
    """`@name[...]`: an expression list or a key=value list of literals."""
    out.name = anno.name
    items = split_top_level(anno.inner)
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


def add_annotations(
    message, annotations: Annotations, skip: Iterable[str] = (), structured: bool = True
) -> None:
    """Copy annotations to message.annotations (and structured_annotations) the way p4c does."""
    skipped = _ALWAYS_SKIPPED | frozenset(skip)
    for text, anno in zip(annotations, parsed_annotations(annotations), strict=True):
        if anno.name in skipped:
            continue
        if anno.is_structured and structured:
            _structured(anno, message.structured_annotations.add())
        else:
            message.annotations.append("@" + text.strip().removeprefix("@"))


def add_documentation(message, annotations: Annotations) -> None:
    """@brief/@description become the `doc` field, set only when one is present."""
    for anno in parsed_annotations(annotations):
        if anno.name == "brief":
            message.doc.brief = string_literal(anno.inner)
        elif anno.name == "description":
            message.doc.description = string_literal(anno.inner)


def set_preamble(
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
    add_annotations(preamble, annotations, skip)
    add_documentation(preamble, annotations)
