"""Parser states: transitions, select expressions and keysets (also those of table entries)."""

from __future__ import annotations

from . import ast as A
from .errors import CompileError
from .parse_base import ParserBase


class ParsersMixin(ParserBase):
    """Parser methods for parser states and keysets (mixed into Parser)."""

    def parser_state(self) -> A.ParserState:
        pos = self.tok.pos
        self.i += 1
        name, _ = self.name("a state name")
        self.expect("{")
        self.push()
        stmts: list[A.Stmt] = []
        transition = None
        while not self.at("}"):
            if self.at("transition"):
                transition = self.transition()
                break
            stmts.append(self.statement())
        self.pop()
        self.expect("}")
        return A.ParserState(pos, name, stmts, transition)

    def transition(self) -> A.Expr:
        self.expect("transition")
        if self.at("select"):
            sel = self.select_expr()
            self.accept(";")  # p4c accepts the `;` after a select's closing brace as optional
            return sel
        name, pos = self.name("a state name")
        self.expect(";")
        return A.Name(pos, name)

    def select_expr(self) -> A.SelectExpr:
        pos = self.expect("select").pos
        self.expect("(")
        exprs = [self.expression()]
        while self.accept(","):
            exprs.append(self.expression())
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            self.annotations()
            cpos = self.tok.pos
            keyset = self.keyset()
            self.expect(":")
            state, spos = self.name("a state name")
            self.expect(";")
            cases.append(A.SelectCase(cpos, keyset, state, spos))
        return A.SelectExpr(pos, exprs, cases)

    def keyset(self) -> A.Expr:
        """A select/entry keyset: a tuple in parentheses, or one simple keyset."""
        if self.at("("):
            save = self.i
            pos = self.tok.pos
            self.i += 1
            try:
                items = [self.simple_keyset()]
                while self.accept(","):
                    items.append(self.simple_keyset())
                self.expect(")")
                if self.at(":"):
                    return items[0] if len(items) == 1 else A.ListExpr(pos, items)
            except CompileError:
                pass
            self.i = save
        return self.simple_keyset()

    def simple_keyset(self) -> A.Expr:
        t = self.tok
        if t.kind == "kw" and t.text == "default":
            self.i += 1
            return A.Default(t.pos)
        if t.kind == "id" and t.text == "_":
            self.i += 1
            return A.DontCare(t.pos)
        e = self.expression()
        if self.accept("&&&"):
            return A.Mask(e.pos, e, self.expression())
        if self.accept(".."):
            return A.Range(e.pos, e, self.expression())
        return e
