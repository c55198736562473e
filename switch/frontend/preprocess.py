"""The C preprocessor stage, built on pcpp.

p4c runs ``cpp -undef -nostdinc -x assembler-with-cpp`` over a program before lexing it; this
module does the same job in-process. The result is plain text in which every line can be mapped
back to the file and line it came from: whenever the mapping does not simply continue from the
previous output line, a marker line of exactly this form precedes it::

    #line N "FILE"

meaning "the next line is line N of FILE". FILE is a C string literal (``\\``, ``"`` and newline
are backslash-escaped); ``parse_line_marker`` decodes a marker. Output lines are separated by
``\\n`` only; a lexer must split on ``\\n`` alone (not ``str.splitlines``), because stray form
feeds or Unicode separators would otherwise shift the line count.

We drive pcpp token by token and write the output ourselves instead of calling
``Preprocessor.write``: pcpp's writer only emits a ``#line`` after gaps of more than six blank
lines, and drifts after multi-line comments and macro invocations. Every pcpp token carries the
file and line it came from (expanded macros carry the line of their invocation), so writing from
the tokens makes the mapping exact.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pcpp
import pcpp.preprocessor as _pcpp_preprocessor
from pcpp import Action, OutputDirective

from ..p4include import INCLUDE_DIR
from .errors import CompileError, SourcePos

MAX_INCLUDE_DEPTH = 200
"""cpp's limit; a file that includes itself without a guard stops here instead of recursing."""

# Gaps of up to this many lines are filled with blank lines; longer ones get a marker, which
# keeps the output short after long comments and skipped #if blocks.
_MAX_BLANK_FILL = 8

LINE_MARKER_RE = re.compile(r'#line (\d+) "((?:[^"\\]|\\.)*)"\Z')

WarningHandler = Callable[[SourcePos, str], None]

_NO_DEFINES: Mapping[str, str | None] = MappingProxyType({})

# cpp in the mode p4c uses (-x assembler-with-cpp, GNU defaults) leaves trigraphs alone, while
# pcpp rewrites them unconditionally before lexing; "??=" inside a P4 string or comment must
# survive. The name is only looked up by pcpp's parsegen, and nothing else in p4reduce uses pcpp.
_pcpp_preprocessor.trigraph = lambda text: text

_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
_OPERATOR_CHARS = frozenset("+-*/%&|^<>=!.:#@?~")
# Characters cpp treats as horizontal space but pcpp's lexer leaves as stray one-char tokens.
_EXTRA_SPACE = frozenset("\f\v\r")
_TO_SPACE = str.maketrans("\f\v\r", "   ")

_MESSAGES = {
    "Misplaced #else": "#else without #if",
    "Misplaced #elif": "#elif without #if",
    "Misplaced #endif": "#endif without #if",
    "Empty expression": "#if with no expression",
    "Malformed defined()": "malformed defined() in #if expression",
}


def quote_path(path: str) -> str:
    """``path`` as the C string literal used in line markers."""
    escaped = path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def parse_line_marker(line: str) -> tuple[int, str] | None:
    """``(N, FILE)`` for a ``#line N "FILE"`` marker line, else None."""
    m = LINE_MARKER_RE.match(line.rstrip("\n"))
    if m is None:
        return None
    text = re.sub(r"\\(.)", lambda e: "\n" if e.group(1) == "n" else e.group(1), m.group(2))
    return int(m.group(1)), text


