"""Statements and functions of the interpreter's generated Python, as C.

Every generated function becomes ``static int NAME(uint64_t *S, p4r_pkt *P, args...)``
returning a status: ``P4R_OK``, or ``P4R_EXIT`` / ``P4R_PARSER_ERR`` standing for the
Python exceptions ``ExitPipeline`` / ``ParserError``. A status leaves through the innermost
``try``/``finally`` (the copy-out of copy-in/copy-out, which must run on ``exit`` too) by a
``goto`` to the C code of its ``finally`` block, else by returning it. Functions that return a
value (parser states return the next state, P4 functions their result) write it through a
last ``uint64_t *_ret`` parameter.
"""

from __future__ import annotations

import ast
from typing import Any

from .cexprs import ExprTx, FnCtx, Unsupported, const, mask_width
from .cexterns import ExternTx
from .cwide import WideTx, words


class StmtTx(ExprTx, ExternTx, WideTx):
    def __init__(self, objects: Any) -> None:
        self.objects = objects
        self.fn = FnCtx("")
        self._wbc = {}
        self.lines: list[str] = []
        self.depth = 1
        self.labels = 0

    # ------------------------------------------------------------------ output
    def out(self, line: str) -> None:
        self.lines.append("    " * self.depth + line)

    def label(self, hint: str) -> str:
        self.labels += 1
        return f"_{hint}{self.labels}"

    def check(self, call: str) -> None:
        """Run a call that returns a status; leave through the current handler if it raised."""
        self.out(f"if ((_rc = {call}) != P4R_OK) {{ {self.raise_code()} }}")

    # ------------------------------------------------------------------ functions
    def function(self, f: ast.FunctionDef) -> tuple[str, str]:
        """The C prototype and definition of one generated function."""
        args = [a.arg for a in f.args.args]
        if args[:2] != ["S", "P"]:
            raise Unsupported(f"the function {f.name} (not a pipeline function)")
        self.fn = FnCtx(f.name)
        self._wbc = {}
        self.bb_bits: dict[str, int] = {}
        self.lines = []
        self.depth = 1
        self.returns = self.objects.returns_value(f.name)
        self.is_key = f.name in self.objects.key_fns
        wide = self.objects.wide_params.get(f.name, {})
        for j, a in enumerate(args[2:]):
            self.fn.locals[a] = "wparam" if j in wide else "param"
            if j in wide:  # an action argument over 64 bits: a p4r_w (cwide.py)
                self.fn.wbits[a] = wide[j]
        self.collect_locals(f.body)
        self.infer_local_widths(f.body)  # locals that may hold more than 64 bits: cwide.py
        self.block(f.body)
        params = ["uint64_t *S", "p4r_pkt *P"] + [
            f"{'p4r_w' if self.fn.locals[a] == 'wparam' else 'uint64_t'} {a}" for a in args[2:]
        ]
        if self.returns or self.is_key:
            params.append("uint64_t *_ret")
        proto = f"static int {f.name}({', '.join(params)})"
        decls = ["    int _rc = P4R_OK;", "    (void)_rc; (void)S; (void)P;"]
        for name, kind in self.fn.locals.items():
            if kind == "u64":
                decls.append(f"    uint64_t {name} = 0;")
            elif kind == "w":
                decls.append(f"    p4r_w {name}; memset(&{name}, 0, sizeof {name});")
            elif kind == "view":
                decls.append(f"    const uint8_t *{name} = NULL; (void){name};")
            elif kind == "bb":
                decls.append(f"    p4r_bitbuf {name}; {name}.nbits = 0;")
        body = "\n".join([proto + " {", *decls, *self.lines, "    return P4R_OK;", "}"])
        return proto + ";", body

    def collect_locals(self, body: list[ast.stmt]) -> None:
        for node in ast.walk(ast.Module(body=body, type_ignores=[])):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
                value = node.value
                for t in targets:
                    if isinstance(t, ast.Name):
                        self.note_local(t.id, value)
                    elif isinstance(t, ast.Tuple):
                        for x in t.elts:
                            if isinstance(x, ast.Name):
                                self.note_local(x.id, None)
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.note_local(node.target.id, None)

    def note_local(self, name: str, value: ast.expr | None) -> None:
        if name in ("S", "P"):
            raise Unsupported("an assignment to S or P")
        kind = "u64"
        if value is not None and _is_from_bytes(value):
            kind = "view"
        elif name.startswith("_a") and self.fn.locals.get(name) in (None, "bb"):
            if value is not None and (_is_zero(value) or _is_to_bytes(value)):
                kind = "bb"
            elif self.fn.locals.get(name) == "bb":
                kind = "bb"
        if self.fn.locals.get(name) not in (None, kind):
            if self.fn.locals[name] == "bb" and kind == "u64":
                return
            raise Unsupported(f"the local {name} used for two kinds of value")
        self.fn.locals.setdefault(name, kind)
        if kind == "bb":
            self.fn.locals[name] = "bb"

    # ------------------------------------------------------------------ statements
    def block(self, body: list[ast.stmt]) -> None:
        for s in body:
            m = getattr(self, "s_" + type(s).__name__, None)
            if m is None:
                raise Unsupported(f"the Python statement {type(s).__name__}")
            m(s)

    def s_Pass(self, s: ast.Pass) -> None:
        pass

    def s_If(self, s: ast.If) -> None:
        if self.extern_if(s):  # an extern's own test (truncate): cexterns.py
            return
        self.out(f"if ({self.truth(s.test)}) {{")
        self.depth += 1
        self.block(s.body)
        self.depth -= 1
        if s.orelse:
            self.out("} else {")
            self.depth += 1
            self.block(s.orelse)
            self.depth -= 1
        self.out("}")

    def s_While(self, s: ast.While) -> None:
        if s.orelse:
            raise Unsupported("while ... else")
        self.out(f"while ({self.truth(s.test)}) {{")
        self.depth += 1
        self.block(s.body)
        self.depth -= 1
        self.out("}")

    def s_Return(self, s: ast.Return) -> None:
        v = s.value
        if self.is_key:
            if not isinstance(v, ast.Tuple):
                raise Unsupported("a table key function that does not return a tuple")
            cols = self.objects.key_fn_words.get(self.fn.name)
            if cols is None:
                for i, x in enumerate(v.elts):
                    self.out(f"_ret[{i}] = {self.expr(x)};")
            else:  # keys over 64 bits: one column per word, least significant first
                col = 0
                for x, n in zip(v.elts, cols, strict=True):
                    if n == 1:
                        self.out(f"_ret[{col}] = {self.expr(x)};")
                    else:
                        self.note_bits(64 * n)
                        self.out(
                            f"{{ p4r_w _k = {self.wexpr(x)}; memcpy(_ret + {col}, _k.w, {8 * n}); }}"
                        )
                    col += n
            self.out("return P4R_OK;")
            return
        if self.fn.name in self.objects.sel_fns and v is not None:
            self.out(f"*_ret = {self.selector_hash(v)};")  # an action selector's key: cexterns
        elif self.returns:
            self.out(f"*_ret = {self.expr(v) if v is not None else '0'};")
        elif v is not None and not (isinstance(v, ast.Constant) and v.value is None):
            raise Unsupported(f"a value returned by {self.fn.name}")
        self.out("return P4R_OK;")

    def s_Raise(self, s: ast.Raise) -> None:
        e = s.exc
        if isinstance(e, ast.Call) and not e.args and ast.unparse(e.func) == "ExitPipeline":
            e = e.func
        if isinstance(e, ast.Name) and e.id == "ExitPipeline":
            self.out(f"_rc = P4R_EXIT; {self.raise_code()}")
            return
        if (
            isinstance(e, ast.Call)
            and isinstance(e.func, ast.Name)
            and e.func.id == "ParserError"
            and len(e.args) == 1
            and isinstance(e.args[0], ast.Constant)
        ):
            code = e.args[0].value
            self.out(f"P->perr = {int(code)}; _rc = P4R_PARSER_ERR; {self.raise_code()}")
            return
        if self.extern_raise(e):  # P4RuntimeFault (assert/assume): cexterns.py
            return
        raise Unsupported(f"raise {ast.unparse(e) if e else ''} (a runtime fault)")

    def s_Try(self, s: ast.Try) -> None:
        if s.handlers or s.orelse or not s.finalbody:
            raise Unsupported("try/except")
        for node in ast.walk(ast.Module(body=s.body, type_ignores=[])):
            if isinstance(node, (ast.Return, ast.While)):
                raise Unsupported("a return or loop inside try/finally")
        fin = self.label("fin")
        self.out("{")
        self.depth += 1
        self.fn.onexc.append(f"goto {fin};")
        self.block(s.body)
        self.fn.onexc.pop()
        self.depth -= 1
        self.out(f"{fin}: ;")
        self.depth += 1
        self.out("int _saved = _rc; _rc = P4R_OK;")
        self.block(s.finalbody)
        self.out(f"if (_saved != P4R_OK) {{ _rc = _saved; {self.raise_code()} }}")
        self.depth -= 1
        self.out("}")

    def s_Expr(self, s: ast.Expr) -> None:
        e = s.value
        if not isinstance(e, ast.Call):
            raise Unsupported(f"the expression statement {ast.unparse(e)}")
        self.call_stmt(e)

    def s_AugAssign(self, s: ast.AugAssign) -> None:
        t = s.target
        op = {ast.Add: "+", ast.Sub: "-"}.get(type(s.op))
        if op is None:
            raise Unsupported(f"the augmented assignment {ast.unparse(s)}")
        if isinstance(t, ast.Attribute) and ast.unparse(t) == "P.length":
            self.out(f"P->length {op}= (int64_t){self.expr(s.value)};")
            return
        if isinstance(t, ast.Name) and t.id.startswith("_w") and self.fn.locals.get(t.id) == "u64":
            self.out(f"{t.id} {op}= {self.expr(s.value)};")  # widths of bit buffers
            return
        if isinstance(t, ast.Name) and self.fn.locals.get(t.id) == "u64":
            # wraps modulo 2^64 like the narrow path's values (a negative result: csigns.py)
            self.out(f"{t.id} {op}= {self.low(s.value)};")
            return
        if isinstance(t, ast.Attribute) and ast.unparse(t) == "P.pos" and op == "+":
            self.out(f"P->pos += (uint32_t){self.expr(s.value)};")
            return
        if self.extern_augassign(s):  # a checksum's payload: cexterns.py
            return
        raise Unsupported(f"the augmented assignment {ast.unparse(s)}")

    def s_Assign(self, s: ast.Assign) -> None:
        if len(s.targets) != 1:
            raise Unsupported("a chained assignment")
        t, v = s.targets[0], s.value
        if isinstance(t, ast.Tuple):
            if not isinstance(v, ast.Tuple) or len(v.elts) != len(t.elts):
                raise Unsupported("a tuple assignment")
            # a parallel assignment (a header copy): every value first, then every store;
            # wide and varbit values through temporaries of their own kind (cwide.py)
            self.out("{")
            self.depth += 1
            stores = []
            for i, (x, val) in enumerate(zip(t.elts, v.elts, strict=True)):
                tmp = f"_tv{i}"
                if (k := self.varbit_slot(x)) is not None:
                    src = self.varbit_slot(val)
                    n = 1 + words(self.objects.vmax[k])
                    if src is None or 1 + words(self.objects.vmax[src]) != n:
                        raise Unsupported(f"the varbit assignment {ast.unparse(s)}")
                    self.out(
                        f"uint64_t {tmp}[{n}]; memcpy({tmp}, S + {self.objects.base[src]}, {n * 8});"
                    )
                    stores.append(f"memcpy(S + {self.objects.base[k]}, {tmp}, {n * 8});")
                elif (k := self.wide_slot(x)) is not None:
                    self.note_bits(self.objects.slot_bits(k))
                    n = words(self.objects.slot_bits(k))
                    self.out(f"p4r_w {tmp} = {self.wexpr(val)};")
                    stores.append(f"p4r_w_st(S + {self.objects.base[k]}, {n}, {tmp});")
                elif isinstance(x, ast.Name) and self.fn.locals.get(x.id) == "w":
                    self.out(f"p4r_w {tmp} = {self.wexpr(val)};")
                    stores.append(f"{x.id} = {tmp};")
                else:
                    self.out(
                        f"uint64_t {tmp} = {self.low(val) if _is_slot(x) else self.expr(val)};"
                    )
                    stores.append(f"{self.target(x)} = {tmp};")
            for line in stores:
                self.out(line)
            self.depth -= 1
            self.out("}")
            return
        if isinstance(t, ast.Name):
            kind = self.fn.locals.get(t.id)
            if kind == "view":
                self.assign_view(t.id, v)
                return
            if kind == "bb":
                self.assign_bitbuf(t.id, v)
                return
            if kind in ("param", "wparam"):
                raise Unsupported("an assignment to an action parameter")
        if isinstance(t, ast.Attribute) and ast.unparse(t) == "P.pos":
            self.out(f"P->pos = (uint32_t){self.expr(v)};")
            return
        if self.extern_assign(t, v):  # clone, resubmit, recirculate requests: cexterns.py
            return
        wide = self.wide_store(t, v)  # a wide or varbit slot, a wide local: cwide.py
        if wide is not None:
            self.out(wide)
            return
        if _is_slot(t):
            # a field or metadata slot of at most 64 bits: the interpreter stores only values
            # in its type's range, so the value modulo 2^64 is the value
            self.out(f"{self.target(t)} = {self.low(v)};")
            return
        self.out(f"{self.target(t)} = {self.expr(v)};")

    def target(self, t: ast.expr) -> str:
        if isinstance(t, ast.Subscript):
            return self.x_Subscript(t)
        if isinstance(t, ast.Name) and self.fn.locals.get(t.id) == "u64":
            return t.id
        raise Unsupported(f"the assignment target {ast.unparse(t)}")

    def x_Name(self, e: ast.Name) -> str:  # parameters are plain C arguments
        if self.fn.locals.get(e.id) == "param":
            return e.id
        if self.fn.locals.get(e.id) == "wparam":  # its low word (only low bits wanted here)
            return f"{e.id}.w[0]"
        return super().x_Name(e)

    # ------------------------------------------------------------------ parser extraction
    def assign_view(self, name: str, v: ast.expr) -> None:
        # _x = int.from_bytes(P.data[_p:_e], 'big'), after _e = _p + N and a length check
        sl = v.args[0].slice  # type: ignore[attr-defined]
        if not isinstance(sl, ast.Slice) or sl.lower is None or sl.upper is None:
            raise Unsupported("a packet read without bounds")
        lo, hi = self.expr(sl.lower), self.expr(sl.upper)
        self.fn.views[name] = (name, f"(uint32_t)({hi} - {lo})")
        self.out(f"{name} = P->data + {lo};")

    # ------------------------------------------------------------------ bit buffers
    def assign_bitbuf(self, name: str, v: ast.expr) -> None:
        if _is_zero(v):
            self.out(f"p4r_bb_reset(&{name});")
            return
        # _a = (_a << W) | value
        if (
            isinstance(v, ast.BinOp)
            and isinstance(v.op, ast.BitOr)
            and isinstance(v.left, ast.BinOp)
            and isinstance(v.left.op, ast.LShift)
            and isinstance(v.left.left, ast.Name)
            and v.left.left.id == name
        ):
            if isinstance(v.left.right, ast.Constant):
                w = int(v.left.right.value)
                bound, width = w, str(w)
            else:  # a varbit field: (_a << S[k][0]) | S[k][1], its width at run time
                bound, width = self.wb(v.right), self.expr(v.left.right)
                if bound > 1 << 20:
                    raise Unsupported(f"a field list item of unknown width ({ast.unparse(v)})")
            # every push of the function, summed: a bound on the buffer's length
            self.bb_bits[name] = self.bb_bits.get(name, 0) + bound
            self.objects.note_bitbuf(self.bb_bits[name] + 8)
            if bound > 64 or not isinstance(v.left.right, ast.Constant):
                self.note_bits(bound)
                self.out(f"p4r_bb_push_w(&{name}, {self.wexpr(v.right)}, {width});")
            else:
                self.out(f"p4r_bb_push(&{name}, {self.expr(v.right)}, {width});")
            return
        # _a = (_a << (-_w % 8)).to_bytes((_w + 7) // 8, 'big'): pad to a byte
        if _is_to_bytes(v) and isinstance(v.func.value, ast.BinOp):  # type: ignore[attr-defined]
            inner = v.func.value  # type: ignore[attr-defined]
            if (
                isinstance(inner.op, ast.LShift)
                and isinstance(inner.left, ast.Name)
                and inner.left.id == name
            ):
                self.out(f"{name}.nbits = ({name}.nbits + 7) / 8 * 8;")
                return
            # _a = ((fields...) << pad).to_bytes(N, 'big'): a field list without validity guards
            nbytes = v.args[0]  # type: ignore[attr-defined]
            if not isinstance(nbytes, ast.Constant):
                raise Unsupported("a field list of run-time length")
            n = int(nbytes.value)
            self.out(f"p4r_bb_reset(&{name}); {name}.nbits = {n * 8};")
            self.pack_into(f"{name}.b", n, inner)
            self.objects.note_bitbuf(n * 8)
            return
        raise Unsupported(f"the field-list code {ast.unparse(v)}")

    def pack_into(self, buf: str, nbytes: int, value: ast.expr) -> None:
        """OR the terms of ``value`` (shifted fields, MSB first) into ``buf[0..nbytes)``."""
        terms: list[tuple[ast.expr, int]] = []

        # An explicit stack, not recursion: a K = 1024 payload is a chain of 1,024 `|`s,
        # deeper than Python's recursion limit. Left before right keeps the source order.
        stack: list[tuple[ast.expr, int]] = [(value, 0)]
        while stack:
            e, shift = stack.pop()
            if isinstance(e, ast.BinOp) and isinstance(e.op, ast.BitOr):
                stack.append((e.right, shift))
                stack.append((e.left, shift))
            elif (
                isinstance(e, ast.BinOp)
                and isinstance(e.op, ast.LShift)
                and isinstance(e.right, ast.Constant)
            ):
                stack.append((e.left, shift + int(e.right.value)))
            elif isinstance(e, ast.Constant) and e.value == 0:
                pass
            else:
                terms.append((e, shift))

        terms.sort(key=lambda x: -x[1])
        top = nbytes * 8
        for e, shift in terms:
            w = top - shift
            if w <= 0:
                raise Unsupported("a packed field of no width")
            if w > 64:  # a wide field: its words (cwide.py)
                self.note_bits(w)
                self.out(f"p4r_put_wide({buf}, {nbytes}, {shift}, {w}, {self.wexpr(e)});")
            else:
                self.out(f"p4r_put_bits({buf}, {nbytes}, {shift}, {w}, {self.low(e)});")
            top = shift


def _is_slot(e: ast.expr) -> bool:
    return isinstance(e, ast.Subscript) and ast.unparse(e.value) == "S"


def _is_zero(e: ast.expr) -> bool:
    return isinstance(e, ast.Constant) and e.value == 0 and not isinstance(e.value, bool)


def _is_to_bytes(e: ast.expr) -> bool:
    return (
        isinstance(e, ast.Call)
        and isinstance(e.func, ast.Attribute)
        and e.func.attr == "to_bytes"
        and len(e.args) == 2
    )


def _is_from_bytes(e: ast.expr) -> bool:
    return (
        isinstance(e, ast.Call)
        and ast.unparse(e.func) == "int.from_bytes"
        and len(e.args) == 2
        and isinstance(e.args[0], ast.Subscript)
        and ast.unparse(e.args[0].value) == "P.data"
    )


__all__ = ["StmtTx", "Unsupported", "const", "mask_width"]
