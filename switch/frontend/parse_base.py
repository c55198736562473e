"""Shared pieces of the parser: precedences, the token stream, the type-name scopes, annotations.

Every ``parse_*.py`` mixin builds on ParserBase; ``parser.py`` assembles them into Parser.
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


class ParserBase:
    """Token cursor, scope stack and nesting guard (plus annotations, which are token soup)."""

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

    # ------------------------------------------------------------------ annotations
    def annotations(self) -> list[A.Annotation]:
        result = []
        while self.at("@") or self.tok.kind == "pragma":
            if self.tok.kind == "pragma":
                result.append(self.pragma_annotation(self.tok))
                self.i += 1
                continue
            at = self.expect("@")
            name_tok = self.tok
            if name_tok.kind not in ("id", "kw"):
                raise self.error("an annotation name")
            self.i += 1
            ann = A.Annotation(at.pos, name_tok.text)
            if self.at("("):
                _, body_toks = self.balanced("(", ")")
                # p4c keeps an unstructured body as tokens and prints them one space apart
                # (`f ( c ) , x . y`); P4Info shows that text
                ann.body = " ".join(t.text for t in body_toks)
                self.parse_annotation_body(ann, body_toks)
                if ann.name == "name":
                    self.check_name_annotation(ann, body_toks)
            elif self.at("["):
                self.structured_body(ann)
            result.append(ann)
        return result

    def check_name_annotation(self, ann: A.Annotation, body: list[Token]) -> None:
        """p4c's ParseAnnotations: @name takes exactly one string literal."""
        if ann.args is not None and len(ann.args) == 1 and isinstance(ann.args[0], A.StringLit):
            return
        pos = body[0].pos if body else ann.pos
        text = ann.body or "@name"
        raise CompileError(pos, f"{text}: @name annotation's value must be a string")

    def structured_body(self, ann: A.Annotation) -> None:
        """``@a[e, ...]`` or ``@a[k = e, ...]``: parsed by the grammar as p4c's does, so a
        token that does not fit (``@a[k = 1, 2]``, a missing ``]``) is a syntax error there."""
        self.expect("[")
        start = self.i
        ann.structured = True
        if self.tok.kind in ("id", "kw") and self.peek().text == "=":
            kv = []
            while not self.at("]"):
                key, _ = self.name("a name")
                self.expect("=")
                kv.append((key, self.expression()))
                if not self.accept(","):
                    break
            ann.kv = kv
        else:
            args = []
            while not self.at("]"):
                args.append(self.expression())
                if not self.accept(","):
                    break
            ann.args = args
        inner = self.toks[start : self.i]
        self.expect("]")
        ann.body = _join(inner)

    def pragma_annotation(self, tok: Token) -> A.Annotation:
        """``@pragma NAME TOKENS...`` is p4c's ``@NAME(TOKENS...)`` (a line of its own)."""
        toks = [t for t in tokenize(tok.text, tok.pos.file) if t.kind != "eof"]
        if not toks or toks[0].kind not in ("id", "kw"):
            return A.Annotation(tok.pos, "pragma", tok.text)  # nothing to name it by
        ann = A.Annotation(tok.pos, toks[0].text, " ".join(t.text for t in toks[1:]))
        self.parse_annotation_body(ann, toks[1:])
        return ann

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
        return _join(inner), inner

    def parse_annotation_body(self, ann: A.Annotation, body: list[Token]) -> None:
        """Annotation bodies are token soup; keep an expression-list reading when there is one."""
        if not body:
            ann.args = []
            return
        # a full Parser (the mixins own expression()), sharing our type-name scopes
        sub = type(self)(body + [Token("eof", "<end>", body[-1].pos)])
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


def _join(toks: list[Token]) -> str:
    """Tokens as annotation text: one space apart except around ``,`` ``.`` and brackets."""
    text = ""
    for k, t in enumerate(toks):
        if k and not (t.text in (",", ")", "]", ".") or toks[k - 1].text in ("(", "[", ".")):
            text += " "
        text += t.text
    return text