def preprocess(
    path: Path,
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str | None] = _NO_DEFINES,
    undefines: Sequence[str] = (),
    *,
    on_warning: WarningHandler | None = None,
) -> str:
    """Preprocess the P4 program at ``path`` into text with ``#line`` markers.

    ``#include <x>`` searches ``include_dirs`` then the built-in include directory;
    ``#include "x"`` first searches the including file's directory. ``defines`` maps names
    (or ``F(a,b)`` heads) to values, None meaning 1, like ``-D``; ``undefines`` are applied
    after them, like ``-U``. ``#warning`` text goes to ``on_warning`` (dropped when None).
    Raises CompileError, positioned in the original file, for every problem.
    """
    display = str(path)
    text = _read_source(display, None)
    pp = _Preprocessor([str(d) for d in include_dirs] + [str(INCLUDE_DIR)], on_warning)
    try:
        pp.apply_command_line(defines, undefines)
        pp.start(text, display)
        return pp.render()
    except CompileError:
        raise
    except RecursionError:
        raise CompileError(pp.best_position(display), "input nested too deeply") from None
    except IndexError as exc:
        # pcpp indexes directive arguments without checking that they exist (#ifdef, #if and
        # #undef with nothing after them); in practice this is the only source of these.
        raise CompileError(pp.best_position(display), pp.malformed_message(exc)) from None
    except Exception as exc:  # preprocess() must never leak a raw exception
        message = f"internal preprocessor error: {type(exc).__name__}: {exc}"
        raise CompileError(pp.best_position(display), message) from None


def _read_source(display: str, where: SourcePos | None) -> str:
    """The text of a source file; bytes that are not UTF-8 survive as lone surrogates so that
    the lexer, not the preprocessor, reports them as invalid characters."""
    try:
        data = Path(display).read_bytes()
    except IsADirectoryError:
        raise CompileError(where, f"{display}: is a directory") from None
    except OSError as exc:
        raise CompileError(where, f"{display}: {exc.strerror or exc}") from None
    text = data.decode("utf-8", "surrogateescape")
    return text[1:] if text.startswith("\ufeff") else text


