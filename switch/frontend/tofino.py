"""Tofino's hardware rules (docs/p4src.md, 'Tofino's rules'), checked by ``--target-profile tofino``.

The program has already been compiled for v1model/BMv2; this pass only checks that it also
keeps the rules a Tofino pipeline imposes, and reports the first break at its line:

1. no loops: no ``for`` statement, no cycle in a parser's state graph;
2. each register is touched once per pass as one read-modify-write at one index: per gress,
   at most one ``read`` and one ``write`` call site per register instance, both at the same
   index expression, and no register used from two gresses;
3. register cells of at most 32 bits, or a pair of 32-bit cells (64 bits);
4. no runtime multiply, divide or modulo except by a constant power of two;
5. at most PARSE_BUDGET_BITS of headers extracted along any path of the parser.

The worker bitmap limit (MAX_WORKERS) is a property of the aggregation programs, which
enforce it themselves; it is not checkable generically and not checked here. docs/frontend.md
says what counts for each rule and what is not checked (stages, PHV, hash widths, tables).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ... import contracts
from . import ast as A
from . import types as T
from .bmv2rules import is_library
from .checker import CheckedProgram, Checker, TableChecker, TypeValue
from .errors import CompileError, SourcePos

# Header bits one pass of the parser may extract along any path (start to accept/reject).
PARSE_BUDGET_BITS = 4096
# The widest register cell a Tofino stateful ALU reads and writes as one value ...
MAX_CELL_BITS = 32
# ... and the width of a pair of such cells, updated together.
PAIR_CELL_BITS = 64
# Workers per job: the width of the aggregation bitmap. Enforced by the programs, not here.
MAX_WORKERS = contracts.MAX_WORKERS

# V1Switch's parameters, in pipeline order, and the gress name messages use for each. Each
# block is a gress of its own for register ownership: a register lives in exactly one.
GRESS_OF_PARAM = {
    "p": "parser",
    "vr": "verify checksum",
    "ig": "ingress",
    "eg": "egress",
    "ck": "compute checksum",
    "dep": "deparser",
}

_RMW_RULE = "Tofino touches a register once per pass, as one read-modify-write at one index"


def check_tofino(checked: CheckedProgram) -> None:
    """Raise CompileError at the first construct a Tofino pipeline cannot run."""
    user_decls = [d for d in checked.program.decls if not is_library(d)]
    _no_loops(user_decls)
    _register_cells(user_decls)
    _arithmetic(user_decls)
    _register_accesses(checked)
    _parse_budget(checked)


# ------------------------------------------------------------------ tree walking


_nodes = A.iter_syntax


def _earliest(nodes: list[A.Node]) -> A.Node | None:
    return min(nodes, key=lambda n: n.pos.line) if nodes else None


def _where(pos: SourcePos, other: SourcePos) -> str:
    """``line N`` when both places are in one file, else ``FILE(N)``."""
    return f"line {pos.line}" if pos.file == other.file else str(pos)


def _target(call: A.Call) -> tuple[Any, ...]:
    """What the checker resolved a call to: ("action", decl), ("method", extern, proto) ..."""
    return getattr(call, "target", None) or (None,)


def _const(e: A.Expr | None) -> Any:
    """The value the checker folds ``e`` to (int or bool), or None when it is not constant."""
    return None if e is None else Checker.const_value_static(e)


# ------------------------------------------------------------------ 1. loops


def _no_loops(user_decls: list[A.Decl]) -> None:
    for d in user_decls:
        loop = _earliest([n for n in _nodes([d]) if isinstance(n, (A.For, A.ForIn))])
        if loop is not None:
            raise CompileError(
                loop.pos,
                "for loop: Tofino has no loops; each statement runs at most once per pass "
                "(unroll the loop)",
            )
    for d in user_decls:
        for parser in [n for n in _nodes([d]) if isinstance(n, A.ParserDecl)]:
            _parser_is_acyclic(parser)


def _transitions(state: A.ParserState) -> list[tuple[str, SourcePos]]:
    """(target state, where the transition names it), in source order."""
    t = state.transition
    if isinstance(t, A.Name):
        return [(t.name, t.pos)]
    if isinstance(t, A.SelectExpr):
        return [(c.state, c.state_pos or c.pos) for c in t.cases]
    return []


def _parser_is_acyclic(parser: A.ParserDecl) -> None:
    """Depth-first from ``start``; the first edge back to a state on the current path closes
    a loop, reported where that transition names the state."""
    states = {s.name: s for s in parser.states}
    if "start" not in states:
        return
    done: set[str] = set()
    path: list[str] = ["start"]
    on_path = {"start"}
    todo: list[Iterator[tuple[str, SourcePos]]] = [iter(_transitions(states["start"]))]
    while todo:
        step = next(todo[-1], None)
        if step is None:
            todo.pop()
            done.add(path[-1])
            on_path.discard(path.pop())
            continue
        target, pos = step
        if target in on_path:
            cycle = " -> ".join([*path[path.index(target) :], target])
            raise CompileError(
                pos,
                f"parser loop in {parser.name}: {cycle}; Tofino parses a bounded number of "
                "headers per pass (unroll the loop into distinct states)",
            )
        if target in done or target not in states:
            continue
        path.append(target)
        on_path.add(target)
        todo.append(iter(_transitions(states[target])))


# ------------------------------------------------------------------ 3. cell width


def _register_cells(user_decls: list[A.Decl]) -> None:
    for d in user_decls:
        for n in _nodes([d]):
            if isinstance(n, A.Instance):
                t, name = getattr(n, "inst_type", None), n.name
            elif isinstance(n, A.Call) and _target(n)[0] == "constructor":
                t, name = n.type, "register"
            else:
                continue
            if not (isinstance(t, T.ExternT) and t.name == "register"):
                continue
            cell = t.args.get("T")
            if cell is None or isinstance(cell, T.TypeVar):
                continue
            b = T.strip_newtype(cell)
            if isinstance(b, T.Bits) and (b.width <= MAX_CELL_BITS or b.width == PAIR_CELL_BITS):
                continue
            raise CompileError(
                n.pos,
                f"register {name}: cells of type {cell} do not fit a Tofino register; cells are "
                f"bit<W> or int<W> with W <= {MAX_CELL_BITS}, or {PAIR_CELL_BITS} "
                f"(a pair of {MAX_CELL_BITS}-bit cells)",
            )


# ------------------------------------------------------------------ 4. arithmetic

_ARITH_WORDS = {"*": "multiplication", "/": "division", "%": "modulo"}


def _is_power_of_two(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v > 0 and v & (v - 1) == 0


def _arithmetic(user_decls: list[A.Decl]) -> None:
    """``*`` needs an operand that is a constant power of two (or zero); ``/`` and ``%`` a
    right operand that is one. Expressions the checker folds to a constant are exempt."""
    for d in user_decls:
        for e in _nodes([d]):
            if not (isinstance(e, A.Binary) and e.op in _ARITH_WORDS):
                continue
            if _const(e) is not None:
                continue
            right = _const(e.right)
            if e.op == "*":
                left = _const(e.left)
                if _is_power_of_two(left) or _is_power_of_two(right) or 0 in (left, right):
                    continue
                known = right if right is not None else left
            else:
                if _is_power_of_two(right):
                    continue
                known = right
            by = f" by {known}" if isinstance(known, int) and not isinstance(known, bool) else ""
            by = by or " by a runtime value"
            raise CompileError(
                e.pos,
                f"operator {e.op}: {_ARITH_WORDS[e.op]}{by}; Tofino can only multiply, "
                "divide or take the remainder by a constant power of two (a shift or a mask)",
            )


# ------------------------------------------------------------------ 2. register accesses

# A register instance: the ids of the instance nodes from the gress root down to the block
# that declares it (empty for a top-level register), and the id of its declaration.
_Key = tuple[tuple[int, ...], int]


@dataclass
class _Site:
    kind: str  # read | write
    call: A.Call
    index: A.Expr | None
    register: str  # for messages: MyIngress.r, MyIngress.sub.r, or r at top level
    block: str  # the instance the call runs in: MyIngress, MyIngress.sub


@dataclass
class _Frame:
    """A parser or control instance being walked."""

    path: tuple[A.Node, ...]  # the instance nodes from the gress root down to this one
    label: str  # the control-plane style name of this instance: MyIngress, MyIngress.sub
    local_ids: frozenset[int]  # ids of the instances declared in the block
    env: dict[str, tuple[_Key, str]]  # constructor parameters bound to registers


@dataclass
class _Gress:
    """Everything one V1Switch block reaches: its actions, functions, tables' actions,
    sub-controls and sub-parsers, and the register call sites found there."""

    name: str
    walked: set[tuple[tuple[int, ...], int]] = field(default_factory=set)
    # per register, its call sites: one per (instance path, call), so a sub-control
    # instantiated twice that touches a top-level register touches it twice
    sites: dict[_Key, dict[tuple[tuple[int, ...], int], _Site]] = field(default_factory=dict)

    def block(self, decl: Any, path: tuple[A.Node, ...], label: str, env: dict) -> None:
        key = (tuple(map(id, path)), id(decl))
        if key in self.walked:
            return
        self.walked.add(key)
        body = decl.states if isinstance(decl, A.ParserDecl) else decl.body
        local = frozenset(id(n) for n in _nodes([decl.locals, body]) if isinstance(n, A.Instance))
        frame = _Frame(path, label, local, env)
        inits = [d for d in decl.locals if isinstance(d, (A.VarDecl, A.Instance))]
        self.code([inits, body], frame)

    def code(self, roots: list[Any], frame: _Frame) -> None:
        for n in _nodes(roots):
            if isinstance(n, A.Call):
                self.call(n, frame)

    def callee(self, decl: A.ActionDecl | A.FunctionDecl, frame: _Frame) -> None:
        key = (tuple(map(id, frame.path)), id(decl))
        if key not in self.walked:
            self.walked.add(key)
            self.code([decl.body], frame)

    def call(self, n: A.Call, frame: _Frame) -> None:
        target = _target(n)
        if target[0] in ("action", "function"):
            self.callee(target[1], frame)
        elif (
            target[0] == "method"
            and target[1].name == "register"
            and isinstance(n.func, A.Member)
            and n.func.name in ("read", "write")
        ):
            self.record(n, target[2], frame)
        elif target == ("builtin", "apply") and isinstance(n.func, A.Member):
            self.apply(n, frame)

    def apply(self, n: A.Call, frame: _Frame) -> None:
        obj = n.func.expr
        t = obj.type
        direct = isinstance(t, TypeValue)  # `Sub.apply(...)`: an anonymous instance per call
        t = t.type if direct else t
        if isinstance(t, T.TableT):
            for ref in TableChecker.prop(t.decl, "actions") or []:
                fn = ref.expr.func if isinstance(ref.expr, A.Call) else ref.expr
                sym = getattr(fn, "sym", None)
                if sym is not None and isinstance(sym.decl, A.ActionDecl):
                    self.callee(sym.decl, frame)
            return
        if not (isinstance(t, T.BlockT) and isinstance(t.decl, (A.ControlDecl, A.ParserDecl))):
            return
        if direct:
            node: A.Node = n
            name, args, local = t.decl.name, [], True
        else:
            sym = getattr(obj, "sym", None)
            inst = sym.decl if sym is not None and sym.kind == "instance" else None
            node = inst if isinstance(inst, A.Instance) else obj
            name = getattr(obj, "name", t.decl.name)
            args = node.args if isinstance(node, A.Instance) else []
            local = id(node) in frame.local_ids or not isinstance(node, A.Instance)
        path = (*frame.path, node) if local else (node,)
        label = f"{frame.label}.{name}" if local else name
        env: dict[str, tuple[_Key, str]] = {}
        params = t.decl.ctor_params
        for i, arg in enumerate(args):
            param = next((p for p in params if p.name == arg.name), None) if arg.name else None
            param = param or (params[i] if i < len(params) and arg.name is None else None)
            if param is not None and arg.value is not None:
                reg = self.register_of(arg.value, frame)
                if reg is not None:
                    env[param.name] = reg
        self.block(t.decl, path, label, env)

    def register_of(self, e: A.Expr, frame: _Frame) -> tuple[_Key, str] | None:
        """The register instance an expression denotes, as (key, name for messages)."""
        if isinstance(e, A.Call) and _target(e)[0] == "constructor":
            return (tuple(map(id, frame.path)), id(e)), f"{frame.label}.register(...)"
        if not isinstance(e, A.Name):
            return None
        sym = getattr(e, "sym", None)
        if sym is None:
            return None
        if sym.kind == "param" and e.name in frame.env:
            return frame.env[e.name]
        local = id(sym.decl) in frame.local_ids or sym.kind == "param"
        path = tuple(map(id, frame.path)) if local else ()
        return (path, id(sym.decl)), (f"{frame.label}.{e.name}" if local else e.name)

    def record(self, n: A.Call, proto: A.MethodProto, frame: _Frame) -> None:
        assert isinstance(n.func, A.Member)
        reg = self.register_of(n.func.expr, frame)
        if reg is None:
            return
        key, name = reg
        site = _Site(n.func.name, n, _argument(n, proto, "index"), name, frame.label)
        where = (tuple(map(id, frame.path)), id(n))
        self.sites.setdefault(key, {}).setdefault(where, site)


def _argument(call: A.Call, proto: A.MethodProto, name: str) -> A.Expr | None:
    """The argument passed for parameter ``name`` (by name or by position)."""
    for a in call.args:
        if a.name == name:
            return a.value
    names = [p.name for p in proto.params]
    if name in names:
        i = names.index(name)
        if i < len(call.args) and call.args[i].name is None:
            return call.args[i].value
    return None


def _gresses(checked: CheckedProgram) -> list[_Gress]:
    """Walk each V1Switch block (in pipeline order) and everything it reaches."""
    main = checked.main
    if main is None:
        return []
    package = getattr(getattr(main, "inst_type", None), "decl", None)
    params = [p.name for p in getattr(package, "params", [])]
    out = []
    for i, arg in enumerate(main.args):
        value = arg.value
        decl = getattr(getattr(value, "type", None), "decl", None)
        if value is None or not isinstance(decl, (A.ControlDecl, A.ParserDecl)):
            continue
        pname = arg.name or (params[i] if i < len(params) else str(i))
        gress = _Gress(GRESS_OF_PARAM.get(pname, pname))
        gress.block(decl, (value,), decl.name, {})
        out.append(gress)
    return out


def _register_accesses(checked: CheckedProgram) -> None:
    gresses = _gresses(checked)
    for gress in gresses:
        for sites in gress.sites.values():
            _one_read_modify_write(gress.name, _in_source_order(sites.values()))
    owner: dict[_Key, tuple[str, _Site]] = {}
    for gress in gresses:
        for key, sites in gress.sites.items():
            first = _in_source_order(sites.values())[0]
            if key not in owner:
                owner[key] = (gress.name, first)
                continue
            other, there = owner[key]
            raise CompileError(
                first.call.pos,
                f"register {first.register}: used in {gress.name} and already in {other} "
                f"({_where(there.call.pos, first.call.pos)}); a Tofino register belongs to "
                "one gress",
            )


def _in_source_order(sites: Any) -> list[_Site]:
    return sorted(sites, key=lambda s: (s.call.pos.file, s.call.pos.line))


def _one_read_modify_write(gress: str, sites: list[_Site]) -> None:
    for kind in ("read", "write"):
        same = [s for s in sites if s.kind == kind]
        if len(same) > 1:
            first, second = same[0], same[1]
            if first.call is second.call:  # one call site, run by two instances
                again = f"by both {first.block} and {second.block}"
            else:
                again = f"(first at {_where(first.call.pos, second.call.pos)})"
            raise CompileError(
                second.call.pos,
                f"register {second.register}: second {kind} in {gress} {again}; {_RMW_RULE}",
            )
    reads = [s for s in sites if s.kind == "read"]
    writes = [s for s in sites if s.kind == "write"]
    if not (reads and writes):
        return
    read, write = reads[0], writes[0]
    if _same_expr(read.index, write.index):
        return
    later, earlier = (write, read) if sites.index(write) > sites.index(read) else (read, write)
    raise CompileError(
        later.call.pos,
        f"register {later.register}: {later.kind} at index {_text(later.index)} but "
        f"{earlier.kind} at index {_text(earlier.index)} "
        f"({_where(earlier.call.pos, later.call.pos)}); {_RMW_RULE}",
    )


def _same_expr(a: A.Expr | None, b: A.Expr | None) -> bool:
    """Structural equality after parsing and name resolution: the same names (the same
    declarations), fields, operators and casts; constants compare by value."""
    if a is None or b is None:
        return a is b
    ca, cb = _const(a), _const(b)
    if ca is not None or cb is not None:
        return ca is not None and cb is not None and ca == cb
    if type(a) is not type(b):
        return False
    if isinstance(a, A.Name):
        sa, sb = getattr(a, "sym", None), getattr(b, "sym", None)
        if sa is not None and sb is not None:
            return sa is sb
        return a.name == b.name and a.dot == b.dot
    if isinstance(a, A.Member):
        return a.name == b.name and _same_expr(a.expr, b.expr)
    if isinstance(a, A.Index):
        return _same_expr(a.expr, b.expr) and _same_expr(a.index, b.index)
    if isinstance(a, A.Slice):
        return all(_same_expr(x, y) for x, y in ((a.expr, b.expr), (a.hi, b.hi), (a.lo, b.lo)))
    if isinstance(a, A.Cast):
        return str(a.type) == str(b.type) and _same_expr(a.expr, b.expr)
    if isinstance(a, A.Unary):
        return a.op == b.op and _same_expr(a.expr, b.expr)
    if isinstance(a, A.Binary):
        return a.op == b.op and _same_expr(a.left, b.left) and _same_expr(a.right, b.right)
    if isinstance(a, A.Mux):
        return all(
            _same_expr(x, y) for x, y in ((a.cond, b.cond), (a.then, b.then), (a.other, b.other))
        )
    return False  # calls and anything else: no promise that two evaluations agree


def _text(e: A.Expr | None) -> str:
    """A short source-like rendering of an index expression, for messages."""
    if e is None:
        return "_"
    if isinstance(e, A.IntLit):
        return e.text or str(e.value)
    if isinstance(e, A.BoolLit):
        return "true" if e.value else "false"
    if isinstance(e, A.Name):
        return ("." if e.dot else "") + e.name
    if isinstance(e, A.Member):
        return f"{_text(e.expr)}.{e.name}"
    if isinstance(e, A.Index):
        return f"{_text(e.expr)}[{_text(e.index)}]"
    if isinstance(e, A.Slice):
        return f"{_text(e.expr)}[{_text(e.hi)}:{_text(e.lo)}]"
    if isinstance(e, A.Cast):
        return f"({e.type}){_text(e.expr)}"
    if isinstance(e, A.Unary):
        return f"{e.op}{_text(e.expr)}"
    if isinstance(e, A.Binary):
        return f"{_text(e.left)} {e.op} {_text(e.right)}"
    if isinstance(e, A.Call):
        return f"{_text(e.func)}(...)"
    return "an expression"


# ------------------------------------------------------------------ 5. parse budget


def _parse_budget(checked: CheckedProgram) -> None:
    main = checked.main
    if main is None or not main.args or main.args[0].value is None:
        return
    parser = getattr(main.args[0].value.type, "decl", None)
    if not isinstance(parser, A.ParserDecl):
        return
    bits, path = _ParseDepth().longest(parser)
    if bits > PARSE_BUDGET_BITS:
        raise CompileError(
            parser.pos,
            f"parser {parser.name}: extracts up to {bits} bits ({bits // 8} bytes) along "
            f"{' -> '.join(path)}, over Tofino's parse budget of {PARSE_BUDGET_BITS} bits "
            f"({PARSE_BUDGET_BITS // 8} bytes) per pass",
        )


class _ParseDepth:
    """The most header bits a parser extracts along any path from ``start``.

    A state counts every ``extract`` in it (a stack element its header's width, a varbit
    field its maximum width), every ``advance`` by a constant, and the longest path of any
    sub-parser it applies. Loops were rejected before, so the state graph is acyclic.
    """

    def __init__(self) -> None:
        self.parsers: dict[int, tuple[int, list[str]]] = {}

    def longest(self, parser: A.ParserDecl) -> tuple[int, list[str]]:
        if id(parser) in self.parsers:
            return self.parsers[id(parser)]
        self.parsers[id(parser)] = (0, [])  # guards against a parser that applies itself
        states = {s.name: s for s in parser.states}
        memo: dict[str, tuple[int, list[str]]] = {}
        # states in reverse topological order: a state after every state it can reach
        order: list[str] = []
        seen: set[str] = set()
        todo: list[tuple[str, bool]] = [("start", False)]
        while todo:
            name, finished = todo.pop()
            if finished:
                order.append(name)
                continue
            if name in seen or name not in states:
                continue
            seen.add(name)
            todo.append((name, True))
            for target, _ in reversed(_transitions(states[name])):
                todo.append((target, False))
        for name in order:
            best: tuple[int, list[str]] = (0, [])
            for target, _ in _transitions(states[name]):
                if target in ("accept", "reject"):
                    candidate: tuple[int, list[str]] = (0, [target])
                else:
                    candidate = memo.get(target, (0, []))
                if candidate[0] > best[0] or not best[1]:
                    best = candidate
            own = self.state_bits(states[name])
            memo[name] = (own + best[0], [name, *best[1]])
        result = memo.get("start", (0, []))
        self.parsers[id(parser)] = result
        return result

    def state_bits(self, state: A.ParserState) -> int:
        total = 0
        for n in _nodes([state.stmts]):
            if not isinstance(n, A.Call) or not isinstance(n.func, A.Member):
                continue
            target = _target(n)
            if target[0] == "method" and target[1].name == "packet_in" and n.args:
                arg = n.args[0].value
                if n.func.name == "extract" and arg is not None:
                    total += T.width_of(arg.type) or 0
                elif n.func.name == "advance":
                    amount = _const(arg)
                    if isinstance(amount, int) and not isinstance(amount, bool):
                        total += amount
            elif target == ("builtin", "apply"):
                t = n.func.expr.type
                t = t.type if isinstance(t, TypeValue) else t
                if isinstance(t, T.BlockT) and isinstance(t.decl, A.ParserDecl):
                    total += self.longest(t.decl)[0]
        return total
