"""The registry of primitives (rlang/primitives.py).

Walks the tables and fails when a built-in of LANGUAGE.md §7 or an instruction of §6
is missing, when a column (forward, partials, inverse) is missing or inconsistent,
when a partial derivative disagrees with central finite differences, or when a
built-in run in a program disagrees with Python's `math`.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest

import rlang
from rlang import primitives
from rlang.primitives import (BUILTINS, CONSTANTS, CONVERSIONS, INSTRUCTION_TABLE,
                              STRUCTURAL_BUILTINS, builtin_arity, is_builtin_function)

#: LANGUAGE.md §7, pure built-in functions (name → (min, max) argument counts).
SPEC_MATH = {
    "sin": (1, 1), "cos": (1, 1), "tan": (1, 1), "asin": (1, 1), "acos": (1, 1),
    "atan": (1, 2), "sinh": (1, 1), "cosh": (1, 1), "tanh": (1, 1), "exp": (1, 1),
    "log": (1, 1), "log1p": (1, 1), "expm1": (1, 1), "sqrt": (1, 1), "cbrt": (1, 1),
    "abs": (1, 1), "abs2": (1, 1), "angle": (1, 1), "real": (1, 1), "imag": (1, 1),
    "conj": (1, 1), "min": (2, 2), "max": (2, 2), "floor": (1, 1), "ceil": (1, 1),
    "round": (1, 1), "sign": (1, 1), "hypot": (2, 2),
}
SPEC_STRUCTURAL = {"length": (1, 1), "size": (2, 2), "zero": (1, 1), "one": (1, 1),
                   "zeros": (2, None), "stack": (1, 1)}
#: LANGUAGE.md §3 conversions (complex takes re and im).
SPEC_CONVERSIONS = ["f64", "f32", "i64", "i32", "fixed", "ulog", "complex"]
SPEC_CONSTANTS = {"pi": math.pi, "inf": math.inf}
#: LANGUAGE.md §6 instructions and their inverses.
SPEC_INSTRUCTIONS = {"SWAP": ("SWAP", 2), "NEG": ("NEG", 1), "INC": ("DEC", 1),
                     "DEC": ("INC", 1), "FLIP": ("FLIP", 1), "CONJ": ("CONJ", 1),
                     "ROT": ("IROT", 3), "IROT": ("ROT", 3), "HADAMARD": ("HADAMARD", 2),
                     "PUSH": ("POP", 2), "POP": ("PUSH", 2)}


# ------------------------------------------------------------------ presence

@pytest.mark.parametrize("name", sorted(SPEC_MATH))
def test_every_math_builtin_of_the_spec_is_registered_with_its_arity(name):
    assert name in BUILTINS
    builtin = BUILTINS[name]
    assert builtin.name == name
    assert (builtin.min_args, builtin.max_args) == SPEC_MATH[name]
    assert builtin_arity(name) == SPEC_MATH[name]
    assert is_builtin_function(name)


@pytest.mark.parametrize("name", sorted(SPEC_STRUCTURAL))
def test_every_structural_builtin_of_the_spec_is_registered(name):
    assert name in STRUCTURAL_BUILTINS
    low, high = builtin_arity(name)
    want_low, want_high = SPEC_STRUCTURAL[name]
    assert low == want_low
    assert high == want_high if want_high is not None else high >= 3
    assert is_builtin_function(name)


@pytest.mark.parametrize("name", SPEC_CONVERSIONS)
def test_every_conversion_of_the_spec_is_registered(name):
    assert name in CONVERSIONS or name in STRUCTURAL_BUILTINS
    assert is_builtin_function(name)
    low, high = builtin_arity(name)
    assert low == 1 and high == (2 if name == "complex" else 1)


def test_the_constants():
    for name, value in SPEC_CONSTANTS.items():
        assert CONSTANTS[name] == value
    assert math.isnan(CONSTANTS["nan"])


def test_no_builtin_is_registered_twice_or_under_a_user_name():
    names = list(BUILTINS) + list(STRUCTURAL_BUILTINS) + list(CONVERSIONS)
    assert len(names) == len(set(names))
    assert not is_builtin_function("my_function")
    with pytest.raises(KeyError):
        builtin_arity("my_function")


def test_allocation_only_builtins_are_registered():
    for name in primitives.ALLOCATION_ONLY:
        assert name in STRUCTURAL_BUILTINS


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_has_forward_and_partials_of_matching_arity(name):
    builtin = BUILTINS[name]
    assert callable(builtin.forward)
    assert callable(builtin.partials)
    point = DOMAINS[name](random.Random(0))
    for nargs in range(builtin.min_args, builtin.max_args + 1):
        args = point[:nargs] if nargs <= len(point) else point + [0.7] * (nargs - len(point))
        partials = builtin.partials(*args)
        assert len(partials) == nargs, (name, nargs, partials)
        assert isinstance(builtin.forward(*args), (int, float))


# ------------------------------------------------------------ finite differences

def _away_from_integers(rng):
    return rng.randrange(-5, 5) + rng.uniform(0.1, 0.4)


def _distinct_pair(rng):
    a = rng.uniform(-3, 3)
    return [a, a + rng.choice([-1, 1]) * rng.uniform(0.2, 2)]


#: A random point inside each function's domain, away from kinks and poles.
DOMAINS = {
    "sin": lambda r: [r.uniform(-4, 4)], "cos": lambda r: [r.uniform(-4, 4)],
    "tan": lambda r: [r.uniform(-1.3, 1.3)], "asin": lambda r: [r.uniform(-0.9, 0.9)],
    "acos": lambda r: [r.uniform(-0.9, 0.9)], "atan": lambda r: [r.uniform(-4, 4)],
    "sinh": lambda r: [r.uniform(-3, 3)], "cosh": lambda r: [r.uniform(-3, 3)],
    "tanh": lambda r: [r.uniform(-3, 3)], "exp": lambda r: [r.uniform(-3, 3)],
    "log": lambda r: [r.uniform(0.1, 10)], "log1p": lambda r: [r.uniform(-0.9, 10)],
    "expm1": lambda r: [r.uniform(-3, 3)], "sqrt": lambda r: [r.uniform(0.1, 10)],
    "cbrt": lambda r: [r.choice([-1, 1]) * r.uniform(0.1, 10)],
    "abs": lambda r: [r.choice([-1, 1]) * r.uniform(0.1, 10)],
    "abs2": lambda r: [r.uniform(-5, 5)], "angle": lambda r: [r.choice([-1, 1]) * r.uniform(0.1, 5)],
    "real": lambda r: [r.uniform(-5, 5)], "imag": lambda r: [r.uniform(-5, 5)],
    "conj": lambda r: [r.uniform(-5, 5)], "min": _distinct_pair, "max": _distinct_pair,
    "floor": lambda r: [_away_from_integers(r)], "ceil": lambda r: [_away_from_integers(r)],
    "round": lambda r: [_away_from_integers(r)], "sign": lambda r: [r.choice([-1, 1]) * r.uniform(0.1, 5)],
    "hypot": lambda r: [r.uniform(0.2, 3) * r.choice([-1, 1]), r.uniform(0.2, 3) * r.choice([-1, 1])],
}


def test_every_builtin_has_a_test_domain():
    assert set(DOMAINS) == set(BUILTINS)


def _central_difference(fn, args, k, h=1e-6):
    up, down = list(args), list(args)
    up[k] += h
    down[k] -= h
    return (fn(*up) - fn(*down)) / (2 * h)


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_partials_agree_with_central_finite_differences(name):
    builtin = BUILTINS[name]
    rng = random.Random(f"partials-{name}")
    arities = [builtin.min_args] if builtin.min_args == builtin.max_args else \
        [builtin.min_args, builtin.max_args]
    for _ in range(20):
        for nargs in arities:
            args = [float(a) for a in DOMAINS[name](rng)]
            if nargs == 2 and len(args) == 1:       # atan(y, x): a point away from 0
                args = [args[0], rng.uniform(0.3, 3) * rng.choice([-1, 1])]
            partials = builtin.partials(*args)
            for k in range(nargs):
                numeric = _central_difference(builtin.forward, args, k)
                assert partials[k] == pytest.approx(numeric, rel=1e-5, abs=1e-6), \
                    (name, args, k)


# ---------------------------------------------------------------- instructions

@pytest.mark.parametrize("name", sorted(SPEC_INSTRUCTIONS))
def test_every_instruction_of_the_spec_is_registered_with_its_inverse(name):
    assert name in INSTRUCTION_TABLE
    instruction = INSTRUCTION_TABLE[name]
    inverse, arity = SPEC_INSTRUCTIONS[name]
    assert instruction.name == name
    assert instruction.arity == arity
    assert instruction.inverse == inverse
    assert instruction.inverse in INSTRUCTION_TABLE
    assert INSTRUCTION_TABLE[instruction.inverse].inverse == name
    assert INSTRUCTION_TABLE[instruction.inverse].arity == arity
    assert instruction.written and all(0 <= i < arity for i in instruction.written)
    assert instruction.description


def test_the_instruction_table_has_nothing_the_spec_does_not_name():
    assert set(INSTRUCTION_TABLE) == set(SPEC_INSTRUCTIONS)


def test_rot_does_not_write_its_angle():
    assert 2 not in INSTRUCTION_TABLE["ROT"].written
    assert 2 not in INSTRUCTION_TABLE["IROT"].written


def test_every_instruction_runs_forward_and_backward_in_a_program():
    """Each instruction of the table, uncalled after being called, restores its operands."""
    m = rlang.loads("""
