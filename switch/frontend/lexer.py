"""Tokeniser for P4_16 source that has been through the preprocessor.

Honours ``#line N "FILE"`` markers so every token knows its original file and line.
``>`` is always its own token (with a flag saying whether the next token touches it) so the
parser can close nested generics (``register<bit<8>>``) and still read ``>>`` as a shift.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .errors import CompileError, SourcePos

# Words the grammar reserves everywhere. Soft keywords (apply, key, actions, state, entries,
# type, priority, list) are lexed as identifiers because P4 lets them name things.
KEYWORDS = frozenset(
    """abstract action bit bool break const continue control default else enum error exit
    extern false for header header_union if in inout int match_kind out package parser
    pragma return select string struct switch table this transition true tuple typedef
    varbit value_set void""".split()
)

_TOKEN_RE = re.compile(
    r"""
    (?P<ws>[ \t\r\f\v]+)
  | (?P<nl>\n)
  | (?P<line>\#[ \t]*(?:line[ \t]+)?(?P<lnum>\d+)(?:[ \t]+"(?P<lfile>(?:[^"\\\n]|\\.)*)")?[^\n]*)
  | (?P<pragma>\#[^\n]*)
  | (?P<lcomment>//[^\n]*)
  | (?P<atpragma>@[ \t]*pragma\b[^\n]*)
  | (?P<bcomment>/\*(?:[^*]|\*(?!/))*\*/)
  | (?P<badcomment>/\*)
  | (?P<num>(?:\d+[ws])?(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|\d[0-9_]*)(?![A-Za-z0-9_]))
  | (?P<badnum>\d[0-9A-Za-z_]*)
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<badstr>")
  | (?P<punct>\|\+\|=|\|-\|=|<<=|\+=|-=|\*=|/=|%=|&=|\|=|\^=|&&&|\|\+\||\|-\||\.\.|\+\+|<<|<=|>=|==|!=|&&|\|\||[-+*/%&|^~!?:;,.=(){}\[\]<>@])
    """,
    re.VERBOSE,
)


@dataclass(slots=True)
class Token:
    kind: str  # 'id', 'kw', 'num', 'str', 'punct', 'pragma', 'bad' (no P4 token), 'eof'
    text: str
    pos: SourcePos
    tight: bool = False  # for '>': the next token follows with no space in between
    # parsed integer literal: (value, width or None, signed)
    value: object = None


def parse_int_literal(text: str, pos: SourcePos) -> tuple[int, int | None, bool]:
    """Split ``8w0xFF``/``4s-``-style literals into (value, width, signed)."""
    width: int | None = None
    signed = False
    m = re.match(r"(\d+)([ws])", text)
    body = text
    if m and len(text) > m.end():
        width = int(m.group(1))
        signed = m.group(2) == "s"
        body = text[m.end() :]
        if width == 0 and not signed:
            raise CompileError(pos, f"{text}: width of an integer literal must be positive")
        if signed and width < 2:
            raise CompileError(pos, f"{text}: signed integers must be at least 2 bits wide")
    digits = body.replace("_", "")
    base = 10
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[digits[1].lower()]
        digits = digits[2:]
    if not digits:
        raise CompileError(pos, f"{text}: malformed integer literal")
    return int(digits, base), width, signed


def tokenize(text: str, default_file: str) -> list[Token]:
    """Turn preprocessed text into tokens; raise CompileError on characters P4 does not use."""
    tokens: list[Token] = []
    file = default_file
    line = 1
    pos = 0
    n = len(text)
    match = _TOKEN_RE.match
    positions: dict[tuple[str, int], SourcePos] = {}
    while pos < n:
        m = match(text, pos)
        if m is None:
            # p4c lexes a character P4 has no token for as UNEXPECTED_TOKEN, which only an
            # annotation body may hold; the parser reports it anywhere else.
            tokens.append(Token("bad", text[pos], SourcePos(file, line)))
            pos += 1
            continue
        kind = m.lastgroup
        end = m.end()
        if kind == "ws":
            pass
        elif kind == "nl":
            line += 1
        elif kind == "line":
            line = int(m.group("lnum"))
            if m.group("lfile") is not None:
                file = (
                    m.group("lfile")
                    .encode("latin-1", "backslashreplace")
                    .decode("unicode_escape", "replace")
                    if "\\" in m.group("lfile")
                    else m.group("lfile")
                )
            # the marker's own newline is consumed next and must not advance the count
            line -= 1
        elif kind in ("pragma", "lcomment"):
            pass
        elif kind == "atpragma":
            # `@pragma name args...` runs to the end of the line (p4c's lexer does the same)
            body = m.group().split("pragma", 1)[1].split("//", 1)[0].strip()
            tokens.append(Token("pragma", body, SourcePos(file, line)))
        elif kind == "bcomment":
            line += m.group().count("\n")
        elif kind == "badcomment":
            raise CompileError(SourcePos(file, line), "unterminated comment")
        elif kind == "badstr":
            raise CompileError(SourcePos(file, line), "unterminated string literal")
        elif kind == "badnum":
            raise CompileError(SourcePos(file, line), f"malformed integer literal {m.group()!r}")
        else:
            key = (file, line)
            spos = positions.get(key)
            if spos is None:
                spos = positions[key] = SourcePos(file, line)
            t = m.group()
            if kind == "id":
                tok = Token("kw" if t in KEYWORDS else "id", t, spos)
            elif kind == "num":
                tok = Token("num", t, spos, value=parse_int_literal(t, spos))
            elif kind == "str":
                tok = Token("str", t, spos)
                line += t.count("\n")  # p4c's string literals may span lines
            else:
                tok = Token("punct", t, spos)
                if t == ">" and end < n and text[end] in "<>=":
                    tok.tight = True
            tokens.append(tok)
        pos = end
    tokens.append(Token("eof", "<end of file>", SourcePos(file, line)))
    return tokens
