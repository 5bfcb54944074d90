"""Property tests: random fixed-point and i32 programs are reversible bit for bit.

The issue (§3 number systems): `+=`/`-=` of fixed (Q20.43) values are exact, products
and quotients in expressions are rounded to nearest, and overflow wraps like i64; so
any program of `+=`/`-=` updates, SWAP/NEG (INC/DEC on i32), loops, calls, uncalls, branches and
compute-copy-uncompute ancillas, run forward and then backward, gives back its inputs
with every bit of their raw values.  The same holds for i32 programs, whose arithmetic
wraps at 32 bits.

The generated programs read every variable except the target on the right-hand side,
divide only by non-zero literals (division by a variable could be by zero), and start
from arbitrary raw values over the whole i64 (or i32) range, so products overflow and
wrap freely.  A failure shows the program (`note`) and the arguments.

`RLANG_PROPERTY_SCALE=20` multiplies the number of examples for a longer search.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import rlang
from rlang.numbers import I32, Fixed

SCALE = float(os.environ.get("RLANG_PROPERTY_SCALE", "1"))


def _settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1

# ------------------------------------------------------------ fixed-point programs

FIXED_VARS = ("x", "y", "z", "w")
FIXED_LITERALS = ("0.3", "-1.25", "2", "0.001", "7.5", "-3", "1e-6", "0.7071067811865476",
                  "1024.0", "-0.5")
NONZERO_DIVISORS = ("3", "0.7", "-1.5", "1e-3", "7.25", "2", "-0.1", "1000.0")


@st.composite
def fixed_exprs(draw, readable: tuple, indices: tuple, depth: int = 2):
    """An expression of fixed values over the `readable` names (and loop indices)."""
    leaves = [st.sampled_from(FIXED_LITERALS).map(lambda lit: f"fixed({lit})")]
    if readable:
        leaves.append(st.sampled_from(readable))
    if indices:
        leaves.append(st.sampled_from(indices).map(lambda i: f"fixed({i})"))
    leaf = st.one_of(*leaves)
    if depth == 0:
        return draw(leaf)
    kind = draw(st.sampled_from(["leaf", "mul", "div", "add", "sub", "neg", "mul_lit"]))
    if kind == "leaf":
        return draw(leaf)
    left = draw(fixed_exprs(readable, indices, depth - 1))
    if kind == "div":
        return f"({left}) / {draw(st.sampled_from(NONZERO_DIVISORS))}"
    if kind == "neg":
        return f"-({left})"
    if kind == "mul_lit":
        return f"({left}) * {draw(st.sampled_from(FIXED_LITERALS))}"
    right = draw(fixed_exprs(readable, indices, depth - 1))
    op = {"mul": "*", "add": "+", "sub": "-"}[kind]
    return f"({left}) {op} ({right})"


def _read_names(expr: str, names) -> set:
    import re
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", expr))
    return {n for n in names if n in words}


class _Names:
    """Fresh names for ancillas and loop indices."""

    def __init__(self):
        self.count = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"


@st.composite
def fixed_statements(draw, writable: tuple, readable: tuple, indices: tuple, names: _Names,
                     depth: int):
    """One statement (as a list of source lines) that writes only `writable` names."""
    kinds = ["update", "update", "update", "swap", "neg", "step"]
    if depth > 0:
        kinds += ["for", "routine", "ancilla", "call", "uncall", "if"]
    kind = draw(st.sampled_from(kinds))
    if kind in ("swap", "call", "uncall") and len(writable) < 2:
        kind = "update"
    if not writable:
        return []
    if kind == "update":
        target = draw(st.sampled_from(writable))
        others = tuple(n for n in readable if n != target)
        expr = draw(st.one_of(fixed_exprs(others, indices),
                              st.sampled_from(FIXED_LITERALS)))    # a bare literal adapts
        op = draw(st.sampled_from(["+=", "-="]))
        return [f"{target} {op} {expr}"]
    if kind == "swap":
        a, b = draw(st.lists(st.sampled_from(writable), min_size=2, max_size=2, unique=True))
        return [draw(st.sampled_from([f"SWAP({a}, {b})", f"{a} <=> {b}"]))]
    if kind == "neg":
        return [f"NEG({draw(st.sampled_from(writable))})"]
    if kind == "step":                  # INC and DEC step integers; a fixed steps by += 1
        return [f"{draw(st.sampled_from(writable))} {draw(st.sampled_from(['+=', '-=']))} 1"]
    if kind in ("call", "uncall"):
        a, b = draw(st.lists(st.sampled_from(writable), min_size=2, max_size=2, unique=True))
        return [f"{'~' if kind == 'uncall' else ''}g({a}, {b})"]
    if kind == "for":
        index = names.fresh("i")
        stop = draw(st.integers(0, 4))
        body = draw(fixed_blocks(writable, readable, indices + (index,), names, depth - 1))
        return [f"for {index} = 1:{stop}", *("    " + line for line in body), "end"]
    if kind == "if":
        cond_var = draw(st.sampled_from(readable))
        inner = tuple(n for n in writable if n != cond_var)
        body = draw(fixed_blocks(inner, readable, indices, names, depth - 1))
        cond = f"{cond_var} {draw(st.sampled_from(['>', '<=', '==', '!=']))} " \
               f"{draw(st.sampled_from(['0.0', '0.5', '-1']))}"
        return [f"if ({cond}, ~)", *("    " + line for line in body), "end"]
    # compute, use, uncompute: the ancilla and what it was computed from stay unchanged
    ancilla = names.fresh("t")
    sources = tuple(draw(st.lists(st.sampled_from(readable), min_size=1, max_size=3,
                                  unique=True)))
    expr = draw(fixed_exprs(sources, indices))
    used = _read_names(expr, readable)
    inner_writable = tuple(n for n in writable if n not in used)
    body = draw(fixed_blocks(inner_writable, readable + (ancilla,), indices, names, depth - 1))
    if kind == "routine":
        return ["@routine begin", f"    {ancilla} ← zero(fixed)", f"    {ancilla} += {expr}",
                "end", *body, "~@routine"]
    start = draw(st.sampled_from(FIXED_LITERALS))
    return [f"{ancilla} ← fixed({start})", f"{ancilla} += {expr}", *body,
            f"{ancilla} -= {expr}", f"{ancilla} → fixed({start})"]


@st.composite
def fixed_blocks(draw, writable, readable, indices, names, depth):
    lines = []
    for _ in range(draw(st.integers(1, 3))):
        lines += draw(fixed_statements(writable, readable, indices, names, depth))
    return lines


@st.composite
def fixed_programs(draw):
    names = _Names()
    lines = []
    for _ in range(draw(st.integers(1, 5))):
        lines += draw(fixed_statements(FIXED_VARS, FIXED_VARS, (), names, 2))
    body = "".join(f"    {line}\n" for line in lines)
    params = ", ".join(f"{v}: fixed" for v in FIXED_VARS)
    return (f"function f({params})\n{body}end\n\n"
            "function g(a: fixed, b: fixed)\n"
            "    a += b * 0.75 - 0.125\n"
            "    NEG(b)\n"
            "    b -= a / 3\n"
            "end\n")


raw_values = st.one_of(st.integers(I64_MIN, I64_MAX),
                       st.integers(-(1 << 50), 1 << 50),           # |value| < 128
                       st.sampled_from([0, 1, -1, I64_MIN, I64_MAX, 1 << 43, -(1 << 43)]))


def _raws(values) -> list:
    return [v.raw for v in values]


@_settings(300)
@given(fixed_programs(), st.lists(raw_values, min_size=4, max_size=4))
def test_random_fixed_point_programs_are_reversible_bit_for_bit(source, raws):
    note(source)
    m = rlang.loads(source)
    args = [Fixed(r) for r in raws]
    after = m.f(*args)
    assert all(type(v) is Fixed for v in after)
    back = (~m.f)(*after)
    assert _raws(back) == raws, f"forward gave {_raws(after)}"
    # and the other way round: backward, then forward
    before = (~m.f)(*args)
    assert _raws(m.f(*before)) == raws
    # the checks change nothing: the same result with invcheck off
    unchecked = rlang.loads(source, invcheck=False)
    assert _raws(unchecked.f(*args)) == _raws(after)


@_settings(60)
@given(fixed_programs(), st.lists(raw_values, min_size=4, max_size=4))
def test_random_fixed_point_programs_undone_by_an_uncall(source, raws):
    """`f(…); ~f(…)` inside rev code is the identity too."""
    wrapper = ("function h(x: fixed, y: fixed, z: fixed, w: fixed)\n"
               "    f(x, y, z, w)\n    ~f(x, y, z, w)\nend\n")
    note(source)
    m = rlang.loads(source + wrapper)
    assert _raws(m.h(*[Fixed(r) for r in raws])) == raws


# ------------------------------------------------------------------ i32 programs

I32_VARS = ("i", "j", "k")
I32_LITERALS = ("1", "7", "-3", "65536", "2147483647", "-2147483648", "1000003", "0")
I32_DIVISORS = ("3", "-7", "65536", "2", "1000003")


@st.composite
def i32_exprs(draw, readable: tuple, depth: int = 2):
    leaves = [st.sampled_from(I32_LITERALS), st.just("n")]
    if readable:
        leaves.append(st.sampled_from(readable))
    leaf = st.one_of(*leaves)
    if depth == 0:
        return draw(leaf)
    kind = draw(st.sampled_from(["leaf", "bin", "bin", "div", "shift", "unary"]))
    if kind == "leaf":
        return draw(leaf)
    left = draw(i32_exprs(readable, depth - 1))
    if kind == "div":
        return f"({left}) {draw(st.sampled_from(['//', '%']))} " \
               f"{draw(st.sampled_from(I32_DIVISORS))}"
    if kind == "shift":
        return f"({left}) {draw(st.sampled_from(['<<', '>>']))} {draw(st.integers(0, 35))}"
    if kind == "unary":
        return f"{draw(st.sampled_from(['-', '~']))}({left})"
    right = draw(i32_exprs(readable, depth - 1))
    return f"({left}) {draw(st.sampled_from(['+', '-', '*', '&', '|', '^']))} ({right})"


@st.composite
def i32_statements(draw, writable: tuple, readable: tuple, names: _Names, depth: int):
    kinds = ["update", "update", "update", "swap", "neg", "step"]
    if depth > 0:
        kinds += ["for", "ancilla"]
    kind = draw(st.sampled_from(kinds))
    if kind == "swap" and len(writable) < 2:
        kind = "update"
    if not writable:
        return []
    if kind == "update":
        target = draw(st.sampled_from(writable))
        expr = draw(i32_exprs(tuple(n for n in readable if n != target)))
        return [f"{target} {draw(st.sampled_from(['+=', '-=', '^=']))} {expr}"]
    if kind == "swap":
        a, b = draw(st.lists(st.sampled_from(writable), min_size=2, max_size=2, unique=True))
        return [f"SWAP({a}, {b})"]
    if kind == "neg":
        return [f"NEG({draw(st.sampled_from(writable))})"]
    if kind == "step":
        return [f"{draw(st.sampled_from(['INC', 'DEC']))}({draw(st.sampled_from(writable))})"]
    if kind == "for":
        index = names.fresh("m")
        body = []
        for _ in range(draw(st.integers(1, 2))):
            body += draw(i32_statements(writable, readable, names, depth - 1))
        return [f"for {index} = 1:{draw(st.integers(0, 3))}", *("    " + s for s in body), "end"]
    ancilla = names.fresh("t")
    expr = draw(i32_exprs(readable))
    used = _read_names(expr, readable)
    inner = tuple(n for n in writable if n not in used)
    body = draw(i32_statements(inner, readable + (ancilla,), names, depth - 1)) if inner else []
    return [f"{ancilla} ← i32(0)", f"{ancilla} += {expr}", *body, f"{ancilla} -= {expr}",
            f"{ancilla} → i32(0)"]


@st.composite
def i32_programs(draw):
    names = _Names()
    lines = []
    for _ in range(draw(st.integers(1, 6))):
        lines += draw(i32_statements(I32_VARS, I32_VARS, names, 2))
    body = "".join(f"    {line}\n" for line in lines)
    return f"function f(i: i32, j: i32, k: i32, n)\n{body}end\n"


i32_values = st.one_of(st.integers(I32_MIN, I32_MAX),
                       st.sampled_from([0, 1, -1, I32_MIN, I32_MAX, 65536]))


@_settings(200)
@given(i32_programs(), st.lists(i32_values, min_size=3, max_size=3),
       st.integers(I64_MIN, I64_MAX))
def test_random_i32_programs_wrap_and_are_reversible(source, values, n):
    note(source)
    m = rlang.loads(source)
    args = [I32(v) for v in values] + [n]
    after = m.f(*args)
    assert all(type(v) is I32 for v in after[:3]) and after[3] == n
    assert all(I32_MIN <= v <= I32_MAX for v in after[:3])
    back = (~m.f)(*after)
    assert [int(v) for v in back] == values + [n] and all(type(v) is I32 for v in back[:3])
    assert [int(v) for v in m.f(*(~m.f)(*args))] == values + [n]


def test_an_i32_program_agrees_with_numpy_int32():
    """A fixed program whose result is known: NumPy's int32 arithmetic, wrapping."""
    import numpy as np

    m = rlang.loads("function f(i: i32, j: i32)\n    i += j * j\n    j -= i * 3\n"
                    "    i ^= j << 5\nend\n")
    with np.errstate(over="ignore"):
        i, j = np.int32(123456), np.int32(-98765)
        i = np.int32(i + j * j)
        j = np.int32(j - i * np.int32(3))
        i = np.int32(i ^ (j << np.int32(5)))
    assert [int(v) for v in m.f(I32(123456), I32(-98765))] == [int(i), int(j)]
