"""Declarations: constants, typedefs, structs, enums, externs, packages, parsers, controls,
functions, instances and the locals of parsers and controls.
"""

from __future__ import annotations

from . import ast as A
from .errors import SourcePos
from .parse_base import ParserBase


class DeclsMixin(ParserBase):
    """Parser methods for declarations (mixed into Parser)."""

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
        if self.tok.kind == "eof":
            return  # never past the end: the caller's typeref() then reports the end of file
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
                if self.tok.kind == "eof":
                    raise self.error("'}'")
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
                    d = self.local_decl(in_parser=True)
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

    def local_decl(self, in_parser: bool = False) -> A.Decl:
        t = self.tok
        if t.kind == "kw":
            if t.text == "const":
                return self.const_decl()
            if t.text == "action":
                return self.action_decl()
            if t.text == "table":
                return self.table_decl()
            if t.text == "value_set":
                if not in_parser:  # the grammar has value sets among a parser's locals only
                    raise self.error("'action', 'const', 'table' or a declaration")
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

    def function_or_instance(self) -> A.Decl:
        pos = self.tok.pos
        save = self.i
        self.skip_type_for_lookahead()
        generic = self.tok.kind == "id" and self.peek().text == "<"
        self.i = save
        if generic:
            return self.generic_function(pos)
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

    def generic_function(self, pos: SourcePos) -> A.FunctionDecl:
        """``T f<T>(...) { ... }``: the return type may name the function's own type
        parameters, so they are declared (in the function's scope) before it is parsed."""
        save = self.i
        self.skip_type_for_lookahead()
        name, _ = self.name("a name")
        self.declare(name, False)
        self.push()
        tparams = self.type_params()
        after = self.i
        self.i = save
        rtype = self.typeref(allow_void=True)
        self.i = after
        params = self.params()
        lb = self.expect("{")
        body = self.block_rest(lb.pos)
        self.pop()
        return A.FunctionDecl(pos, name, rtype, tparams, params, body)
