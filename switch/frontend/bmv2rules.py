"""Rules of p4c's BMv2 back end that a v1model program must also obey.

p4c accepts a program for BMv2 only if its back end can map it; these checks reproduce the
ones users meet (header sizes, the shape of the V1Switch header and metadata types, one lpm
key, direct counters and meters tied to exactly one table, no user-declared extern functions
or objects unless ``--emit-externs``, no run-time ``/`` or ``%`` except by a power of two), each
reported at the line p4c reports.
"""

from __future__ import annotations

from ..p4include import INCLUDE_DIR
from . import ast as A
from . import types as T
from .checker import CheckedProgram, Checker, TableChecker
from .cpbuild import iter_nodes, referenced_decls
from .cpbuild_names import expr_text
from .digests import digest_type, is_digest_call
from .errors import CompileError


def check_bmv2(
    checked: CheckedProgram,
    runtime_divmod: bool = False,
    emit_externs: bool = False,
    value_arrays: bool = False,
) -> None:
    """Raise CompileError at the first construct p4c's BMv2 back end refuses.

    ``runtime_divmod`` accepts ``/`` and ``%`` that p4c cannot reduce at compile time, which
    the embedded interpreter computes but p4c refuses (CompileOptions.runtime_divmod).
    ``emit_externs`` accepts user-declared extern functions and objects, as p4c-bm2-ss's
    ``--emit-externs`` does (BMv2 then needs an extern library; this switch refuses them
    at load, see ``first_user_extern``).
    ``value_arrays`` accepts arrays ``T[N]`` of values that are not headers (bit<W>, bool,
    structs...), which p4c-bm2-ss cannot map (CompileOptions.value_arrays).
    """
    program = checked.program
    user_decls = [d for d in program.decls if not is_library(d)]
    for d in user_decls:
        if isinstance(d, A.StructLike) and d.kind == "header":
            _header_has_one_varbit(d, checked)
            _header_is_whole_bytes(d, checked)
    _package_types(checked)
    _no_for_in_loops(user_decls)
    _digests_of_structs(user_decls, checked)
    if not value_arrays:
        _no_value_arrays(user_decls)
    for d in user_decls:
        if isinstance(d, A.ControlDecl):
            _control_rules(d)
    if not emit_externs:
        _user_externs(user_decls)
    else:
        _user_extern_values(user_decls)
    if not runtime_divmod:
        _division_at_compile_time(user_decls)
    _register_types(user_decls)


def is_library(d: A.Node) -> bool:
    return str(INCLUDE_DIR) in d.pos.file or d.pos.file.endswith(("/core.p4", "/v1model.p4"))


def _no_value_arrays(user_decls: list[A.Node]) -> None:
    """p4c-bm2-ss 1.2.5 maps only stacks of headers and header unions: any other array the
    program uses stops it ("Compiler Bug: bit<8>: unexpected stack element type", with no
    source position); reported here at the first use."""
    found: list[tuple[int, A.Node, T.Type]] = []
    for n in iter_nodes(list(user_decls)):
        t = T.strip_newtype(getattr(n, "type", None)) if isinstance(n, A.Expr) else None
        if isinstance(t, T.StackT):
            eb = T.strip_newtype(t.elem)
            if not isinstance(eb, T.TypeVar) and not (
                isinstance(eb, T.StructT) and eb.kind in ("header", "header_union")
            ):
                found.append((n.pos.line, n, t.elem))
    if found:
        _, node, elem = min(found, key=lambda f: f[0])
        raise CompileError(
            node.pos,
            f"{elem}: unexpected stack element type (p4c-bm2-ss has no arrays of values "
            "that are not headers; --value-arrays accepts them for the embedded switch)",
        )


def _digests_of_structs(user_decls: list[A.Node], checked: CheckedProgram) -> None:
    """p4c's v1model converter refuses a digest whose data is a header, at the header's
    declaration (other non-struct data, bit<W>, tuples, enums, it accepts)."""
    calls = [n for n in iter_nodes(list(user_decls)) if is_digest_call(n)]
    for call in sorted(calls, key=lambda c: c.pos.line):
        t = T.strip_newtype(digest_type(call)) if digest_type(call) is not None else None
        if isinstance(t, T.StructT) and t.kind == "header":
            sym = checked.scope.names.get(t.name)
            pos = sym.pos if sym is not None else call.pos
            raise CompileError(
                pos,
                f"header {t.name}: expected a struct type. Are you using an up-to-date v1model.p4?",
            )