class _Preprocessor(pcpp.Preprocessor):
    """pcpp with our include search, diagnostics as CompileError and a line-exact writer."""

    def __init__(self, search_dirs: list[str], on_warning: WarningHandler | None) -> None:
        super().__init__()
        self._search_dirs = search_dirs
        self._on_warning = on_warning
        # Keep token sources exactly as we name them (pcpp would relativise absolute paths).
        self.rewrite_paths = []
        # pcpp would otherwise skip any re-inclusion of a guarded file even after its guard
        # macro was #undef'd; cpp re-reads the file and lets the guard decide.
        self.auto_pragma_once_enabled = False
        self.line_directive = None
        # cpp -undef defines nothing of its own beyond the standard macros.
        self.undef("__PCPP__")
        self._stack: list[str] = []  # display names of the files being read, outermost first
        self._realpaths: dict[str, str] = {}
        # Per file: (physical line of a #line directive, line delta, file name from then on).
        self._remaps: dict[str, list[tuple[int, int, str]]] = {}
        self._last_token_pos: tuple[str, int] | None = None
        self._last_args: list[Any] = []

    # ----------------------------------------------------------------- set-up and output

    def apply_command_line(
        self, defines: Mapping[str, str | None], undefines: Sequence[str]
    ) -> None:
        """-D and -U, checked like cpp checks them."""
        for name, value in defines.items():
            head = re.match(r"([A-Za-z_]\w*)(\([^)]*\))?\Z", name)
            if head is None or head.group(1) == "defined":
                raise CompileError(None, f"invalid macro name in -D {name}")
            # As on cpp's command line, the definition is a single line.
            body = "1" if value is None else value.replace("\n", " ")
            self.define(f"{name} {body}")
        for name in undefines:
            if not re.match(r"[A-Za-z_]\w*\Z", name):
                raise CompileError(None, f"invalid macro name in -U {name}")
            self.undef(name)

    def start(self, text: str, display: str) -> None:
        """Begin reading the main file (pcpp's parse() would absolutise its name)."""
        self.ignore = {}
        self._enter(display)
        self.parser = self._read_file(text, display)

    def render(self) -> str:
        """Write the token stream, placing each token on an output line that maps to its
        original line, with a marker wherever the mapping does not just continue."""
        out: list[str] = []
        cur_file: str | None = None
        cur_line = 0
        at_line_start = True
        space = ""  # whitespace seen since the last token
        prev: Any = None
        whitespace = self.t_WS
        # cpp in assembler-with-cpp mode (p4c's mode) passes a '"' with no closing quote on its
        # line through as a lone character, lexing the following lines normally; P4's lexer
        # then reads a string literal that spans lines (PINS' @entry_restriction("...")).
        # While such a quote is open, no marker may be written: it would land in the string.
        open_quote: Any = None
        for tok in iter(self.token, None):
            value = str(tok.value)
            if tok.type in self.t_COMMENT and open_quote is None:
                space += " "
                continue
            if tok.type in whitespace or value in _EXTRA_SPACE:
                # Indentation is kept for readability of -E output; between tokens one space
                # is enough to keep them apart.
                space = "" if "\n" in value else space + value.translate(_TO_SPACE)
                continue
            if tok.type == "CPP_DQUOTE":
                open_quote = None if open_quote is not None else tok
            file, line = self._map(tok.source, tok.lineno)
            in_string = open_quote is not None and open_quote is not tok
            if in_string and file == cur_file and line >= cur_line:
                if line > cur_line:
                    out.append("\n" * (line - cur_line))
                    cur_line, at_line_start = line, True
            elif file != cur_file or line < cur_line or line - cur_line > _MAX_BLANK_FILL:
                if not at_line_start:
                    out.append("\n")
                out.append(f"#line {line} {quote_path(file)}\n")
                cur_file, cur_line, at_line_start = file, line, True
            elif line > cur_line:
                out.append("\n" * (line - cur_line))
                cur_line, at_line_start = line, True
            if at_line_start:
                out.append(space)
            elif space or _would_paste(prev, tok):
                out.append(" ")
            out.append(value)
            at_line_start, space, prev = False, "", tok
            self._last_token_pos = (file, line)
        if open_quote is not None:
            raise CompileError(self._pos(open_quote), 'missing terminating " character')
        if not at_line_start:
            out.append("\n")
        return "".join(out)

    def best_position(self, display: str) -> SourcePos:
        """Where to blame an unexpected failure: the directive being handled, else the last
        token written, else the start of the main file."""
        if self.lastdirective is not None:
            return self._pos(self.lastdirective)
        return SourcePos(*(self._last_token_pos or (display, 1)))

    def malformed_message(self, exc: Exception) -> str:
        if self.lastdirective is None:
            return f"internal preprocessor error: {type(exc).__name__}: {exc}"
        name = self.lastdirective.value
        if not self._last_args and name in ("ifdef", "ifndef"):
            return f"no macro name given in #{name} directive"
        if not self._last_args and name in ("if", "elif"):
            return f"#{name} with no expression"
        return f"malformed #{name} directive"

    # ------------------------------------------------------------------ reading files

    def _enter(self, display: str) -> None:
        self._stack.append(display)
        self._realpaths[display] = os.path.realpath(display)

    def _read_file(self, text: str, display: str) -> Iterator[Any]:
        """pcpp's parsegen with the display name as the file's identity, then leave it."""
        yield from self.parsegen(text, display, display)
        self._stack.pop()

    def group_lines(self, input: str, abssource: str) -> Iterator[list[Any]]:
        """Split into token lines like pcpp, but counting only ``\\n`` as a line break (pcpp
        uses str.splitlines, which also breaks at form feeds and Unicode separators and would
        shift every later line), and diagnose unterminated block comments."""
        lex = self.lexer.clone()
        lex.input("\n".join(line.rstrip() for line in input.split("\n")))
        lex.lineno = 1
        current: list[Any] = []
        prev = None
        for tok in iter(lex.token, None):
            tok.source = abssource
            # A terminated comment is a single token, so "/" directly followed by "*" can only
            # be the start of one that never ends.
            if prev is not None and prev.value == "/" and str(tok.value).startswith("*"):
                raise CompileError(self._pos(prev), "unterminated comment")
            prev = tok
            current.append(tok)
            if tok.type in self.t_WS and tok.value == "\n":
                yield current
                current = []
        if current:
            newline = copy.copy(current[-1])
            newline.type = self.t_NEWLINE
            newline.value = "\n"
            current.append(newline)
            yield current

    def include(self, tokens: list[Any], original_line: list[Any]) -> Iterator[Any]:
        """#include with cpp's search order and our own depth limit and error messages."""
        where = self._pos(self.lastdirective)
        name, angled = self._include_name(tokens, where)
        found = self._find_include(name, angled)
        spelled = f"<{name}>" if angled else f'"{name}"'
        if found is None:
            dirs = ", ".join(d or "." for d in self._search_path(angled))
            raise CompileError(where, f"include file {spelled} not found (searched {dirs})")
        real = os.path.realpath(found)
        if any(self._realpaths.get(seen) == real for seen in self.include_once):
            return  # #pragma once
        if len(self._stack) >= MAX_INCLUDE_DEPTH:
            hint = " (recursive #include?)" if real in self._open_realpaths() else ""
            raise CompileError(
                where,
                f"#include nested depth {len(self._stack)} exceeds maximum of "
                f"{MAX_INCLUDE_DEPTH}{hint}",
            )
        text = _read_source(found, where)
        self._enter(found)
        yield from self._read_file(text, found)

    def _include_name(self, tokens: list[Any], where: SourcePos) -> tuple[str, bool]:
        tokens = [t for t in tokens if t.type not in self.t_WS]
        if tokens and tokens[0].type == self.t_STRING:
            return tokens[0].value[1:-1], False
        if tokens and tokens[0].value == "<":
            for i, tok in enumerate(tokens[1:], start=1):
                if tok.value == ">":
                    return "".join(str(t.value) for t in tokens[1:i]), True
        raise CompileError(where, '#include expects "FILENAME" or <FILENAME>')

    def _search_path(self, angled: bool) -> list[str]:
        if angled:
            return self._search_dirs
        return [os.path.dirname(self._stack[-1])] + self._search_dirs

    def _find_include(self, name: str, angled: bool) -> str | None:
        if not name:
            return None
        for directory in self._search_path(angled):
            candidate = os.path.join(directory, name)
            if os.path.isfile(candidate):
                return candidate
        return None

    def _open_realpaths(self) -> set[str]:
        return {self._realpaths[d] for d in self._stack}

    # ------------------------------------------------------------------ positions

    def _pos(self, tok: Any) -> SourcePos:
        file, line = self._map(tok.source, tok.lineno)
        return SourcePos(file, line)

    def _map(self, source: str | None, line: int) -> tuple[str, int]:
        """Apply the #line directives seen so far in ``source``."""
        file = source or (self._stack[0] if self._stack else "<unknown>")
        if not self._remaps:
            return file, line
        for physical, delta, name in reversed(self._remaps.get(file, ())):
            if line > physical:
                return name, line + delta
        return file, line

    # ------------------------------------------------------------------ pcpp hooks

    def on_error(self, file: str, line: int, msg: str) -> None:
        """Every problem pcpp notices stops preprocessing with a CompileError."""
        if (not line or file in (None, "unknown")) and self.lastdirective is not None:
            pos = self._pos(self.lastdirective)
        else:
            mapped = self._map(file, line)
            pos = SourcePos(*mapped)
        raise CompileError(pos, _clean_message(msg))

    def on_directive_handle(
        self, directive: Any, toks: list[Any], ifpassthru: bool, precedingtoks: list[Any]
    ) -> bool:
        self.lastdirective = directive
        self._last_args = toks
        if directive.value == "pragma" and not toks:
            # pcpp would index the missing pragma name; pass the empty pragma through instead.
            raise OutputDirective(Action.IgnoreAndPassThrough)
        return True

    def on_directive_unknown(
        self, directive: Any, toks: list[Any], ifpassthru: bool, precedingtoks: list[Any]
    ) -> bool | None:
        """Called only for directives in groups that are not skipped."""
        name = str(directive.value)
        text = "".join(str(t.value) for t in toks).strip()
        if name == "error":
            raise CompileError(self._pos(directive), f"#error {text}".rstrip())
        if name == "warning":
            if self._on_warning is not None:
                self._on_warning(self._pos(directive), f"#warning {text}".rstrip())
            return True
        if name == "pragma":
            return None  # passed through unchanged for the compiler to see
        if name == "line":
            self._line_directive(directive, toks)
            return True
        if directive.type == self.t_INTEGER:  # GNU "# 33 "file"" line marker
            self._line_directive(directive, [directive, *toks])
            return True
        raise CompileError(self._pos(directive), f"invalid preprocessing directive #{name}")

    def _line_directive(self, directive: Any, toks: list[Any]) -> None:
        """#line N ["FILE"]: later lines of this file are reported as N, N+1, ..."""
        args = [t for t in self.expand_macros(copy.copy(toks)) if t.type not in self.t_WS]
        where = self._pos(directive)
        if not args or not re.fullmatch(r"\d+", str(args[0].value)):
            raise CompileError(where, "#line directive requires a positive integer argument")
        number = int(str(args[0].value))
        if number > 2147483647:
            raise CompileError(where, "line number out of range")
        name = where.file
        if len(args) > 1:
            if args[1].type != self.t_STRING:
                raise CompileError(where, f'invalid filename "{args[1].value}"')
            name = re.sub(r"\\(.)", r"\1", args[1].value[1:-1])
        remaps = self._remaps.setdefault(directive.source, [])
        remaps.append((directive.lineno, number - directive.lineno - 1, name))

    def collect_args(self, tokenlist: list[Any], ignore_errors: bool = False) -> Any:
        """pcpp silently leaves a macro invocation unexpanded when its ")" never comes (it
        asks with ignore_errors=True only after seeing the "("); cpp reports it."""
        result = super().collect_args(tokenlist, ignore_errors)
        if ignore_errors and result[0] == 0:
            where = self._pos(tokenlist[0])
            raise CompileError(where, "unterminated argument list in macro invocation")
        return result

    def on_unknown_macro_in_defined_expr(self, tok: Any) -> bool:
        if tok.type != self.t_ID:
            raise CompileError(self._pos(tok), "macro names must be identifiers")
        return False

    def on_comment(self, tok: Any) -> bool:
        # Kept as tokens (p4c runs cpp with -C): render() writes one only inside a string
        # that spans lines, where p4c's lexer keeps it as text; anywhere else it is whitespace.
        return True

    def define(self, tokens: Any) -> None:
        """pcpp accepts any token as a macro name; cpp insists on an identifier."""
        if not isinstance(tokens, str):
            name = next((t for t in tokens if t.type not in self.t_WS), None)
            if name is None:
                raise CompileError(self._pos(self.lastdirective), "no macro name given")
            if name.type != self.t_ID or name.value == "defined":
                raise CompileError(self._pos(name), f'"{name.value}" is not a valid macro name')
        super().define(tokens)

    def undef(self, tokens: Any) -> None:
        if not isinstance(tokens, str):
            name = next((t for t in tokens if t.type not in self.t_WS), None)
            if name is None or name.type != self.t_ID:
                raise CompileError(self._pos(self.lastdirective), "no macro name given in #undef")
        super().undef(tokens)


def _clean_message(msg: str) -> str:
    """pcpp's wording, made one line and closer to cpp's."""
    msg = " ".join(msg.split())
    if msg in _MESSAGES:
        return _MESSAGES[msg]
    if msg.startswith("Unterminated #"):
        return "unterminated " + msg.split()[1]
    m = re.match(r"Could not evaluate expression due to .*\(passed to evaluator: '(.*)'\)$", msg)
    if m:
        return f"cannot evaluate #if expression: {m.group(1).strip()}"
    return msg[:1].lower() + msg[1:]


def _would_paste(prev: Any, tok: Any) -> bool:
    """Whether writing ``tok`` right after ``prev`` would fuse them into another token.

    Only tokens that meet at the edge of a macro expansion need the check: tokens adjacent
    in the source are adjacent on purpose (``&&&``, ``8w5``), as they are in cpp's output.
    """
    if prev is None:
        return False
    if getattr(prev, "expanded_from", None) == getattr(tok, "expanded_from", None):
        return False
    last, first = str(prev.value)[-1:], str(tok.value)[:1]
    both_words = last in _WORD_CHARS and first in _WORD_CHARS
    return both_words or (last in _OPERATOR_CHARS and first in _OPERATOR_CHARS)
