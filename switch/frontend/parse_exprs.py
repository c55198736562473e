"""Expressions: precedence climbing, prefix and postfix operators, casts, calls, literals."""

from __future__ import annotations

from . import ast as A
from .errors import CompileError
from .parse_base import BINARY_PRECEDENCE, TYPE_KEYWORDS, ParserBase


class ExprsMixin(ParserBase):
    """Parser methods for expressions (mixed into Parser)."""

    def expression(self, min_prec: int = 1) -> A.Expr:
        self.enter()
        left = self.prefix_expression()
        while True:
            t = self.tok
            if t.kind != "punct":
                break
            op = t.text
            if op == ">" and t.tight and self.peek().text == ">":
                op = ">>"
            if op == "?":
                if min_prec > 1:
                    break
                self.i += 1
                then = self.expression()
                self.expect(":")
                other = self.expression(1)
                left = A.Mux(left.pos, left, then, other)
                continue
            prec = BINARY_PRECEDENCE.get(op)
            if prec is None or prec < min_prec:
                break
            self.i += 2 if op == ">>" else 1
            right = self.expression(prec + 1)
            left = A.Binary(t.pos, op, left, right)
        self.depth -= 1
        return left

    def prefix_expression(self) -> A.Expr:
        t = self.tok
        if t.kind == "punct":
            if t.text in ("!", "~", "-", "+"):
                self.i += 1
                self.enter()
                operand = self.prefix_expression()
                self.depth -= 1
                return operand if t.text == "+" else A.Unary(t.pos, t.text, operand)
            if t.text == "(" and self.is_cast():
                self.i += 1
                typeref = self.typeref()
                self.expect(")")
                self.enter()
                operand = self.prefix_expression()
                self.depth -= 1
                return A.Cast(t.pos, typeref, operand)
        return self.postfix_expression()

    def is_cast(self) -> bool:
        nxt = self.peek()
        if nxt.kind == "kw":
            return nxt.text in TYPE_KEYWORDS and not (
                nxt.text == "error" and self.peek(2).text == "."
            )
        if nxt.kind == "id":
            if nxt.text == "list" and self.peek(2).text == "<":
                return True
            return self.is_type_name(nxt.text) and self.peek(2).text != "."
        return False

    def postfix_expression(self) -> A.Expr:
        e = self.primary()
        while True:
            t = self.tok
            if t.kind != "punct":
                break
            if t.text == ".":
                self.i += 1
                nt = self.tok
                if nt.kind not in ("id", "kw"):
                    raise self.error("a member name")
                self.i += 1
                e = A.Member(t.pos, e, nt.text)
            elif t.text == "[":
                self.i += 1
                index = self.expression()
                if self.accept(":"):
                    lo = self.expression()
                    self.expect("]")
                    e = A.Slice(t.pos, e, index, lo)
                else:
                    self.expect("]")
                    e = A.Index(t.pos, e, index)
            elif t.text == "(":
                e = A.Call(e.pos, e, self.arguments())
            elif t.text == "<" and self.looks_like_type_args():
                type_args = self.type_args()
                e = A.Call(e.pos, e, self.arguments(), type_args)
            else:
                break
        return e

    def looks_like_type_args(self) -> bool:
        """After an expression, `<` starts type arguments when `<types>(` follows."""
        save = self.i
        try:
            self.type_args()
            return self.at("(")
        except CompileError:
            return False
        finally:
            self.i = save

    def arguments(self) -> list[A.Argument]:
        self.expect("(")
        args: list[A.Argument] = []
        if not self.at(")"):
            while True:
                t = self.tok
                name = None
                if t.kind == "id" and self.peek().text == "=" and self.peek(2).text != "=":
                    name = t.text
                    self.i += 2
                vt = self.tok
                if vt.kind == "id" and vt.text == "_" and self.peek().text in (",", ")"):
                    self.i += 1
                    args.append(A.Argument(vt.pos, None, name))
                else:
                    args.append(A.Argument(vt.pos, self.expression(), name))
                if not self.accept(","):
                    break
        self.expect(")")
        return args

    def primary(self) -> A.Expr:
        t = self.tok
        pos = t.pos
        kind = t.kind
        if kind == "num":
            self.i += 1
            value, width, signed = t.value
            return A.IntLit(pos, value, width, signed, t.text)
        if kind == "id":
            self.i += 1
            if t.text == "_":
                return A.DontCare(pos)
            return A.Name(pos, t.text)
        if kind == "str":
            self.i += 1
            return A.StringLit(pos, _unescape(t.text[1:-1]))
        if kind == "kw":
            text = t.text
            if text in ("true", "false"):
                self.i += 1
                return A.BoolLit(pos, text == "true")
            if text == "this":
                self.i += 1
                return A.ThisExpr(pos)
            if text in ("error", "bit", "int", "varbit", "bool", "string", "match_kind", "tuple"):
                if text == "error" and self.peek().text == ".":
                    self.i += 1
                    return A.Name(pos, "error")
                return A.TypeExpr(pos, self.typeref())
            if text == "default":
                self.i += 1
                return A.Default(pos)
        if kind == "punct":
            if t.text == "(":
                self.i += 1
                self.enter()
                e = self.expression()
                self.depth -= 1
                self.expect(")")
                return e
            if t.text == "{":
                return self.brace_expression()
            if t.text == "." and self.peek().kind == "id":
                self.i += 2
                return A.Name(pos, self.toks[self.i - 1].text, dot=True)
        raise self.error("an expression")

    def brace_expression(self) -> A.Expr:
        pos = self.expect("{").pos
        self.enter()
        if self.accept("}"):
            self.depth -= 1
            return A.ListExpr(pos, [])
        if self.tok.kind == "id" and self.peek().text == "=" and self.peek(2).text != "=":
            fields = []
            while True:
                fname, _ = self.name("a field name")
                self.expect("=")
                fields.append((fname, self.expression()))
                if not self.accept(",") or self.at("}"):
                    break
            self.expect("}")
            self.depth -= 1
            return A.StructInit(pos, fields)
        items = [self.expression()]
        while self.accept(","):
            if self.at("}"):
                break
            items.append(self.expression())
        self.expect("}")
        self.depth -= 1
        return A.ListExpr(pos, items)


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            out.append({"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"'}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)