def _header_has_one_varbit(d: A.StructLike, checked: CheckedProgram) -> None:
    """BMv2 header types hold at most one varbit field (p4c's HeaderConverter, which checks
    this before the header's size)."""
    st = checked.scope.names[d.name].type
    varbits = [t for t in st.fields.values() if isinstance(T.strip_newtype(t), T.Varbit)]
    if len(varbits) > 1:
        raise CompileError(
            d.pos, f"header {d.name}: headers with multiple varbit fields not supported"
        )


def _header_is_whole_bytes(d: A.StructLike, checked: CheckedProgram) -> None:
    st = checked.scope.names[d.name].type
    total = 0
    for ft in st.fields.values():
        w = T.width_of(ft)
        if w is None:
            return
        total += w
    if total % 8:
        raise CompileError(
            d.pos,
            f"header {d.name}: Found header with fields totaling {total} bits. "
            "BMv2 target only supports headers with fields totaling a multiple of 8 bits",
        )


def _package_types(checked: CheckedProgram) -> None:
    """V1Switch's H must be a struct of headers, stacks and unions; M a struct."""
    main = checked.main
    if main is None or not main.args or main.args[0].value is None:
        return
    parser_t = main.args[0].value.type
    decl = getattr(parser_t, "decl", None)
    if not isinstance(decl, A.ParserDecl):
        return
    for p in decl.params:
        if p.direction != "out":
            continue
        t = T.strip_newtype(p.type)
        if not (isinstance(t, T.StructT) and t.kind == "struct"):
            raise CompileError(p.pos, f"{t}: expected type to be a struct")
        for ft in t.fields.values():
            b = T.strip_newtype(ft)
            if isinstance(b, T.StackT):  # a header stack, not an array of other values
                b = T.strip_newtype(b.elem)
            ok = isinstance(b, T.StructT) and b.kind in ("header", "header_union")
            if not ok:
                raise CompileError(
                    p.pos, f"{p.name}: the type should be a struct of headers, stacks, or unions"
                )


def _control_rules(control: A.ControlDecl) -> None:
    tables = [d for d in control.locals if isinstance(d, A.TableDecl)]
    for t in tables:
        lpm = [k for k in TableChecker.prop(t, "key") or [] if k.match_kind == "lpm"]
        if len(lpm) > 1:
            raise CompileError(
                t.pos, f"multiple LPM keys in table {control.name}.{t.name} not supported"
            )
    _tables_applied_once_per_path(control)
    used = referenced_decls(control)
    for d in control.locals:
        if not (isinstance(d, A.Instance) and isinstance(getattr(d, "inst_type", None), T.ExternT)):
            continue
        kind = d.inst_type.name
        if kind not in ("direct_counter", "direct_meter"):
            continue
        prop = "counters" if kind == "direct_counter" else "meters"
        users = [t for t in tables if _names(TableChecker.prop(t, prop), d)]
        if kind == "direct_meter" and not users and id(d) in used:
            # p4c removes an unused declaration before this check (only warning 'unused')
            raise CompileError(
                d.pos,
                f"{control.name}.{d.name}: direct meter is not associated with any "
                "table via 'meters' table property",
            )
        if len(users) > 1:
            raise CompileError(
                d.pos,
                f"{control.name}.{d.name}: Direct counters cannot be attached to "
                f"multiple tables {control.name}.{users[0].name} and {control.name}.{users[1].name}",
            )
        if kind == "direct_meter" and users:
            _meter_is_read(control, users[0], d)


def _names(value: object, decl: A.Instance) -> bool:
    return (
        isinstance(value, A.Name)
        and getattr(value, "sym", None) is not None
        and value.sym.decl is decl
    )


def _meter_is_read(control: A.ControlDecl, table: A.TableDecl, meter: A.Instance) -> None:
    actions = {
        getattr(r.expr.func if isinstance(r.expr, A.Call) else r.expr, "name", "")
        for r in TableChecker.prop(table, "actions") or []
    }
    for d in control.locals:
        if isinstance(d, A.ActionDecl) and d.name in actions:
            for n in iter_nodes([d.body]):
                if (
                    isinstance(n, A.Call)
                    and isinstance(n.func, A.Member)
                    and n.func.name == "read"
                    and isinstance(n.func.expr, A.Name)
                    and getattr(n.func.expr, "sym", None) is not None
                    and n.func.expr.sym.decl is meter
                ):
                    return
    raise CompileError(
        table.pos,
        f"{control.name}.{table.name}: table with direct meter "
        f"{control.name}.{meter.name} must have at least one action with a read method call",
    )


