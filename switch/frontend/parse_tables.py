"""Actions and tables: keys, action lists, entries and the other table properties."""

from __future__ import annotations

from . import ast as A
from .parse_base import ParserBase


class TablesMixin(ParserBase):
    """Parser methods for actions and tables (mixed into Parser)."""

    def action_decl(self) -> A.ActionDecl:
        pos = self.expect("action").pos
        name, _ = self.name("an action name")
        self.declare(name, False)
        self.push()
        params = self.params()
        lb = self.expect("{")
        body = self.block_rest(lb.pos)
        self.pop()
        return A.ActionDecl(pos, name, params, body)

    def table_decl(self) -> A.TableDecl:
        pos = self.tok.pos
        self.i += 1
        name, _ = self.name("a table name")
        self.declare(name, False)
        if self.at("(") and self.peek().text == ")":
            self.i += 2  # early P4_16 drafts allowed `table t() {`; p4c still accepts it
        self.expect("{")
        props: list[A.TableProperty] = []
        while not self.accept("}"):
            annos = self.annotations()
            ppos = self.tok.pos
            is_const = bool(self.accept("const"))
            pname, _ = self.name("a table property")
            if pname == "key":
                self.expect("=")
                value: object = self.key_elements()
            elif pname == "actions":
                self.expect("=")
                value = self.action_list()
            elif pname == "entries" and self.peek().text == "{":
                self.expect("=")
                value = self.entries(is_const)
            else:
                self.expect("=")
                value = self.expression()
                self.expect(";")
            props.append(A.TableProperty(ppos, pname, value, is_const, annos))
        return A.TableDecl(pos, name, props)

    def key_elements(self) -> list[A.KeyElement]:
        self.expect("{")
        keys = []
        while not self.accept("}"):
            pos = self.tok.pos
            e = self.expression()
            self.expect(":")
            mk, mkpos = self.name("a match kind")
            annos = self.annotations()
            self.expect(";")
            keys.append(A.KeyElement(pos, e, mk, annos, mkpos))
        return keys

    def action_list(self) -> list[A.ActionRef]:
        self.expect("{")
        refs = []
        while not self.accept("}"):
            annos = self.annotations()
            pos = self.tok.pos
            e = self.expression()
            self.expect(";")
            refs.append(A.ActionRef(pos, e, annos))
        return refs

    def entries(self, is_const: bool) -> list[A.Entry]:
        self.expect("{")
        entries = []
        while not self.accept("}"):
            annos = self.annotations()
            pos = self.tok.pos
            entry_const = bool(self.accept("const"))
            priority = None
            if self.tok.text == "priority" and self.peek().text == "=":
                self.i += 2
                priority = self.expression()
                self.expect(":")
            keyset = self.keyset()
            self.expect(":")
            action = self.expression()
            annos += self.annotations()
            self.expect(";")
            entries.append(A.Entry(pos, keyset, action, priority, entry_const or is_const, annos))
        self.accept(";")
        return entries
