"""Type references: base types, widths, named and specialized types, stacks, type arguments."""

from __future__ import annotations

from . import ast as A
from .parse_base import TYPE_KEYWORDS, ParserBase


class TypesMixin(ParserBase):
    """Parser methods for type references (mixed into Parser)."""

    def starts_type(self) -> bool:
        t = self.tok
        if t.kind == "kw":
            return t.text in TYPE_KEYWORDS
        if t.kind == "id":
            if t.text == "_":
                return True
            if t.text == "list" and self.peek().text == "<":
                return True
            return self.is_type_name(t.text)
        if t.text == "." and self.peek().kind == "id":
            return self.scopes[0].get(self.peek().text, False)
        return False

    def typeref(self, allow_void: bool = False) -> A.TypeRef:
        t = self.tok
        pos = t.pos
        base: A.TypeRef
        if t.kind == "kw":
            self.i += 1
            if t.text in ("bit", "int"):
                if self.at("<"):
                    self.i += 1
                    width = self.width_expr()
                    self.expect(">")
                    base = A.BitsType(pos, width, t.text == "int")
                elif t.text == "bit":
                    base = A.BitsType(pos, None, False)
                else:
                    base = A.BaseType(pos, "int")
            elif t.text == "varbit":
                self.expect("<")
                width = self.width_expr()
                self.expect(">")
                base = A.VarbitType(pos, width)
            elif t.text in ("bool", "string", "error", "match_kind"):
                base = A.BaseType(pos, t.text)
            elif t.text == "void" and allow_void:
                base = A.BaseType(pos, "void")
            elif t.text == "tuple":
                base = A.TupleType(pos, self.type_args(), "tuple")
            else:
                raise self.error("a type", t)
        elif t.kind == "id" and t.text == "_":
            self.i += 1
            base = A.BaseType(pos, "_")
        elif t.kind == "id" and t.text == "list" and self.peek().text == "<":
            self.i += 1
            base = A.TupleType(pos, self.type_args(), "list")
        elif t.kind == "id" or t.text == ".":
            dot = bool(self.accept("."))
            name, _ = self.name("a type")
            named = A.NamedType(pos, name, dot)
            base = A.SpecializedType(pos, named, self.type_args()) if self.at("<") else named
        else:
            raise self.error("a type", t)
        while self.at("[") and not (self.peek().text == "]"):
            lb = self.expect("[")
            size = self.expression()
            self.expect("]")
            base = A.StackType(lb.pos, base, size)
        return base

    def width_expr(self) -> A.Expr:
        t = self.tok
        if t.kind == "num":
            self.i += 1
            value, width, signed = t.value
            return A.IntLit(t.pos, value, width, signed, t.text)
        if self.at("("):
            self.i += 1
            e = self.expression()
            self.expect(")")
            return e
        if t.kind == "id":
            self.i += 1
            return A.Name(t.pos, t.text)
        raise self.error("an integer width", t)

    def type_args(self) -> list[A.TypeRef]:
        self.expect("<")
        args = []
        while True:
            if self.at("void"):
                args.append(A.BaseType(self.tok.pos, "void"))
                self.i += 1
            elif self.tok.kind == "num":
                # a numeric type argument, e.g. `T<8>` for a generic width (p4c extension)
                t = self.tok
                self.i += 1
                args.append(A.BaseType(t.pos, f"#{t.value[0]}"))
            else:
                args.append(self.typeref())
            if not self.accept(","):
                break
        self.expect(">")
        return args
