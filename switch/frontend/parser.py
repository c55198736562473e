"""Recursive-descent parser for P4_16 (the spec grammar, with p4c's operator precedence).

P4's grammar needs to know which identifiers name types (``T x;`` declares, ``x(y);`` calls,
``(T) e`` casts). Like p4c's lexer feedback, the parser keeps a scope stack recording which
names are types; declaring a variable with a type's name hides the type in that scope.
We chose recursive descent over a table-driven parser for this feedback and for precise
``FILE(LINE): error:`` messages (see docs/frontend.md).
"""

from __future__ import annotations

from . import ast as A
from .errors import CompileError, SourcePos
from .lexer import Token, tokenize

# p4c's precedence (p4parser.ypp): comparisons bind looser than bitwise operators.
BINARY_PRECEDENCE: dict[str, int] = {
    "||": 2,
    "&&": 3,
    "==": 4,
    "!=": 4,
    "<": 5,
    ">": 5,
    "<=": 5,
    ">=": 5,
    "|": 6,
    "^": 7,
    "&": 8,
    "<<": 9,
    ">>": 9,
    "++": 10,
    "+": 10,
    "-": 10,
    "|+|": 10,
    "|-|": 10,
    "*": 11,
    "/": 11,
    "%": 11,
}
COMPOUND = frozenset({"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", "|+|=", "|-|="})
TYPE_KEYWORDS = frozenset(
    {"bit", "int", "varbit", "bool", "string", "error", "match_kind", "tuple"}
)
SOFT_NAMES = frozenset({"apply", "key", "actions", "state", "entries", "type", "priority", "list"})
MAX_DEPTH = 100_000


class Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.toks = tokens
        self.i = 0
        # scope stack: name -> True when the name is a type in that scope
        self.scopes: list[dict[str, bool]] = [{}]
        self.depth = 0
        # `typedef struct S {...} T;` declares S too; it is emitted just before the typedef
        self.pending_decls: list[A.Decl] = []

    # ------------------------------------------------------------------ token helpers
    @property
    def tok(self) -> Token:
        return self.toks[self.i]

    def peek(self, k: int = 1) -> Token:
        j = self.i + k
        return self.toks[j] if j < len(self.toks) else self.toks[-1]

    def at(self, text: str) -> bool:
        t = self.toks[self.i]
        return t.text == text and t.kind in ("punct", "kw", "id")

    def accept(self, text: str) -> Token | None:
        if self.at(text):
            t = self.toks[self.i]
            self.i += 1
            return t
        return None

    def error(self, expecting: str, tok: Token | None = None) -> CompileError:
        tok = tok or self.tok
        if tok.kind == "bad":
            return CompileError(tok.pos, f"unexpected character {tok.text!r}")
        found = "end of file" if tok.kind == "eof" else repr(tok.text)
        return CompileError(tok.pos, f"syntax error, unexpected {found}, expecting {expecting}")

    def expect(self, text: str) -> Token:
        t = self.accept(text)
        if t is None:
            raise self.error(repr(text))
        return t

    def name(self, what: str = "a name") -> tuple[str, SourcePos]:
        """An identifier, also accepting soft keywords and type names."""
        t = self.tok
        if t.kind == "id":
            self.i += 1
            return t.text, t.pos
        raise self.error(what)

    # ------------------------------------------------------------------ scopes
    def push(self) -> None:
        self.scopes.append({})

    def pop(self) -> None:
        self.scopes.pop()

    def declare(self, name: str, is_type: bool) -> None:
        self.scopes[-1][name] = is_type

    def is_type_name(self, name: str) -> bool:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return False

    def enter(self) -> None:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise CompileError(self.tok.pos, "program nested too deeply")

    # ------------------------------------------------------------------ program
    def parse_program(self) -> A.Program:
        decls: list[A.Decl] = []
        start = self.tok.pos
        while self.tok.kind != "eof":
            if self.accept(";"):
                continue
            d = self.declaration()
            decls.extend(self.pending_decls)
            self.pending_decls.clear()
            decls.append(d)
        return A.Program(start, decls)

    def annotations(self) -> list[A.Annotation]:
        result = []
        while self.at("@") or self.tok.kind == "pragma":
            if self.tok.kind == "pragma":
                result.append(A.Annotation(self.tok.pos, "pragma", self.tok.text))
                self.i += 1
                continue
            at = self.expect("@")
            name_tok = self.tok
            if name_tok.kind not in ("id", "kw"):
                raise self.error("an annotation name")
            self.i += 1
            ann = A.Annotation(at.pos, name_tok.text)
            if self.at("("):
                ann.body, body_toks = self.balanced("(", ")")
                self.parse_annotation_body(ann, body_toks)
            elif self.at("["):
                ann.body, body_toks = self.balanced("[", "]")
                ann.structured = True
                self.parse_annotation_body(ann, body_toks)
            result.append(ann)
        return result

    def balanced(self, open_: str, close: str) -> tuple[str, list[Token]]:
        """Consume a bracketed token run; return its inner text and tokens."""
        start = self.expect(open_)
        depth = 1
        inner: list[Token] = []
        while True:
            t = self.tok
            if t.kind == "eof":
                raise CompileError(start.pos, f"unbalanced {open_!r} in annotation")
            self.i += 1
            if t.kind == "punct" and t.text in "([{":
                depth += 1
            elif t.kind == "punct" and t.text in ")]}":
                depth -= 1
                if depth == 0:
                    break
            inner.append(t)
        text = ""
        for k, t in enumerate(inner):
            if k and not (t.text in (",", ")", "]", ".") or inner[k - 1].text in ("(", "[", ".")):
                text += " "
            text += t.text
        return text, inner

    def parse_annotation_body(self, ann: A.Annotation, body: list[Token]) -> None:
        """Annotation bodies are token soup; keep an expression-list reading when there is one."""
        if not body:
            ann.args = []
            return
        sub = Parser(body + [Token("eof", "<end>", body[-1].pos)])
        sub.scopes = self.scopes
        try:
            if len(body) >= 2 and body[0].kind == "id" and body[1].text == "=":
                kv = []
                while True:
                    key, _ = sub.name()
                    sub.expect("=")
                    kv.append((key, sub.expression()))
                    if not sub.accept(","):
                        break
                if sub.tok.kind == "eof":
                    ann.kv = kv
                return
            args = [sub.expression()]
            while sub.accept(","):
                if sub.tok.kind == "eof":
                    break
                args.append(sub.expression())
            if sub.tok.kind == "eof":
                ann.args = args
        except CompileError:
            pass  # an unstructured annotation; only its text matters

    def declaration(self) -> A.Decl:
        annos = self.annotations()
        t = self.tok
        text = t.text
        if t.kind == "kw":
            if text == "const":
                d: A.Decl = self.const_decl()
            elif text == "typedef":
                d = self.typedef_decl(newtype=False)
            elif text in ("header", "header_union", "struct"):
                d = self.struct_decl()
            elif text == "enum":
                d = self.enum_decl()
            elif text == "error":
                d = self.member_list_decl(A.ErrorDecl, "error")
            elif text == "match_kind":
                d = self.member_list_decl(A.MatchKindDecl, "match_kind")
            elif text == "extern":
                d = self.extern_decl()
            elif text in ("parser", "control"):
                d = self.parser_or_control()
            elif text == "package":
                d = self.package_decl()
            elif text == "action":
                d = self.action_decl()
            else:
                d = self.function_or_instance()
        elif t.kind == "id" and text == "type" and not self.is_type_name("type"):
            d = self.typedef_decl(newtype=True)
        else:
            d = self.function_or_instance()
        d.annotations = annos + d.annotations
        return d

    # ------------------------------------------------------------------ simple declarations
    def const_decl(self) -> A.ConstDecl:
        pos = self.expect("const").pos
        typeref = self.typeref()
        name, _ = self.name()
        self.expect("=")
        value = self.expression()
        self.expect(";")
        self.declare(name, False)
        return A.ConstDecl(pos, name, typeref, value)

    def typedef_decl(self, newtype: bool) -> A.Typedef:
        pos = self.tok.pos
        self.i += 1
        if self.tok.text in ("header", "header_union", "struct", "enum") and self.tok.kind == "kw":
            inner = self.struct_decl() if self.tok.text != "enum" else self.enum_decl()
            typeref: A.TypeRef = A.NamedType(inner.pos, inner.name)
            self.pending_decls.append(inner)
        else:
            typeref = self.typeref()
        name, _ = self.name("a type name")
        self.expect(";")
        self.declare(name, True)
        return A.Typedef(pos, name, typeref, newtype)

    def type_params(self) -> list[str]:
        params: list[str] = []
        if self.accept("<"):
            while True:
                name, _ = self.name("a type parameter")
                params.append(name)
                self.declare(name, True)
                if not self.accept(","):
                    break
            self.expect(">")
        return params

    def struct_decl(self) -> A.StructLike:
        kw = self.tok
        self.i += 1
        name, _ = self.name("a type name")
        self.declare(name, True)
        self.push()
        tparams = self.type_params()
        self.expect("{")
        fields = []
        while not self.accept("}"):
            annos = self.annotations()
            fpos = self.tok.pos
            ftype = self.typeref()
            fname, _ = self.name("a field name")
            self.expect(";")
            fields.append(A.FieldDecl(fpos, fname, ftype, annos))
        self.pop()
        return A.StructLike(kw.pos, name, kw.text, fields, tparams)

    def enum_decl(self) -> A.EnumDecl:
        pos = self.expect("enum").pos
        underlying = None
        if self.at("bit") or self.at("int") or (self.tok.kind == "id" and self.peek().kind == "id"):
            underlying = self.typeref()
        name, _ = self.name("an enum name")
        self.declare(name, True)
        self.expect("{")
        members: list[tuple[str, A.Expr | None, SourcePos]] = []
        while True:
            self.annotations()
            mname, mpos = self.name("an enum member")
            value = None
            if self.accept("="):
                value = self.expression()
            members.append((mname, value, mpos))
            if not self.accept(","):
                break
            if self.at("}"):
                break
        self.expect("}")
        return A.EnumDecl(pos, name, members, underlying)

    def member_list_decl(self, cls: type, kw: str) -> A.Decl:
        pos = self.expect(kw).pos
        self.expect("{")
        members = []
        while True:
            mname, mpos = self.name("a member name")
            members.append((mname, mpos))
            if not self.accept(","):
                break
            if self.at("}"):
                break
        self.expect("}")
        return cls(pos, kw, members)

    # ------------------------------------------------------------------ externs, packages, parsers, controls
    def params(self) -> list[A.Param]:
        self.expect("(")
        result: list[A.Param] = []
        if not self.at(")"):
            while True:
                annos = self.annotations()
                pos = self.tok.pos
                direction = ""
                if self.tok.kind == "kw" and self.tok.text in ("in", "out", "inout"):
                    direction = self.tok.text
                    self.i += 1
                typeref = self.typeref()
                pname, _ = self.name("a parameter name")
                default = self.expression() if self.accept("=") else None
                result.append(A.Param(pos, direction, typeref, pname, default, annos))
                if not self.accept(","):
                    break
        self.expect(")")
        for p in result:
            self.declare(p.name, False)
        return result

    def method_proto(self, extern_name: str | None) -> A.MethodProto:
        annos = self.annotations()
        pos = self.tok.pos
        abstract = bool(self.accept("abstract"))
        self.push()
        if extern_name is not None and self.tok.text == extern_name and self.peek().text == "(":
            self.i += 1
            params = self.params()
            self.pop()
            self.expect(";")
            return A.MethodProto(pos, extern_name, None, [], params, annotations=annos)
        # the return type may use the method's own type parameters: `T f<T>(...)`
        save = self.i
        self.skip_type_for_lookahead()
        name_tok = self.tok
        if name_tok.kind == "id" and self.peek().text == "<":
            self.i += 1
            tparams = self.type_params()
        else:
            tparams = []
        self.i = save
        rtype = self.typeref(allow_void=True)
        mname, _ = self.name("a method name")
        if tparams:
            self.type_params()
        params = self.params()
        self.pop()
        self.expect(";")
        return A.MethodProto(pos, mname, rtype, tparams, params, abstract, annotations=annos)

    def skip_type_for_lookahead(self) -> None:
        """Skip over a type reference without knowing which names are types."""
        self.i += 1
        if self.at("<"):
            depth = 0
            while True:
                if self.at("<"):
                    depth += 1
                elif self.at(">"):
                    depth -= 1
                elif self.tok.kind == "eof" or self.at(";"):
                    return
                self.i += 1
                if depth == 0:
                    break
        while self.at("["):
            while not self.at("]") and self.tok.kind != "eof":
                self.i += 1
            self.accept("]")

    def extern_decl(self) -> A.Decl:
        pos = self.expect("extern").pos
        # `extern Name<T> { ... }` or `extern Name { ... }` versus a function prototype
        if self.tok.kind == "id" and (
            self.peek().text == "{" or self.peek().text == "<" and self.is_extern_object()
        ):
            name, _ = self.name()
            self.declare(name, True)
            self.push()
            tparams = self.type_params()
            self.expect("{")
            methods = []
            while not self.accept("}"):
                methods.append(self.method_proto(name))
            self.pop()
            return A.ExternDecl(pos, name, tparams, methods)
        proto = self.method_proto(None)
        self.declare(proto.name, False)
        return A.ExternFunction(pos, proto.name, proto, annotations=proto.annotations)

    def is_extern_object(self) -> bool:
        """After `extern Name <`: an object declaration has `{` after the matching `>`."""
        j = self.i + 1
        depth = 0
        while j < len(self.toks):
            t = self.toks[j].text
            if t == "<":
                depth += 1
            elif t == ">":
                depth -= 1
                if depth == 0:
                    return self.toks[j + 1].text == "{"
            elif t in (";", "{", "(") or self.toks[j].kind == "eof":
                return False
            j += 1
        return False

    def package_decl(self) -> A.TypeDeclProto:
        pos = self.expect("package").pos
        name, _ = self.name()
        self.declare(name, True)
        self.push()
        tparams = self.type_params()
        params = self.params()
        self.pop()
        self.expect(";")
        return A.TypeDeclProto(pos, name, "package", tparams, params)

    def parser_or_control(self) -> A.Decl:
        kw = self.tok
        self.i += 1
        name, _ = self.name()
        self.declare(name, True)
        self.push()
        tparams = self.type_params()
        params = self.params()
        if self.accept(";"):
            self.pop()
            return A.TypeDeclProto(kw.pos, name, kw.text, tparams, params)
        ctor_params = self.params() if self.at("(") else []
        self.expect("{")
        locals_: list[A.Decl] = []
        if kw.text == "parser":
            states = []
            while not self.accept("}"):
                annos = self.annotations()
                if self.tok.text == "state" and self.tok.kind == "id" and self.peek().kind == "id":
                    st = self.parser_state()
                    st.annotations = annos
                    states.append(st)
                else:
                    d = self.local_decl()
                    d.annotations = annos + d.annotations
                    locals_.append(d)
            self.pop()
            return A.ParserDecl(kw.pos, name, tparams, params, ctor_params, locals_, states)
        while True:
            annos = self.annotations()
            if self.tok.text == "apply" and self.tok.kind == "id" and self.peek().text == "{":
                break
            if self.tok.kind == "eof" or self.at("}"):
                raise self.error("'apply'")
            d = self.local_decl()
            d.annotations = annos + d.annotations
            locals_.append(d)
        self.i += 2
        body = self.block_rest(self.toks[self.i - 1].pos)
        self.expect("}")
        self.pop()
        return A.ControlDecl(kw.pos, name, tparams, params, ctor_params, locals_, body)

    def local_decl(self) -> A.Decl:
        t = self.tok
        if t.kind == "kw":
            if t.text == "const":
                return self.const_decl()
            if t.text == "action":
                return self.action_decl()
            if t.text == "table":
                return self.table_decl()
            if t.text == "value_set":
                return self.value_set_decl()
        if t.kind == "id" and t.text == "table" and self.peek().kind == "id":
            return self.table_decl()
        pos = t.pos
        typeref = self.typeref()
        if self.at("("):
            return self.instance_rest(pos, typeref)
        name, _ = self.name("a variable name")
        init = self.expression() if self.accept("=") else None
        self.expect(";")
        self.declare(name, False)
        return A.VarDecl(pos, name, typeref, init)

    def value_set_decl(self) -> A.ValueSetDecl:
        pos = self.expect("value_set").pos
        self.expect("<")
        elem = self.typeref()
        self.expect(">")
        self.expect("(")
        size = self.expression()
        self.expect(")")
        name, _ = self.name()
        self.expect(";")
        self.declare(name, False)
        return A.ValueSetDecl(pos, name, elem, size)

    def instance_rest(self, pos: SourcePos, typeref: A.TypeRef) -> A.Instance:
        args = self.arguments()
        name, _ = self.name("an instance name")
        body = None
        if self.accept("="):
            self.expect("{")
            body = []
            self.push()
            while not self.accept("}"):
                body.append(self.declaration())
            self.pop()
        self.expect(";")
        self.declare(name, False)
        return A.Instance(pos, name, typeref, args, body)

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

    # ------------------------------------------------------------------ actions, tables, functions
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

    def function_or_instance(self) -> A.Decl:
        pos = self.tok.pos
        if self.at("void"):
            self.i += 1
            rtype: A.TypeRef = A.BaseType(pos, "void")
        else:
            if not self.starts_type():
                raise self.error("a declaration")
            rtype = self.typeref()
        if self.at("("):
            return self.instance_rest(pos, rtype)
        name, _ = self.name("a name")
        self.declare(name, False)
        self.push()
        tparams = self.type_params()
        params = self.params()
        lb = self.expect("{")
        body = self.block_rest(lb.pos)
        self.pop()
        return A.FunctionDecl(pos, name, rtype, tparams, params, body)

    # ------------------------------------------------------------------ types
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

    # ------------------------------------------------------------------ statements
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

    # ------------------------------------------------------------------ expressions
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


def parse(text: str, filename: str) -> A.Program:
    """Parse preprocessed text (with ``#line`` markers) into a Program."""
    tokens = tokenize(text, filename)
    return Parser(tokens).parse_program()
