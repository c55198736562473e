"""Parsers to Python: one function per state returning the next, and a driver loop.

A mixin of ``ProgramBuilder``. Transitions compile to ``if`` chains over the select keys
(values, masks, ranges, tuples, value sets). A select that no case matches ends parsing
like ``accept`` with ``parser_error`` unchanged, as p4c + BMv2 do (docs/interpreter.md).
"""

from __future__ import annotations

from typing import Any

from ..frontend import ast as A
from ..frontend import types as T
from .bindings import ValueSetB
from .emit import Emitter, tuple_code
from .exprs import bits_of, mask


class ParserGen:
    """Mixin: needs the builder's env, em and code generation services."""

    env: Any
    em: Any

    def gen_parser(self, decl: A.ParserDecl, fn: str, prologue: Emitter) -> None:
        names = {st.name: self.fresh("s", f"{decl.name}_{st.name}") for st in decl.states}
        for st in decl.states:
            em = Emitter(self.counter)
            saved = self.em
            self.em = em
            try:
                for s in st.stmts:
                    self.stmt(s)
                self.transition(st.transition, names)
            finally:
                self.em = saved
            self.add_function(f"def {names[st.name]}(S, P):", em)
        em = Emitter(self.counter)
        em.lines = list(prologue.lines)
        em.line(f"st = {names['start']}")
        em.line("n = 0")
        em.line("while st is not None:")
        em.line("    st = st(S, P)")
        em.line("    n += 1")
        em.line(f"    if n > 100000: raise ParserError({self.error_code('ParserTimeout')})")
        self.add_function(f"def {fn}(S, P):", em)

    def state_ref(self, name: str, names: dict[str, str]) -> str:
        if name == "accept":
            return "None"
        if name == "reject":
            return "REJECT"
        return names[name]

    def transition(self, tr: A.Expr | None, names: dict[str, str]) -> None:
        em = self.em
        if tr is None:
            em.line("return None")
            return
        if isinstance(tr, A.Name):
            target = self.state_ref(tr.name, names)
            em.line("raise ParserError(-1)" if target == "REJECT" else f"return {target}")
            return
        assert isinstance(tr, A.SelectExpr)
        keys = [self.simple(self.val(k), "k") for k in tr.exprs]
        for case in tr.cases:
            cond = self.keyset_cond(case.keyset, keys, tr.exprs)
            target = self.state_ref(case.state, names)
            action = "raise ParserError(-1)" if target == "REJECT" else f"return {target}"
            if cond is None:
                em.line(action)
                return
            em.line(f"if {cond}: {action}")
        # No case matched. p4c's BMv2 back end emits no transition for a missing default (its
        # mid end has no HandleNoMatch pass), and bm_sim's ParseState::find_next_state then
        # returns the unset default_next_state (null): parsing ends as at accept and
        # parser_error stays NoError. The spec's NoMatch is never raised on BMv2.
        em.line("return None")

    def keyset_cond(self, ks: A.Expr, keys: list[str], exprs: list[A.Expr]) -> str | None:
        if isinstance(ks, (A.Default, A.DontCare)):
            return None
        if isinstance(ks, A.Name):
            b = self.env.lookup(ks, None) or self.env.get_named(f"value_set:{ks.name}")
            if isinstance(b, ValueSetB):
                return f"{b.name}.match({tuple_code(self.key_bits(k, e) for k, e in zip(keys, exprs, strict=True))})"
        if isinstance(ks, A.ListExpr) and len(keys) > 1:
            parts = [
                self.one_key_cond(item, k, e)
                for item, k, e in zip(ks.items, keys, exprs, strict=True)
            ]
            parts = [p for p in parts if p is not None]
            return " and ".join(parts) if parts else None
        if isinstance(ks, A.ListExpr) and len(ks.items) == 1:
            ks = ks.items[0]
        return self.one_key_cond(ks, keys[0], exprs[0])

    def key_bits(self, k: str, e: A.Expr) -> str:
        t = self.ty(e.type)
        if T.strip_newtype(t) is T.BOOL:
            return f"int({k})"
        b = bits_of(t)
        if b is not None and b.signed:
            return f"({k} & {mask(b.width)})"
        return k

    def one_key_cond(self, ks: A.Expr, key: str, e: A.Expr) -> str | None:
        if isinstance(ks, (A.Default, A.DontCare)):
            return None
        if isinstance(ks, A.Mask):
            v, m = self.val(ks.value), self.val(ks.mask)
            return f"({self.key_bits(key, e)} & {m}) == ({v} & {m})"
        if isinstance(ks, A.Range):
            return f"{self.val(ks.lo)} <= {key} <= {self.val(ks.hi)}"
        if isinstance(ks, A.Name):
            b = self.env.lookup(ks, None) or self.env.get_named(f"value_set:{ks.name}")
            if isinstance(b, ValueSetB):
                return f"{b.name}.match(({self.key_bits(key, e)},))"
        return f"{key} == {self.val(ks)}"