def first_user_extern(decls: list[A.Node]) -> tuple[A.Node, str, A.Decl] | None:
    """The first use of an extern the program declares itself, not v1model/core: (the call
    or instantiation, "function" or "object", the extern's declaration), in source order.

    Extern functions count where they are called (an uncalled declaration is harmless, as in
    p4c); extern objects where they are instantiated."""
    user = [d for d in decls if not is_library(d)]
    functions = {id(d.proto): d for d in user if isinstance(d, A.ExternFunction)}
    objects = {id(d): d for d in user if isinstance(d, A.ExternDecl)}
    if not functions and not objects:
        return None
    for d in user:
        found: list[tuple[A.Node, str, A.Decl]] = []
        for n in iter_nodes([d]):
            if isinstance(n, A.Call):
                target = getattr(n, "target", None)
                if target and target[0] == "extern_function" and id(target[1]) in functions:
                    found.append((n, "function", functions[id(target[1])]))
            elif isinstance(n, A.Instance):
                t = getattr(n, "inst_type", None)
                if isinstance(t, T.ExternT) and id(t.decl) in objects:
                    found.append((n, "object", objects[id(t.decl)]))
        if found:
            return min(found, key=lambda f: f[0].pos.line)
    return None


def _user_externs(user_decls: list[A.Node]) -> None:
    """Without ``--emit-externs`` p4c's BMv2 back end converts only v1model's externs; a call
    of a user-declared extern function or an instance of a user-declared extern object is
    an error reported at the extern's declaration (p4c's ExternConverter names
    ``ef->method->name`` / ``eb->type->name``, whose position is the declaration)."""
    found = first_user_extern(user_decls)
    if found is None:
        return
    _, kind, decl = found
    what = "extern function" if kind == "function" else "extern instance"
    raise CompileError(decl.pos, f"{decl.name}: unknown {what}")


def _no_for_in_loops(user_decls: list[A.Node]) -> None:
    """p4c-bm2-ss 1.2.5 has no JSON for ``for (T x in collection)``: "BMV2 does not support
    for-in loops" at the first one (three-clause ``for`` loops it unrolls or converts)."""
    loops = [n for n in iter_nodes(list(user_decls)) if isinstance(n, A.ForIn)]
    if loops:
        first = min(loops, key=lambda n: (n.pos.file, n.pos.line))
        raise CompileError(first.pos, "BMV2 does not support for-in loops")


def _user_extern_values(user_decls: list[A.Node]) -> None:
    """With ``--emit-externs`` p4c's BMv2 JSON has a primitive for a call of a user extern
    (function, or method of a user extern object) only as a statement: a call whose value
    is used (``x = f(y)``) is p4c's "could not convert expression to Json" / "not
    supported" (checked with p4c-bm2-ss 1.2.5 by bench/p4c_diff.py)."""
    functions = {id(d.proto) for d in user_decls if isinstance(d, A.ExternFunction)}
    objects = {id(d) for d in user_decls if isinstance(d, A.ExternDecl)}
    if not functions and not objects:
        return
    nodes = list(iter_nodes(list(user_decls)))
    statements = {id(n.call) for n in nodes if isinstance(n, A.CallStmt)}
    for n in sorted((n for n in nodes if isinstance(n, A.Call)), key=lambda c: c.pos.line):
        if id(n) in statements:
            continue
        target = getattr(n, "target", None)
        if target and target[0] == "extern_function" and id(target[1]) in functions:
            raise CompileError(n.pos, f"{expr_text(n.func)}(...): not supported")
        if isinstance(n.func, A.Member):
            t = getattr(n.func.expr, "type", None)
            if isinstance(t, T.ExternT) and id(t.decl) in objects:
                raise CompileError(
                    n.pos, f"{expr_text(n.func.expr)}: could not convert expression to Json"
                )


def _tables_applied_once_per_path(control: A.ControlDecl) -> None:
    """BMv2's pipeline is a graph with one node per table: no path may apply a table twice."""

    def applied_in(e: A.Node | None) -> list[A.TableDecl]:
        found = []
        for n in iter_nodes([e] if e is not None else []):
            if isinstance(n, A.Call) and isinstance(n.func, A.Member) and n.func.name == "apply":
                t = getattr(n.func.expr, "type", None)
                if isinstance(t, T.TableT):
                    found.append(t.decl)
        return found

    def enter(tables: list[A.TableDecl], before: frozenset[int]) -> frozenset[int]:
        for t in tables:
            if id(t) in before:
                raise CompileError(
                    t.pos,
                    "Program can not be implemented on this target since it "
                    f"contains a path from table {control.name}.{t.name} back to itself",
                )
            before = before | {id(t)}
        return before

    def walk(s: A.Stmt, before: frozenset[int]) -> frozenset[int]:
        if isinstance(s, A.Block):
            for x in s.stmts:
                before = walk(x, before)
            return before
        if isinstance(s, A.If):
            before = enter(applied_in(s.cond), before)
            then = walk(s.then, before)
            other = walk(s.other, before) if s.other is not None else before
            return then | other
        if isinstance(s, A.Switch):
            before = enter(applied_in(s.expr), before)
            out = frozenset(before)
            for case in s.cases:
                if case.body is not None:
                    out |= walk(case.body, before)
            return out
        if isinstance(s, (A.Exit, A.Return)):
            return before
        return enter(applied_in(s), before)

    walk(control.body, frozenset())


