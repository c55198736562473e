"""Re-rolling: runs of generated C statements that repeat with stepping constants become loops.

The interpreter's generated Python unrolls what P4 spells out element by element: dense.p4
extracts, updates and emits its K elements as K copies of the same statements, each with its
own slot, register and bit offset. Translated line for line, K = 1024 gives about 100 KB of
straight-line machine code per control, which misses the instruction cache on every packet
and takes the C compiler minutes. This pass finds a block of lines repeated at least
MIN_REPEATS times whose lines differ only in decimal constants that step by a fixed amount
from one copy to the next, and writes it once inside ``for (int _rollN = 0; _rollN < M; _rollN++)``
with each stepping constant replaced by ``(C0 + D * _rollN)``.

The loop runs exactly the statements the copies ran, in the same order, with the same
values: each copy is the body with ``_rollN`` = its index. What would change meaning is never
re-rolled: a block with ``break``, ``continue``, ``case`` or a label (a loop would capture
them), a declaration (its scope would shrink to the loop body), a preprocessor line, or
unbalanced braces; constants inside ``UINT64_C(...)``, string literals and comments never
vary. Stepping constants stay below 2^31, so ``(C0 + D * _rollN)`` has the literal's type
(int). tests/native/test_reroll.py unrolls the loops back into the original lines; the K =
1024 data-plane tests run the re-rolled programs on both engines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Fewer copies than this are left as they are. Measured in process (dense.p4, 8 workers,
# CPU per packet): the loops are slower than the copies at K = 64 (about 1.6 against 1.1 us)
# and K = 256 (3.3 against 2.2 us), where the copies fit the instruction cache and their
# constant offsets fold into single loads, and faster at K = 1024 (11.0 against 12.9 us),
# where the copies are ~100 KB of code and took 80 s to compile.
MIN_REPEATS = 512
MAX_PERIOD = 16  # the longest block (in lines) looked for
INT_MAX = 2**31 - 1

# fixed text: string literals, comments, and the argument of a literal-suffix macro (its
# number is pasted to a suffix, so it must stay a literal)
_FIXED = re.compile(r'"(?:[^"\\]|\\.)*"|/\*.*?\*/|U?INT64_C\(\s*\d+\s*\)')
_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_REFUSED = re.compile(r"\b(?:break|continue|case|default|goto)\b|^\s*#|^\s*\w+\s*:(?!:)")
_DECLARATION = re.compile(
    r"^\s*(?:const\s+|static\s+)*(?:u?int(?:8|16|32|64)_t|int|unsigned|__int128|p4r_\w+|"
    r"char|size_t)\b[\s*]*\w+\s*(?:[=;\[,]|$)"
)


@dataclass(frozen=True)
class Line:
    """A generated line split into its shape (the text with each decimal constant outside
    fixed text replaced by a marker) and those constants, in order."""

    indent: int
    shape: str
    numbers: tuple[int, ...]
    rollable: bool  # may be part of a loop body at all
    opens: int  # braces opened minus closed

    @staticmethod
    def parse(text: str) -> Line:
        parts: list[str] = []
        numbers: list[int] = []
        pos = 0
        for m in _FIXED.finditer(text):
            _split_numbers(text[pos : m.start()], parts, numbers)
            parts.append(m.group(0))
            pos = m.end()
        _split_numbers(text[pos:], parts, numbers)
        bare = _FIXED.sub("", text)
        rollable = not _REFUSED.search(bare) and not _DECLARATION.match(bare)
        return Line(
            indent=len(text) - len(text.lstrip(" ")),
            shape="".join(parts),
            numbers=tuple(numbers),
            rollable=rollable,
            opens=bare.count("{") - bare.count("}"),
        )


def _split_numbers(text: str, parts: list[str], numbers: list[int]) -> None:
    pos = 0
    for m in _NUMBER.finditer(text):
        parts.append(text[pos : m.start()])
        parts.append("\0")  # the marker of a constant
        numbers.append(int(m.group(0)))
        pos = m.end()
    parts.append(text[pos:])


def reroll(body: str, min_repeats: int = MIN_REPEATS) -> str:
    """``body`` (one generated C function) with its runs of at least ``min_repeats``
    copies written as loops."""
    lines = body.split("\n")
    parsed = [Line.parse(t) for t in lines]
    out: list[str] = []
    counter = [0]
    _reroll_range(lines, parsed, 0, len(lines), out, counter, min_repeats)
    return "\n".join(out)


def _reroll_range(
    lines: list[str],
    parsed: list[Line],
    lo: int,
    hi: int,
    out: list[str],
    counter: list[int],
    min_repeats: int,
) -> None:
    k = lo
    while k < hi:
        best = _best_run(parsed, k, hi, min_repeats)
        if best is None:
            out.append(lines[k])
            k += 1
            continue
        period, repeats, steps = best
        var = f"_roll{counter[0]}"
        counter[0] += 1
        pad = " " * parsed[k].indent
        out.append(f"{pad}for (int {var} = 0; {var} < {repeats}; {var}++) {{")
        body = [
            "    " + _substitute(parsed[k + j], steps[j], var) for j in range(period)
        ]  # one level deeper; a nested run inside the body is re-rolled too
        _reroll_range(body, [Line.parse(t) for t in body], 0, period, out, counter, min_repeats)
        out.append(f"{pad}}}")
        k += period * repeats


def _best_run(
    parsed: list[Line], k: int, hi: int, min_repeats: int
) -> tuple[int, int, list[tuple[int, ...]]] | None:
    """The (period, repeats, per-line steps) covering the most lines from k, or None."""
    best: tuple[int, int, list[tuple[int, ...]]] | None = None
    base = parsed[k]
    for period in range(1, MAX_PERIOD + 1):
        if k + period * min_repeats > hi:
            break
        block = parsed[k : k + period]
        if not _block_ok(block, base.indent):
            continue
        second = parsed[k + period : k + 2 * period]
        if any(a.shape != b.shape for a, b in zip(block, second, strict=True)):
            continue
        steps = [
            tuple(y - x for x, y in zip(a.numbers, b.numbers, strict=True))
            for a, b in zip(block, second, strict=True)
        ]
        repeats = 2
        while k + (repeats + 1) * period <= hi and _is_copy(parsed, k, period, repeats, steps):
            repeats += 1
        if repeats < min_repeats or not _small(block, steps, repeats):
            continue
        after = k + period * repeats
        if after < hi and parsed[after].shape.lstrip().startswith(("else", "} else")):
            continue  # the copies end an if's branch: a loop would cut it from its else
        if best is None or period * repeats > best[0] * best[1]:
            best = (period, repeats, steps)
    return best


def _block_ok(block: list[Line], indent: int) -> bool:
    depth = 0
    for ln in block:
        if not ln.rollable or ln.indent < indent:
            return False
        depth += ln.opens
        if depth < 0:
            return False
    first = block[0].shape.lstrip()
    return depth == 0 and block[0].indent == indent and not first.startswith(("}", "else"))


def _is_copy(parsed: list[Line], k: int, period: int, i: int, steps: list[tuple[int, ...]]) -> bool:
    """Whether block i (from k) is block 0 with every constant advanced i steps."""
    for j in range(period):
        first, ln = parsed[k + j], parsed[k + i * period + j]
        if ln.shape != first.shape:
            return False
        if any(n != f + i * d for n, f, d in zip(ln.numbers, first.numbers, steps[j], strict=True)):
            return False
    return True


def _small(block: list[Line], steps: list[tuple[int, ...]], repeats: int) -> bool:
    """Every stepping constant stays an int (0 .. 2^31 - 1) over the whole run."""
    for ln, st in zip(block, steps, strict=True):
        for n, d in zip(ln.numbers, st, strict=True):
            if d and not (0 <= n <= INT_MAX and 0 <= n + (repeats - 1) * d <= INT_MAX):
                return False
    return True


def _substitute(ln: Line, steps: tuple[int, ...], var: str) -> str:
    pieces = ln.shape.split("\0")
    text = [pieces[0]]
    for n, d, rest in zip(ln.numbers, steps, pieces[1:], strict=True):
        if d == 0:
            text.append(str(n))
        elif d == 1:
            text.append(f"({n} + {var})")
        elif d > 0:
            text.append(f"({n} + {d} * {var})")
        else:
            text.append(f"({n} - {-d} * {var})")
        text.append(rest)
    return "".join(text)
