"""Which values of the interpreter's generated Python may be negative (signed ``int<W>``).

The generated code keeps an ``int<W>`` value as a Python int in [-2^(W-1), 2^(W-1)); the
native engine keeps every value as ``uint64_t``, a negative one as its 64-bit two's
complement (the value modulo 2^64). Addition, subtraction, multiplication, left shifts,
``&``/``|``/``^``/``~``, equality and the interpreter's range wraps (``& m`` for ``bit<W>``,
``((x + h) & m) - h`` for ``int<W>``, W <= 64) give the same bits on that representation
whichever the sign. What does not: ordering comparisons, right shifts, saturation and
division, which must know whether an operand may be negative. The generated Python carries no
types, so this pass works it out from where values come from:

- slots of ``int<W>`` type (``Storage.signed``), cells of signed registers, negative constants;
- ``-x``, ``~x`` and any subtraction not masked back (the sign extension above);
- locals, parameters and function results, by a fixpoint over every assignment, call and
  ``return`` of the module (a local assigned a possibly negative value anywhere is signed
  everywhere; the interpreter's temporaries each hold one type, so this loses nothing);
- table actions' signed data parameters (sign-extended by the table's dispatch).

A value that can be negative is compared and shifted as ``int64_t``; a non-negative one as
``uint64_t`` (so ``bit<64>`` values of 2^63 and more compare right).
"""

from __future__ import annotations

import ast
from typing import Any


class Signs:
    def __init__(self, objects: Any, fdefs: list[ast.FunctionDef]) -> None:
        self.objects = objects
        self.slots: set[int] = objects.signed_slots
        self.cells: set[str] = objects.signed_cells
        self.names: dict[str, set[str]] = {f.name: set() for f in fdefs}
        self.params: dict[str, list[str]] = {f.name: [a.arg for a in f.args.args] for f in fdefs}
        self.returns: set[str] = set()
        for fn, params in objects.signed_params.items():
            self.names.setdefault(fn, set()).update(params)
        changed = True
        while changed:
            changed = False
            for f in fdefs:
                changed |= self._scan(f)

    def _mark(self, fn: str, name: str) -> bool:
        s = self.names.setdefault(fn, set())
        if name in s:
            return False
        s.add(name)
        return True

    def _scan(self, f: ast.FunctionDef) -> bool:
        changed = False
        fn = f.name
        for node in ast.walk(f):
            if isinstance(node, ast.Assign):
                for t in node.targets:
                    if isinstance(t, ast.Name) and self.neg(node.value, fn):
                        changed |= self._mark(fn, t.id)
                    elif isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple):
                        for x, v in zip(t.elts, node.value.elts, strict=False):
                            if isinstance(x, ast.Name) and self.neg(v, fn):
                                changed |= self._mark(fn, x.id)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                if self.neg(node.value, fn) or isinstance(node.op, ast.Sub):
                    changed |= self._mark(fn, node.target.id)
            elif isinstance(node, ast.Return) and node.value is not None:
                if fn not in self.returns and self.neg(node.value, fn):
                    self.returns.add(fn)
                    changed = True
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in self.params
            ):
                params = self.params[node.func.id]
                for p, a in zip(params[2:], node.args[2:], strict=False):
                    if self.neg(a, fn):
                        changed |= self._mark(node.func.id, p)
        return changed

    def neg(self, e: ast.expr, fn: str) -> bool:
        """Whether ``e`` (in generated function ``fn``) may be negative."""
        if isinstance(e, ast.Constant):
            v = e.value
            return isinstance(v, int) and not isinstance(v, bool) and v < 0
        if isinstance(e, ast.Name):
            return e.id in self.names.get(fn, ())
        if isinstance(e, ast.Subscript):
            base = e.value
            if isinstance(base, ast.Name) and base.id == "S":
                s = e.slice
                if isinstance(s, ast.Constant) and isinstance(s.value, int):
                    return s.value in self.slots
                # S[IX[i]]: an element of a header stack picked at run time
                if isinstance(s, ast.Subscript) and isinstance(s.value, ast.Name):
                    table = self.objects.pipeline.namespace.get(s.value.id)
                    if isinstance(table, tuple):
                        return any(x in self.slots for x in table)
                return True
            if isinstance(base, ast.Name):
                return base.id in self.cells
            return False
        if isinstance(e, ast.BinOp):
            op = type(e.op)
            if op is ast.Sub:
                return True
            a, b = self.neg(e.left, fn), self.neg(e.right, fn)
            if op is ast.BitAnd:
                return a and b
            return a or b
        if isinstance(e, ast.UnaryOp):
            return not isinstance(e.op, ast.Not)
        if isinstance(e, ast.IfExp):
            return self.neg(e.body, fn) or self.neg(e.orelse, fn)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Name):
            f = e.func.id
            if f in ("min", "max", "int"):
                return any(self.neg(a, fn) for a in e.args)
            return f in self.returns
        return False