function f(i!, x!, b!, z!: complex, s!: stack{f64}, y!)
    SWAP(x!, y!)
    NEG(x!)
    INC(i!)
    DEC(i!)
    DEC(i!)
    FLIP(b!)
    CONJ(z!)
    ROT(x!, y!, 0.25)
    IROT(x!, y!, 0.5)
    HADAMARD(x!, y!)
    PUSH(s!, x!)
    POP(s!, x!)
end
""")
    from rlang.values import Stack
    s = Stack("f64", [9.0])
    args = (5, 1.5, True, 1 + 2j, s, -0.5)
    out = m.f(*args)
    assert out[0] == 4 and out[2] is False and out[3] == 1 - 2j
    assert s.items == [9.0]
    back = (~m.f)(*out)
    assert back[0] == 5 and back[2] is True and back[3] == 1 + 2j
    assert back[5] == pytest.approx(-0.5, abs=1e-15)
    assert back[1] == pytest.approx(1.5, abs=1e-15)


# ------------------------------------------------------- built-ins in programs

MATH_REFERENCE = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "exp": math.exp, "log": math.log, "log1p": math.log1p, "expm1": math.expm1,
    "sqrt": math.sqrt, "cbrt": lambda x: math.copysign(abs(x) ** (1 / 3), x),
    "abs": abs, "abs2": lambda x: x * x, "angle": lambda x: math.atan2(0.0, x),
    "real": lambda x: x, "imag": lambda x: 0.0, "conj": lambda x: x, "min": min, "max": max,
    "floor": lambda x: float(math.floor(x)), "ceil": lambda x: float(math.ceil(x)),
    "round": lambda x: float(round(x)), "sign": lambda x: math.copysign(1.0, x),
    "hypot": math.hypot,
}


def test_every_builtin_has_a_python_reference():
    assert set(MATH_REFERENCE) == set(BUILTINS)


@pytest.mark.parametrize("name", sorted(BUILTINS))
def test_every_builtin_in_a_program_gives_pythons_value(name):
    rng = random.Random(f"program-{name}")
    points = [DOMAINS[name](rng) for _ in range(5)]
    if name == "round":
        points += [[2.5], [3.5], [-2.5], [0.5]]      # halves round to even, as in Python
    lines = [f"    r{k} ← {name}({', '.join(repr(float(a)) for a in point)})"
             for k, point in enumerate(points)]
    store = rlang.loads("function main()\n" + "\n".join(lines) + "\nend\n").run_main()
    for (_, got), point in zip(store, points):
        expected = MATH_REFERENCE[name](*point)
        assert isinstance(got, float)
        assert got == pytest.approx(expected, rel=1e-15, abs=0.0), (name, point)


def test_atan_with_two_arguments_is_atan2():
    store = dict(rlang.loads("function main()\n    a ← atan(1.0, -1.0)\n"
                             "    b ← atan(-2.0, -0.0)\n    c ← atan(1.0)\nend\n").run_main())
    assert store == {"a": math.atan2(1.0, -1.0), "b": math.atan2(-2.0, -0.0), "c": math.atan(1.0)}


@pytest.mark.parametrize("expr, expected", [
    ("abs(-3)", 3), ("abs2(-3)", 9), ("min(3, -2)", -2), ("max(3, -2)", 3), ("sign(-7)", -1),
    ("sign(0)", 0), ("real(4)", 4), ("abs(-2.5)", 2.5), ("min(1, 2.5)", 1.0),
    ("sqrt(4)", 2.0), ("exp(0)", 1.0), ("floor(2.7)", 2.0), ("ceil(-2.7)", -2.0),
])
def test_integer_preserving_builtins_keep_integers_integer(expr, expected):
    ((_, got),) = rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()
    assert got == expected and type(got) is type(expected)


@pytest.mark.parametrize("expr, check", [
    ("sqrt(-1.0)", math.isnan), ("log(-1.0)", math.isnan), ("asin(2.0)", math.isnan),
    ("exp(1000.0)", lambda v: v == math.inf), ("1.0 / 0.0", lambda v: v == math.inf),
    ("min(nan, 1.0)", math.isnan), ("max(1.0, nan)", math.isnan), ("sign(nan)", math.isnan),
    ("floor(inf)", lambda v: v == math.inf), ("round(-inf)", lambda v: v == -math.inf),
])
def test_builtins_outside_their_domain_follow_ieee(expr, check):
    ((_, got),) = rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()
    assert check(got)


@pytest.mark.parametrize("expr, expected", [
    ("length([1.0, 2.0, 3.0])", 3), ("length([[1, 2, 3], [4, 5, 6]])", 6),
    ("size([[1, 2, 3], [4, 5, 6]], 0)", 2), ("size([[1, 2, 3], [4, 5, 6]], 1)", 3),
    ("zero(f64)", 0.0), ("zero(i64)", 0), ("one(f64)", 1.0), ("one(i64)", 1),
    ("zero(bool)", False), ("one(complex)", 1 + 0j), ("complex(1.0, 2.0)", 1 + 2j),
    ("complex(3)", 3 + 0j), ("f64(3)", 3.0), ("i64(3.0)", 3), ("i64(-2.0)", -2),
    ("f64(true)", 1.0),
])
def test_structural_builtins_and_conversions(expr, expected):
    ((_, got),) = rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()
    assert got == expected and type(got) is type(expected)


def test_zeros_and_stack_allocate_fresh_values():
    store = dict(rlang.loads("function main()\n    a ← zeros(f64, 2, 3)\n"
                             "    b ← zeros(i64, 4)\n    s ← stack(f64)\nend\n").run_main())
    assert store["a"].shape == (2, 3) and store["a"].dtype == np.float64
    assert not store["a"].any()
    assert store["b"].dtype == np.int64 and store["b"].tolist() == [0, 0, 0, 0]
    assert store["s"].elem == "f64" and store["s"].items == []


@pytest.mark.parametrize("expr, kind", [
    ("i64(2.5)", rlang.RlangRuntimeError), ("i64(inf)", rlang.RlangRuntimeError),
    ("size([1.0, 2.0], 1)", rlang.RlangRuntimeError),
    ("length(3)", rlang.RlangTypeError), ("sin([1.0])", rlang.RlangTypeError),
])
def test_builtin_misuse_is_a_clean_error(expr, kind):
    with pytest.raises(kind):
        rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()


@pytest.mark.parametrize("expr", ["sin()", "sin(1.0, 2.0)", "min(1.0)", "hypot(1.0)",
                                  "atan(1.0, 2.0, 3.0)"])
def test_a_builtin_called_with_the_wrong_number_of_arguments_is_refused(expr):
    with pytest.raises(rlang.RlangError, match="argument"):
        rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()


@pytest.mark.parametrize("expr, expected", [("log(0.0)", -math.inf), ("log1p(-1.0)", -math.inf),
                                            ("0.0 ** -1", math.inf), ("0.0 ** -1.0", math.inf)])
def test_poles_give_infinities(expr, expected):
    ((_, got),) = rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()
    assert got == expected


def test_a_builtin_of_an_allocation_only_value_is_refused():
    with pytest.raises(rlang.CheckErrors, match="zeros"):
        rlang.loads("function main()\n    r ← length(zeros(f64, 2))\nend\n")


@pytest.mark.parametrize("expr, expected", [
    ("abs(3.0 + 4.0im)", 5.0), ("abs2(3.0 + 4.0im)", 25.0), ("angle(1.0im)", math.pi / 2),
    ("real(1.5 + 2.0im)", 1.5), ("imag(1.5 + 2.0im)", 2.0), ("conj(1.5 + 2.0im)", 1.5 - 2j),
])
def test_complex_builtins(expr, expected):
    ((_, got),) = rlang.loads(f"function main()\n    r ← {expr}\nend\n").run_main()
    assert got == pytest.approx(expected)
