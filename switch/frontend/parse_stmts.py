"""Statements: blocks, if, switch, for loops, assignments, calls and local declarations."""

from __future__ import annotations

from . import ast as A
from .errors import CompileError, SourcePos
from .parse_base import COMPOUND, TYPE_KEYWORDS, ParserBase


class StmtsMixin(ParserBase):
    """Parser methods for statements (mixed into Parser)."""

    def block_rest(self, pos: SourcePos) -> A.Block:
        """Statements up to the closing brace (the opening one is already consumed)."""
        self.enter()
        self.push()
        stmts = []
        while not self.accept("}"):
            if self.tok.kind == "eof":
                raise self.error("'}'")
            stmts.append(self.statement())
        self.pop()
        self.depth -= 1
        return A.Block(pos, stmts)

    def statement(self) -> A.Stmt:
        annos = self.annotations() if self.at("@") or self.tok.kind == "pragma" else []
        t = self.tok
        pos = t.pos
        if t.kind == "punct":
            if t.text == "{":
                self.i += 1
                b = self.block_rest(pos)
                b.annotations = annos
                return b
            if t.text == ";":
                self.i += 1
                return A.Empty(pos)
        elif t.kind == "kw":
            kw = t.text
            if kw == "if":
                self.i += 1
                self.expect("(")
                cond = self.expression()
                self.expect(")")
                self.enter()
                then = self.statement()
                other = self.statement() if self.accept("else") else None
                self.depth -= 1
                return A.If(pos, cond, then, other)
            if kw == "switch":
                return self.switch_stmt()
            if kw == "exit":
                self.i += 1
                self.expect(";")
                return A.Exit(pos)
            if kw == "return":
                self.i += 1
                value = None if self.at(";") else self.expression()
                self.expect(";")
                return A.Return(pos, value)
            if kw == "const":
                d = self.const_decl()
                d.annotations = annos
                return d
            if kw == "for":
                return self.for_stmt()
            if kw == "break":
                self.i += 1
                self.expect(";")
                return A.Break(pos)
            if kw == "continue":
                self.i += 1
                self.expect(";")
                return A.Continue(pos)
            if kw == "transition":
                raise CompileError(
                    pos, "transition statement is only allowed at the end of a parser state"
                )
        if self.starts_declaration():
            typeref = self.typeref()
            if self.at("("):
                inst = self.instance_rest(pos, typeref)
                inst.annotations = annos
                return inst
            name, _ = self.name("a variable name")
            init = self.expression() if self.accept("=") else None
            self.expect(";")
            self.declare(name, False)
            return A.VarDecl(pos, name, typeref, init, annotations=annos)
        return self.simple_statement(pos)

    def simple_statement(self, pos: SourcePos) -> A.Stmt:
        lhs = self.postfix_expression()
        if self.accept("="):
            rhs = self.expression()
            self.expect(";")
            return A.Assign(pos, lhs, rhs)
        op = self.compound_operator()
        if op is not None:
            # `a op= b` is `a = a op b` (p4c evaluates the l-value once; ours has no side effects)
            rhs = self.expression()
            self.expect(";")
            return A.Assign(pos, lhs, A.Binary(pos, op, lhs, rhs))
        if isinstance(lhs, A.Call):
            self.expect(";")
            return A.CallStmt(pos, lhs)
        raise self.error("'=' or '('")

    def compound_operator(self) -> str | None:
        t = self.tok
        if t.kind != "punct":
            return None
        if t.text in COMPOUND:
            self.i += 1
            return t.text[:-1]
        if t.text == ">" and t.tight and self.peek().text == ">=":
            self.i += 2
            return ">>"
        return None

    def starts_declaration(self) -> bool:
        t = self.tok
        if t.kind == "kw":
            return t.text in TYPE_KEYWORDS and not (t.text == "error" and self.peek().text == ".")
        if t.kind == "id":
            nxt = self.peek()
            if t.text == "list" and nxt.text == "<":
                return True
            if self.is_type_name(t.text):
                return nxt.text != "."
            return False
        if t.text == "." and self.peek().kind == "id":
            return self.scopes[0].get(self.peek().text, False)
        return False

    def switch_stmt(self) -> A.Switch:
        pos = self.expect("switch").pos
        self.expect("(")
        e = self.expression()
        self.expect(")")
        self.expect("{")
        cases = []
        while not self.accept("}"):
            cpos = self.tok.pos
            if self.at("default"):
                self.i += 1
                label: A.Expr = A.Default(cpos)
            else:
                label = self.expression()
            self.expect(":")
            body = None
            if self.at("{"):
                lb = self.expect("{")
                body = self.block_rest(lb.pos)
            cases.append(A.SwitchCase(cpos, label, body))
        return A.Switch(pos, e, cases)

    def for_stmt(self) -> A.Stmt:
        pos = self.expect("for").pos
        self.expect("(")
        self.push()
        # `for (T x in e)` / `for (x in e)`
        save = self.i
        var_type = None
        if self.starts_declaration():
            var_type = self.typeref()
        if self.tok.kind == "id" and self.peek().text == "in":
            var, _ = self.name()
            self.expect("in")
            coll = self.expression()
            self.expect(")")
            self.declare(var, False)
            body = self.statement()
            self.pop()
            return A.ForIn(pos, var_type, var, coll, body)
        self.i = save
        init = self.for_clause(";")
        self.expect(";")
        cond = None if self.at(";") else self.expression()
        self.expect(";")
        update = self.for_clause(")")
        self.expect(")")
        body = self.statement()
        self.pop()
        return A.For(pos, init, cond, update, body)

    def for_clause(self, end: str) -> list[A.Stmt]:
        stmts: list[A.Stmt] = []
        while not self.at(end):
            pos = self.tok.pos
            if self.starts_declaration():
                typeref = self.typeref()
                name, _ = self.name()
                self.expect("=")
                init = self.expression()
                self.declare(name, False)
                stmts.append(A.VarDecl(pos, name, typeref, init))
            else:
                lhs = self.postfix_expression()
                if self.accept("="):
                    stmts.append(A.Assign(pos, lhs, self.expression()))
                elif isinstance(lhs, A.Call):
                    stmts.append(A.CallStmt(pos, lhs))
                else:
                    raise self.error("'='")
            if not self.accept(","):
                break
        return stmts
