"""Operator semantics of expressions (rlang/interp/ops.py; LANGUAGE.md §3 and §7), seen
through programs: each expression is the value of an allocation in `main`, and the
test looks at the value (and its Python type) in main's store.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlang
from rlang.errors import RlangRuntimeError, RlangTypeError

I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1


def value(expr: str):
    """The value of `expr`, computed by a rev program."""
    m = rlang.loads(f"function main()\n    r ← {expr}\nend\n")
    ((name, result),) = m.run_main()
    return result


def error(expr: str) -> rlang.RlangError:
    with pytest.raises(rlang.RlangError) as info:
        value(expr)
    return info.value


def wrap(x: int) -> int:
    return (x + (1 << 63)) % (1 << 64) - (1 << 63)


def same(a, b) -> bool:
    """Equal values of the same Python type (floats: same sign of zero, nan == nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    return a == b


@pytest.mark.parametrize("expr, expected", [
    # promotion: int → float → complex; bools count as integers in arithmetic
    ("1 + 2", 3), ("1 + 2.0", 3.0), ("2.0 * 3", 6.0), ("true + true", 2), ("3 - true", 2),
    ("1 + 2.0im", 1 + 2j), ("2.0im * 2.0im", -4 + 0j), ("(1.0 + 2.0im) * (3.0 - 1.0im)", 5 + 5j),
    ("1.5 - 2", -0.5),
    # `/` is true division and always gives a float
    ("7 / 2", 3.5), ("4 / 2", 2.0), ("-7 / 2", -3.5), ("1.0 / 4", 0.25),
    # integer // and % floor (Python)
    ("7 // 2", 3), ("-7 // 2", -4), ("7 // -2", -4), ("-7 // -2", 3),
    ("7 % 3", 1), ("-7 % 3", 2), ("7 % -3", -2), ("-7 % -3", -1),
    ("7 // 2 * 2 + 7 % 2", 7), ("-7 // 2 * 2 + -7 % 2", -7),
    # float %
    ("-7.5 % 2.0", 0.5), ("7.5 % -2.0", -0.5), ("1.0 % 0.1", 1.0 % 0.1), ("-0.5 % 1.0", 0.5),
    # float division by zero follows IEEE
    ("1.0 / 0.0", math.inf), ("-1.0 / 0.0", -math.inf), ("1.0 / -0.0", -math.inf),
    ("0.0 / 0.0", math.nan), ("5 % 0.0", math.nan),
    # ** is right-associative, binds tighter than unary minus, and keeps integers integer
    ("2 ** 3 ** 2", 512), ("(2 ** 3) ** 2", 64), ("2 ** 10", 1024), ("-2 ** 2", -4),
    ("(-2) ** 3", -8), ("0 ** 0", 1), ("2.0 ** -1", 0.5), ("2 ** 0.5", math.sqrt(2.0)),
    ("4.0 ** 0.5", 2.0), ("(-8.0) ** (1.0 / 3.0)", math.nan),
    # ^ is xor on integers and bools
    ("5 ^ 3", 6), ("-1 ^ 5", -6), ("true ^ true", False), ("true ^ false", True),
    ("5 & 3", 1), ("5 | 3", 7), ("true & false", False), ("true | false", True),
    # shifts
    ("1 << 3", 8), ("-16 >> 2", -4), ("5 >> 1", 2), ("1 << 62", 1 << 62),
    # comparisons
    ("3 < 4", True), ("4 <= 4", True), ("5 > 6", False), ("5 >= 6", False),
    ("3 == 3.0", True), ("3 != 3", False), ("3 ≠ 4", True), ("2 ≤ 2", True), ("2 ≥ 3", False),
    ("nan == nan", False), ("inf > 1e308", True), ("1.0 + 2.0im == 1.0 + 2.0im", True),
    # unary
    ("-(3)", -3), ("- -3", 3), ("-2.5", -2.5), ("!true", False), ("!!true", True),
    ("~5", -6), ("~0", -1), ("~true", False), ("-0.0", -0.0),
    # precedence, loosest first: || && comparisons | ^ & << >> + - * / // % unary **
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("10 - 2 - 3", 5), ("2 * 3 % 4", 2),
    ("1 | 2 ^ 3 & 5", 3), ("1 + 2 << 1", 6), ("3 & 5 == 1", True), ("6 ^ 3 == 5", True),
    ("1 < 2 && 2 < 3 || false", True), ("true || false && false", True),
    ("12 / 2 / 3", 2.0), ("2 * 3 ** 2", 18),
    # literals
    ("0x2A", 42), ("1_000", 1000), ("1e-3", 0.001), ("3.5", 3.5), ("2.0im", 2j),
])
def test_operator_values(expr, expected):
    result = value(expr)
    assert same(result, expected), (expr, result, expected)


@pytest.mark.parametrize("expr, expected", [
    (f"{I64_MAX} + 1", I64_MIN), (f"-{I64_MAX} - 2", I64_MAX), (f"{1 << 62} * 2", I64_MIN),
    ("(2 ** 62) * 4 + 3", 3), ("2 ** 63", I64_MIN), ("2 ** 64", 0), ("(-2) ** 63", I64_MIN),
    (f"-({-I64_MAX} - 1)", I64_MIN), ("1 << 63", I64_MIN), (f"{I64_MAX} ^ -1", I64_MIN),
])
def test_integer_arithmetic_wraps_at_64_bits(expr, expected):
    assert same(value(expr), expected)


def test_the_smallest_i64_can_be_written_as_a_literal():
    assert same(value("-9223372036854775808"), I64_MIN)


@pytest.mark.parametrize("literal", ["99999999999999999999", "9223372036854775808",
                                     "0x1_0000_0000_0000_0000"])
def test_integer_literals_outside_i64_are_refused(literal):
    with pytest.raises(rlang.RlangError):
        value(literal)


@pytest.mark.parametrize("expr, expected", [
    ("7.5 // 2", 3.0), ("-7.5 // 2.0", -4.0), ("7.0 // 2.0", 3.0), ("1.0 // 0.1", 9.0),
])
def test_float_floor_division_gives_a_float_as_in_python(expr, expected):
    assert same(value(expr), expected)


@pytest.mark.parametrize("expr, word", [("1 // 0", "division by zero"),
                                        ("1 % 0", "by zero"),
                                        (f"({-I64_MAX} - 1) // 0", "division by zero")])
def test_integer_division_by_zero_is_a_runtime_error(expr, word):
    err = error(expr)
    assert isinstance(err, RlangRuntimeError)
    assert word in err.message
    assert err.span.line == 2


def test_integer_division_by_zero_inside_a_function_names_the_line():
    m = rlang.loads("function f(y!, a, b)\n    y! += a // b\nend\n")
    assert m.f(0, 7, 2) == (3, 7, 2)
    with pytest.raises(RlangRuntimeError, match="division by zero") as info:
        m.f(0, 7, 0)
    assert info.value.span.line == 2


@pytest.mark.parametrize("expr", ["1.0 ^ 2.0", "2 ^ 0.5", "2.5 ^ 2"])
def test_xor_on_floats_is_a_type_error_hinting_at_power(expr):
    # the checker reports it when an operand is a float literal (#23); the run too
    err = error(expr)
    assert isinstance(err, (RlangTypeError, rlang.CheckError))
    assert "did you mean `**`?" in err.message


@pytest.mark.parametrize("expr", ["1.5 & 1", "1 | 2.0", "1.0 << 2", "4 >> 1.0", "~1.5"])
def test_bitwise_operators_need_integers(expr):
    assert isinstance(error(expr), (RlangTypeError, rlang.CheckError))


def test_integer_power_with_a_negative_exponent_is_an_error():
    err = error("2 ** -1")
    assert isinstance(err, RlangRuntimeError)
    assert "float" in err.message


@pytest.mark.parametrize("expr, expected", [
    ("false && 1 // 0 == 0", False), ("true || 1 // 0 == 0", True),
    ("false && (1 + true)", False), ("true || 5", True),
])
def test_and_or_short_circuit(expr, expected):
    assert value(expr) is expected


@pytest.mark.parametrize("expr", ["1 && true", "true && 1", "0 || false", "false || 2.0",
                                  "!1", "!0.0"])
def test_logical_operators_need_bools(expr):
    err = error(expr)
    assert isinstance(err, RlangTypeError)


@pytest.mark.parametrize("expr", ["1 < 2.0im", "1.0im >= 0.0im", "true + 1.0im < 3"])
def test_complex_numbers_are_not_ordered(expr):
    assert isinstance(error(expr), RlangTypeError)


def test_a_condition_must_be_a_bool():
    m = rlang.loads("function f(x!)\n    if x!\n        INC(x!)\n    end\nend\n")
    with pytest.raises(RlangTypeError, match="bool"):
        m.f(1)


def test_unary_minus_on_a_bool_is_a_type_error():
    assert isinstance(error("-true"), RlangTypeError)


# ------------------------------------------------------------- random integers

INT_OPS = rlang.loads("""
function add(r!, a, b)
    r! += a + b
end
function sub(r!, a, b)
    r! += a - b
end
function mul(r!, a, b)
    r! += a * b
end
function floordiv(r!, a, b)
    r! += a // b
end
function mod(r!, a, b)
    r! += a % b
end
function xor(r!, a, b)
    r! += a ^ b
end
""")
i64 = st.integers(I64_MIN, I64_MAX)


@settings(max_examples=60, deadline=None)
@given(a=i64, b=i64)
def test_random_integer_arithmetic_matches_python_wrapped_to_i64(a, b):
    assert INT_OPS.add(0, a, b)[0] == wrap(a + b)
    assert INT_OPS.sub(0, a, b)[0] == wrap(a - b)
    assert INT_OPS.mul(0, a, b)[0] == wrap(a * b)
    assert INT_OPS.xor(0, a, b)[0] == a ^ b
    if b != 0:
        assert INT_OPS.floordiv(0, a, b)[0] == wrap(a // b)
        assert INT_OPS.mod(0, a, b)[0] == a % b
    # and every update is undone by the inverse
    for name in ("add", "sub", "mul", "xor"):
        fn = INT_OPS[name]
        assert (~fn)(*fn(7, a, b)) == (7, a, b)


@settings(max_examples=60, deadline=None)
@given(a=st.floats(-1e6, 1e6), b=st.floats(-1e6, 1e6))
def test_random_float_arithmetic_matches_python(a, b):
    m = FLOAT_OPS
    assert m.add(0.0, a, b)[0] == 0.0 + (a + b)
    assert m.mul(0.0, a, b)[0] == 0.0 + a * b
    if b != 0.0:
        assert m.div(0.0, a, b)[0] == 0.0 + a / b
        assert m.mod(0.0, a, b)[0] == 0.0 + a % b


FLOAT_OPS = rlang.loads("""
function add(r!: f64, a: f64, b: f64)
    r! += a + b
end
function mul(r!: f64, a: f64, b: f64)
    r! += a * b
end
function div(r!: f64, a: f64, b: f64)
    r! += a / b
end
function mod(r!: f64, a: f64, b: f64)
    r! += a % b
end
""")


# ------------------------------------------------------------ update operators

def test_update_operator_of_a_wider_type_is_refused():
    m = rlang.loads("function f(x!, y)\n    x! += y\nend\n")
    assert m.f(1.0, 2) == (3.0, 2)
    with pytest.raises(RlangTypeError, match="f64"):
        m.f(1, 2.0)
    with pytest.raises(RlangTypeError, match="complex"):
        m.f(1.0, 2j)


@pytest.mark.parametrize("op", ["*=", "/="])
def test_multiplicative_updates_on_floats_are_errors_with_a_hint(op):
    with pytest.raises(rlang.RlangError) as info:
        rlang.loads(f"function f(x!: f64)\n    x! {op} 2.0\nend\n")
    text = info.value.render()
    assert "ulog" in text
    assert "reversible only on ulog" in text


@pytest.mark.parametrize("op", ["*=", "/="])
def test_multiplicative_updates_on_generic_parameters_fail_at_run_time(op):
    m = rlang.loads(f"function f(x!)\n    x! {op} 2.0\nend\n")
    with pytest.raises(RlangTypeError, match="ulog") as info:
        m.f(1.0)
    assert info.value.span.line == 2