def _division_at_compile_time(user_decls: list[A.Node]) -> None:
    """BMv2 has no division: p4c must turn every ``/`` and ``%`` into something else.

    Its front end folds constant expressions, and StrengthReduction rewrites ``x / 1`` as
    ``x``, ``x / 2^k`` as ``x >> k``, ``x % 2^k`` as ``x & (2^k - 1)``, and ``0 / x``, ``0 % x``
    as 0 (its isPowerOf2 and isZero look at constants after folding, so named constants
    count); the mid end's CompileTimeOperations then refuses any division left:
    ``[--Werror=invalid] error: E: could not evaluate expression at compilation time``. Ours is
    the same message after our ``FILE(LINE): error:`` prefix, at the first such operator in
    the source (compound ``/=`` and ``%=`` included, as p4c desugars them).
    """
    for d in user_decls:  # declarations in program order, so the first in the source wins
        found = [
            e
            for e in iter_nodes([d])
            if isinstance(e, A.Binary) and e.op in ("/", "%") and not _reducible(e)
        ]
        if found:
            first = min(found, key=lambda e: e.pos.line)
            raise CompileError(
                first.pos,
                f"{_expr_text(first)}: could not evaluate expression at compilation time",
            )


def _reducible(e: A.Binary) -> bool:
    """Whether p4c's constant folding or strength reduction removes this ``/`` or ``%``."""
    if _const(e) is not None:
        return True
    right, left = _const(e.right), _const(e.left)
    if _is_int(right) and right > 0 and right & (right - 1) == 0:
        return True  # a power of two (1 included): a shift or a mask
    # 0 / x and 0 % x are 0 (p4c's SideEffectOrdering has already moved any call in x into
    # a temporary, so StrengthReduction sees no side effect there)
    return _is_int(left) and left == 0


def _const(e: A.Expr) -> object:
    return Checker.const_value_static(e)


def _is_int(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _expr_text(e: A.Expr) -> str:
    """The expression as written (near enough) for the message, as p4c prints it."""
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Name):
        return ("." if e.dot else "") + e.name
    if isinstance(e, A.Member):
        return f"{_expr_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{_expr_text(e.expr)}[{_expr_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{_expr_text(e.expr)}[{_expr_text(e.hi)}:{_expr_text(e.lo)}]"
    if isinstance(e, A.Cast):
        return f"({_type_text(e.typeref)}){_operand(e.expr)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{_operand(e.expr)}"
    if isinstance(e, A.Binary):
        return f"{_operand(e.left)} {e.op} {_operand(e.right)}"
    if isinstance(e, A.Call):
        return f"{_expr_text(e.func)}(...)"
    return "expression"


def _operand(e: A.Expr) -> str:
    text = _expr_text(e)
    return f"({text})" if isinstance(e, (A.Binary, A.Mux)) else text


def _type_text(t: A.TypeRef) -> str:
    if isinstance(t, A.BitsType):
        width = "" if t.width is None else f"<{_expr_text(t.width)}>"
        return ("int" if t.signed else "bit") + width
    if isinstance(t, A.NamedType):
        return ("." if t.dot else "") + t.name
    return "type"


def _register_types(user_decls: list[A.Node]) -> None:
    """BMv2 registers hold bit<W> or int<W> cells (p4c: registers with other types are not
    supported), so register<struct>.read cannot fill a struct."""
    for node in iter_nodes(user_decls):
        t = getattr(node, "inst_type", None)
        if not (isinstance(node, A.Instance) and isinstance(t, T.ExternT) and t.name == "register"):
            continue
        cell = t.args.get("T")
        base = T.strip_newtype(cell) if cell is not None else None
        if isinstance(base, T.EnumT) and base.underlying is not None:
            continue
        if base is not None and not isinstance(base, (T.Bits, T.TypeVar)):
            raise CompileError(
                node.pos,
                f"{node.name}: registers with types other than bit<> or int<> are not "
                f"supported by BMv2 (register<{cell}>)",
            )
