"""The re-roller (switch/native/creroll.py): unrolling its loops again gives back exactly the
lines it was given, and what a loop would change the meaning of is never re-rolled. (That
the loops run like the copies is proven by the differential tests, which drive the
aggregation programs' re-rolled K-element code against the interpreter.)"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from p4reduce.switch.native import creroll

MIN = 8  # the tests' minimum run (the generator's, creroll.MIN_REPEATS, is far longer)


def reroll(body: str) -> str:
    return creroll.reroll(body, MIN)


LOOP = re.compile(r"^( *)for \(int (_roll\d+) = 0; \2 < (\d+); \2\+\+\) \{$")
TERM = re.compile(r"\((\d+) ([+-]) (?:(\d+) \* )?(_roll\d+)\)")


def unroll(text: str) -> str:
    """Expand every loop reroll() wrote back into its copies."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = LOOP.match(lines[i])
        if m is None:
            out.append(lines[i])
            i += 1
            continue
        pad, var, n = m[1], m[2], int(m[3])
        end = lines.index(f"{pad}}}", i + 1)
        # written one level deeper; its own loops first, so that their terms in this
        # loop's variable become (number + step * var) again
        copy = unroll("\n".join(ln[4:] for ln in lines[i + 1 : end]))
        for r in range(n):

            def value(t: re.Match[str], r: int = r, var: str = var) -> str:
                if t[4] != var:
                    return t[0]
                step = int(t[3] or 1) * (1 if t[2] == "+" else -1)
                return str(int(t[1]) + step * r)

            out.append(TERM.sub(value, copy))
        i = end + 1
    return "\n".join(out)


def body(lines: list[str]) -> str:
    return "\n".join(["static int f(uint64_t *S, p4r_pkt *P) {", *lines, "}"])


def test_a_run_becomes_one_loop_and_unrolls_back() -> None:
    src = body(
        [f"    S[{46 + i}] = p4r_get_bits(_x, 1024, {8160 - 32 * i}, 32);" for i in range(64)]
    )
    rolled = reroll(src)
    assert rolled.count("for (int _roll") == 1
    assert "S[(46 + _roll0)] = p4r_get_bits(_x, 1024, (8160 - 32 * _roll0), 32);" in rolled
    assert unroll(rolled) == src


def test_a_block_with_a_nested_run_is_a_loop_within_a_loop() -> None:
    lines = []
    for j in range(10):
        lines.append(f"    if (S[{j}]) {{")
        lines += [f"        S[{100 + 20 * j + i}] = {i};" for i in range(9)]
        lines.append("    }")
    src = body(lines)
    rolled = reroll(src)
    assert rolled.count("for (int _roll") == 2
    assert unroll(rolled) == src


def test_fewer_copies_than_the_minimum_stay_as_they_are() -> None:
    src = body([f"    S[{i}] = 0;" for i in range(MIN - 1)])
    assert reroll(src) == src


def test_what_a_loop_would_change_is_never_rerolled() -> None:
    cases = [
        [f"    if (S[{i}]) break;" for i in range(20)],  # would leave the new loop
        [f"    if (S[{i}]) continue;" for i in range(20)],
        [f"    case {i}: S[{i}] = 1;" for i in range(20)],
        [f"    uint64_t _t{i} = S[{i}];" for i in range(20)],  # declarations
        [f"    uint64_t t = S[{i}];" for i in range(20)],
        [f"    S[1] = UINT64_C({i});" for i in range(20)],  # pasted to a suffix
        [f'    p4r_log(P, "cell {i}", S[1]);' for i in range(20)],  # in a string
        [f"    S[{i}] = 0; /* {i} */" for i in range(20)],  # comments stay
        [f"    S[{i * 2**27}] = 0;" for i in range(20)],  # would leave int's range
        [f"#line {i}" for i in range(20)],  # preprocessor lines
    ]
    for lines in cases:
        src = body(lines)
        rolled = reroll(src)
        assert unroll(rolled) == src
        assert "for (int _roll" not in rolled, lines[0]


def test_the_copies_of_an_if_branch_before_its_else_stay() -> None:
    lines = ["    if (S[0]) {"]
    lines += [f"        S[{i}] = 1;" for i in range(1, 12)]
    lines += ["    } else {", "        S[0] = 2;", "    }"]
    src = body(lines)
    rolled = reroll(src)
    assert unroll(rolled) == src
    assert "} else {" in rolled


def test_if_blocks_whose_copies_end_before_an_else_are_not_cut_from_it() -> None:
    lines = []
    for i in range(12):
        lines += [f"    if (S[{i}]) {{", f"        S[{50 + i}] = 1;", "    }"]
    lines += ["    else {", "        S[0] = 2;", "    }"]
    src = body(lines)
    rolled = reroll(src)
    assert unroll(rolled) == src
    # the last copy keeps its else: at most 11 copies are rolled
    assert "< 12;" not in rolled


SHAPES = [
    "S[{a}] = {b};",
    "S[{a}] = p4r_get_bits(_x, 1024, {b}, 32);",
    "P->E->reg[{a}][(S[7]) * 9] = S[{b}];",
    "if ((S[{a}] < 16384)) {{ S[{b}] = 1; }}",
    "S[{a}] = (S[{b}] & UINT64_C(4294967295));",
    "p4r_put_bits((P->out + P->outlen), 4096, {b}, 32, S[{a}]);",
]


@st.composite
def bodies(draw: st.DrawFn) -> str:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 6))):
        period = draw(st.integers(1, 3))
        shapes = [draw(st.sampled_from(SHAPES)) for _ in range(period)]
        starts = [(draw(st.integers(0, 5000)), draw(st.integers(0, 5000))) for _ in shapes]
        steps = [(draw(st.integers(-3, 3)), draw(st.integers(-40, 40))) for _ in shapes]
        copies = draw(st.integers(1, 20))
        nested = draw(st.booleans())
        for c in range(copies):
            if nested:
                lines.append(f"    if (S[{c}]) {{")
            for shape, (a, b), (da, db) in zip(shapes, starts, steps, strict=True):
                pad = "        " if nested else "    "
                lines.append(pad + shape.format(a=abs(a + da * c), b=abs(b + db * c)))
            if nested:
                lines.append("    }")
        if draw(st.booleans()):
            lines.append("    P->outlen += 4;")
    return body(lines)


@settings(max_examples=300, deadline=None)
@given(src=bodies())
def test_any_body_unrolls_back_to_itself(src: str) -> None:
    assert unroll(reroll(src)) == src


def test_the_generators_minimum_leaves_short_runs_unrolled() -> None:
    src = body([f"    S[{i}] = 0;" for i in range(creroll.MIN_REPEATS - 1)])
    assert creroll.reroll(src) == src
    longer = body([f"    S[{i}] = 0;" for i in range(creroll.MIN_REPEATS)])
    assert creroll.reroll(longer).count("for (int _roll") == 1
