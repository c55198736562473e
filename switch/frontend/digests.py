"""Control-plane names of v1model ``digest<T>(receiver, data)`` calls, as p4c gives them.

p4c (p4RuntimeArchStandard.cpp, getDigestCall) names a digest by its type argument ``T``:
when ``T`` is written, or inferred, as a named type (a struct, header, enum, serializable
enum, ``type``, or a ``typedef`` written as the type argument) the digest takes that type's
control-plane name (its ``@name`` if any), and every call with that name shares one P4Info
digest. Any other ``T`` (``bit<W>``, a tuple, the tuple of a ``{a, b}`` list, an inferred
typedef, which p4c sees through) gets an automatic name ``digest_N``, numbered per call in
the order p4c's symbol collection meets the calls: the V1Switch controls in argument order,
in each control its actions (in declaration order) and then its ``apply`` body, with
sub-controls inlined where they are declared and applied, as p4c's front end inlines them.

The front end (P4Info) and the embedded switch (the name each DigestList is sent under) both
take the names from ``assign_digest_names``, which stores them on the call nodes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from . import ast as A
from . import types as T
from .check_base import CheckedProgram
from .errors import CompileError


@dataclass
class DigestSite:
    call: A.Call
    name: str
    type: T.Type  # the digest's data type T


def digest_type(call: A.Call) -> T.Type | None:
    """T of a digest call: the bound (explicit or inferred) type argument, else the data's type."""
    bound = getattr(call, "bindings", {}).get("T")
    if bound is not None and not isinstance(bound, T.TypeVar):
        return bound
    if len(call.args) == 2 and call.args[1].value is not None:
        return call.args[1].value.type
    return None


def is_digest_call(node: Any) -> bool:
    target = getattr(node, "target", None)
    return (
        isinstance(node, A.Call)
        and isinstance(target, tuple)
        and target[0] == "extern_function"
        and getattr(target[1], "name", None) == "digest"
    )


def _control_plane_name(decl: Any, fallback: str) -> str:
    for a in getattr(decl, "annotations", []) if decl is not None else []:
        if a.name == "name" and a.args and isinstance(a.args[0], A.StringLit):
            return a.args[0].value.lstrip(".")
    return fallback


def _named(call: A.Call, t: T.Type, checked: CheckedProgram) -> str | None:
    """The name p4c gives a digest whose T is a named type, or None for an automatic name."""
    if call.type_args:
        ref = call.type_args[0]
        if not isinstance(ref, A.NamedType):
            return None  # digest<bit<32>>, digest<tuple<...>>: no name to take
        sym = checked.scope.lookup(ref.name)
        if sym is not None and sym.kind == "type" and isinstance(sym.decl, A.Typedef):
            return _control_plane_name(sym.decl, ref.name)  # the typedef's own name
    if isinstance(t, T.StructT):
        if t.anonymous:
            raise CompileError(
                call.pos,
                "digest data of an anonymous struct type: name its type (digest<T>(...))",
            )
        return _control_plane_name(t.decl, t.name)
    if isinstance(t, (T.EnumT, T.NewType)):
        return _control_plane_name(t.decl, t.name)
    return None


def _ordered(node: Any) -> Iterator[Any]:
    """Syntax nodes below ``node`` in source order (cpbuild.iter_syntax)."""
    from .cpbuild import iter_syntax

    return iter_syntax([node])


def _sub_control(call: Any) -> A.ControlDecl | None:
    """The control of a ``c.apply()`` call on a sub-control instance, else None."""
    if not (isinstance(call, A.Call) and isinstance(call.func, A.Member)):
        return None
    if call.func.name != "apply" or not isinstance(call.func.expr, A.Name):
        return None
    sym = getattr(call.func.expr, "sym", None)
    t = getattr(sym.decl, "inst_type", None) if sym is not None else None
    if isinstance(t, T.BlockT) and isinstance(t.decl, A.ControlDecl):
        return t.decl
    return None


class _Uses:
    """cpbuild.referenced_decls per control, computed once per naming pass."""

    def __init__(self) -> None:
        self._cache: dict[int, set[int]] = {}

    def of(self, control: A.ControlDecl) -> set[int]:
        from .cpbuild import referenced_decls  # cpbuild imports this module

        used = self._cache.get(id(control))
        if used is None:
            used = self._cache[id(control)] = referenced_decls(control)
        return used


def _control_calls(control: A.ControlDecl, uses: _Uses, depth: int = 0) -> Iterator[A.Call]:
    """Digest calls of a control in p4c's collection order (see the module docstring)."""
    yield from _actions_only(control, uses, depth)
    yield from _body_calls(control.body, depth)


def _actions_only(control: A.ControlDecl, uses: _Uses, depth: int) -> Iterator[A.Call]:
    """Digest calls in a control's used actions, a sub-control's where it is declared."""
    if depth > 64:  # instances cannot be recursive; a guard against malformed input
        return
    used = uses.of(control)
    for local in control.locals:
        if isinstance(local, A.ActionDecl) and id(local) in used:
            yield from (n for n in _ordered(local.body) if is_digest_call(n))
        elif isinstance(local, A.Instance) and id(local) in used:
            t = getattr(local, "inst_type", None)
            if isinstance(t, T.BlockT) and isinstance(t.decl, A.ControlDecl):
                yield from _actions_only(t.decl, uses, depth + 1)


def _body_calls(body: Any, depth: int) -> Iterator[A.Call]:
    for n in _ordered(body):
        if is_digest_call(n):
            yield n
        sub = _sub_control(n)
        if sub is not None and depth < 64:
            yield from _body_calls(sub.body, depth + 1)


def assign_digest_names(checked: CheckedProgram) -> list[DigestSite]:
    """Name every digest call reachable from ``main``'s controls (stored as ``call.digest_name``).

    Returns the sites in p4c's order, each call once. Digest calls elsewhere (a parser, a
    function, an unused action) are not in p4c's P4Info; they keep no name.
    """
    if checked.digest_sites is not None:
        return list(checked.digest_sites)
    sites = _find_digest_sites(checked)
    checked.digest_sites = sites
    return list(sites)


def _find_digest_sites(checked: CheckedProgram) -> list[DigestSite]:
    sites: list[DigestSite] = []
    if checked.main is None:
        return sites
    # most programs have no digest: one syntax walk says so, before any use analysis
    if not any(is_digest_call(n) for n in _ordered(checked.program.decls)):
        return sites
    seen: set[int] = set()
    uses = _Uses()
    auto = 0
    for arg in checked.main.args:
        t = getattr(arg.value, "type", None)
        if not (isinstance(t, T.BlockT) and isinstance(t.decl, A.ControlDecl)):
            continue
        for call in _control_calls(t.decl, uses):
            if id(call) in seen:
                continue
            seen.add(id(call))
            data_type = digest_type(call)
            if data_type is None:
                continue
            name = _named(call, data_type, checked)
            if name is None:
                name = f"digest_{auto}"
                auto += 1
            call.digest_name = name
            sites.append(DigestSite(call, name, data_type))
    return sites
