"""The ``api`` check of an API listing (``<!-- doctest: api: MODULE... [s=NAME]... -->``):
every ``name(...)`` the listing writes at the start of a line (or after ``;`` or `` / ``)
must exist in the marker's modules, and its parameters must be the real ones, so a listing
that lost a parameter (``threads=``) or names a removed one fails.

``NAME(a, b=1, *, c=None)``: each parameter written must be one of the callable's, and,
unless the listing elides with ``...``, every parameter of the callable must be written.
``s=AllreduceSession`` lets the listing write ``s.allreduce(...)`` for an instance.
Lines that assign (``x = f(...)``), and parameters that are not plain names (``payload |
None``), are not checked.
"""

from __future__ import annotations

import importlib
import inspect
import re
from typing import Any

CALL = re.compile(
    r"(?:^[ \t]*|;\s*|\s/\s)(?<![\w.])([A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)\(", re.MULTILINE
)
IDENT = re.compile(r"[A-Za-z_]\w*")


def namespace(spec: str) -> dict[str, Any]:
    """The names an ``api:`` marker value makes available: its modules (looked up by name,
    so lazily exported names work too) and its ``alias=NAME`` entries."""
    names: dict[str, Any] = {"": [importlib.import_module(w) for w in spec.split() if "=" not in w]}
    for word in spec.split():
        if "=" in word:
            alias, _, target = word.partition("=")
            names[alias] = _resolve(target, names)
    return names


def _resolve(dotted: str, names: dict[str, Any]) -> Any:
    head, *rest = dotted.split(".")
    if head in names and head:
        obj = names[head]
    else:
        found = [getattr(m, head) for m in names[""] if hasattr(m, head)]
        if not found:
            raise LookupError(f"{dotted}: {head!r} is in none of the marker's modules")
        obj = found[0]
    for part in rest:
        try:
            obj = inspect.getattr_static(obj, part)
        except AttributeError:
            raise LookupError(f"{dotted}: {part!r} does not exist") from None
        if isinstance(obj, (classmethod, staticmethod)):
            obj = obj.__func__
    return obj


def _arguments(text: str, start: int) -> str:
    """The text between the parenthesis at ``start`` and its partner."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "([{":
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return text[start + 1 : i]
    raise LookupError(f"unbalanced parentheses after {text[max(0, start - 20) : start]!r}")


def _split(args: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in args:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _real_parameters(obj: Any) -> list[str]:
    sig = inspect.signature(obj)
    return [
        name
        for name, p in sig.parameters.items()
        if name not in ("self", "cls")
        and p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    ]


def check(text: str, spec: str) -> int:
    """Check the listing; how many signatures it checked (LookupError says what is wrong)."""
    names = namespace(spec)
    code = re.sub(r"#[^\n]*", "", text)  # comments may say anything
    checked = 0
    for m in CALL.finditer(code):
        line_start = code.rfind("\n", 0, m.start()) + 1
        if (
            "=" in code[line_start : m.start()].split("(")[0]
            and "==" not in code[line_start : m.start()]
        ):
            continue  # an assignment's right-hand side: an example call, not a listing
        dotted = m.group(1)
        obj = _resolve(dotted, names)
        if not callable(obj):
            raise LookupError(f"{dotted} is not callable")
        written = _split(_arguments(code, m.end() - 1))
        real = _real_parameters(obj)
        elided = "..." in written
        given = []
        for arg in written:
            name = arg.split("=", 1)[0].strip() if "=" in arg else arg
            if name in ("*", "...", "/") or not IDENT.fullmatch(name):
                continue
            given.append(name)
            if name not in real:
                raise LookupError(f"{dotted}: no parameter {name!r} (it has {', '.join(real)})")
        missing = [p for p in real if p not in given]
        if missing and not elided:
            raise LookupError(f"{dotted}: the listing lacks {', '.join(missing)}")
        checked += 1
    return checked
