"""STF table-entry notation to the interpreter's match values (docs/stf.md, 'Semantics of the runner').

Names resolve exactly first, then by a unique dotted suffix (``setb1`` -> ``ingress.setb1``);
``hdr$0.f`` means ``hdr[0].f``. Values: decimal, ``0x`` hex or ``0b`` binary; a ``*`` digit
in hex/binary is a wildcard nibble/bit (ternary mask 0, LPM length = the fixed digits);
``v/len`` gives an LPM prefix length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ..interp.matches import Exact, Lpm, Match, Optional, Range, Ternary
from ..interp.tables import KeySpec


class TranslateError(Exception):
    """A name or value the runner cannot map onto the program."""


def resolve(given: str, names: Iterable[str], what: str) -> str:
    """The one name equal to ``given`` or ending in ``.given``."""
    names = list(names)
    given = normalize_name(given)
    if given in names:
        return given
    hits = [n for n in names if n.endswith("." + given)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise TranslateError(
            f"no {what} named {given!r} (known: {', '.join(sorted(names)) or 'none'})"
        )
    raise TranslateError(f"{what} name {given!r} is ambiguous: {', '.join(sorted(hits))}")


def normalize_name(name: str) -> str:
    """``hdr$0.f`` -> ``hdr[0].f``; ``h.$valid$`` stays as the key name p4c gives validity."""
    return re.sub(r"\$(\d+)", r"[\1]", name)


def key_index(given: str, keys: list[KeySpec]) -> int:
    given = normalize_name(given)
    for i, k in enumerate(keys):
        if k.name == given:
            return i
    hits = [
        i
        for i, k in enumerate(keys)
        if k.name.endswith("." + given)
        or given.endswith("." + k.name)
        or _strip_valid(k.name) == _strip_valid(given)
    ]
    if len(hits) == 1:
        return hits[0]
    known = ", ".join(k.name for k in keys) or "none"
    if not hits:
        raise TranslateError(f"no key named {given!r} (keys: {known})")
    raise TranslateError(f"key name {given!r} is ambiguous (keys: {known})")


def _strip_valid(name: str) -> str:
    for suffix in (".$valid$", ".isValid()", "$valid$"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def parse_int(text: str) -> int:
    t = text.strip().lower()
    try:
        if t.startswith("0x"):
            return int(t[2:], 16)
        if t.startswith("0b"):
            return int(t[2:], 2)
        return int(t, 10)
    except ValueError:
        raise TranslateError(f"bad number {text!r}") from None


def value_and_mask(text: str, width: int) -> tuple[int, int, int]:
    """(value, mask, fixed-bit count) of a possibly wildcarded number."""
    t = text.strip().lower()
    full = (1 << width) - 1
    if "*" not in t:
        return parse_int(t) & full, full, width
    if t.startswith("0x"):
        digits, base_bits = t[2:], 4
    elif t.startswith("0b"):
        digits, base_bits = t[2:], 1
    else:
        raise TranslateError(f"wildcard digits need a hex or binary value: {text!r}")
    value = mask = fixed = 0
    for d in digits:
        value <<= base_bits
        mask <<= base_bits
        if d == "*":
            continue
        value |= int(d, 16 if base_bits == 4 else 2)
        mask |= (1 << base_bits) - 1
        fixed += base_bits
    return value & full, mask & full, fixed


def translate_key(text: str, key: KeySpec) -> Match:
    kind, width = key.match_kind, key.width
    full = (1 << width) - 1
    if kind == "lpm":
        if "/" in text:
            value, plen = text.split("/", 1)
            v = parse_int(value) & full
            length = parse_int(plen)
            if length > width:
                raise TranslateError(
                    f"prefix length {length} is longer than key {key.name} ({width} bits)"
                )
            return Lpm(v & (((1 << length) - 1) << (width - length)), length)
        v, m, fixed = value_and_mask(text, width)
        if "*" in text:
            return Lpm(v, min(fixed, width))
        return Lpm(v, width)
    if "/" in text:
        raise TranslateError(f"{text!r}: a prefix length is only valid for an lpm key")
    v, m, _ = value_and_mask(text, width)
    if kind == "exact":
        if m != full:
            raise TranslateError(f"{text!r}: wildcards are not allowed for exact key {key.name}")
        return Exact(v)
    if kind == "ternary":
        return Ternary(v & m, m)
    if kind == "range":
        return Range(v & m, (v & m) | (full & ~m))
    if kind == "optional":
        return Optional(None if m == 0 else v)
    raise TranslateError(f"match kind {kind} is not supported")
