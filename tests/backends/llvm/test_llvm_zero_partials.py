"""Partials zero by rule (Note [Partials zero by rule], rlang/ad/zero_partials.py): a
term whose partial derivative is zero by its rule adds nothing to a gradient, even
behind an infinite or nan seed, on the interpreter as in compiled passes; a partial
that is zero only at the run's values multiplies the seed as IEEE 754 says."""
from __future__ import annotations

import math

import numpy as np
import pytest

import rlang
from rlang.ad.zero_partials import zero_by_rule
from rlang.frontend import ast
from rlang.numbers import Fixed

# w += (a term) · y: y = inf or nan makes the seed reaching the term non-finite
SOURCE = """
const NOTHING = 0.0

function through_floor(w: f64, x: f64, y: f64)
    w += floor(x) * y
end

function through_round_and_sign(w: f64, x: f64, y: f64)
    w += (round(x) + sign(x) + ceil(x)) * y
end

function through_floor_division(w: f64, x: f64, y: f64)
    w += (x // 2.0) * y
end

function times_constant_zero(w: f64, x: f64, y: f64)
    w += (x * 0.0 + 0 * x + x * NOTHING + f64(0) * x) * y
end

function times_zero_value(w: f64, x: f64, y: f64, z: f64)
    w += (x * z) * y
end

function through_fixed_floor(w: f64, q: fixed[:], y: f64)
    w += f64(floor(q[0])) * y
end
"""

CASES = [
    ("through_floor", (0.0, 1.5, math.inf), 1, 0.0),
    ("through_floor", (0.0, 1.5, math.nan), 1, 0.0),
    ("through_round_and_sign", (0.0, -2.5, math.nan), 1, 0.0),
    ("through_floor_division", (0.0, 3.0, math.inf), 1, 0.0),
    ("times_constant_zero", (0.0, 3.0, math.nan), 1, 0.0),
    ("times_zero_value", (0.0, 3.0, math.nan, 0.0), 1, math.nan),
    ("times_zero_value", (0.0, 3.0, 2.0, 0.0), 1, 0.0),
]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
@pytest.mark.parametrize("name, args, position, expected", CASES,
                         ids=[f"{c[0]}-{c[1][2]}" for c in CASES])
def test_a_term_zero_by_rule_adds_nothing_behind_a_non_finite_seed(backend, name, args,
                                                                  position, expected):
    m = rlang.loads(SOURCE, backend=backend)
    grads = rlang.gradient(getattr(m, name), args, loss="w")
    got = grads[position]
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == expected


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_fixed_array_read_through_floor_gets_no_nan(backend):
    """The fuzzer's finding: qs's gradient was nan on the interpreter, 0 compiled."""
    m = rlang.loads(SOURCE, backend=backend)
    q = rlang.fixed_array([2.5])
    grads = rlang.gradient(m.through_fixed_floor, (0.0, q, math.nan), loss="w")
    assert np.array_equal(np.asarray(grads[1], dtype=float), [0.0])


def _binary(op, left, right):
    return ast.Binary(op, left, right)


def test_zero_by_rule_sees_constants_as_lowering_folds_them():
    x, zero = ast.Name("x"), ast.FloatLit(0.0)
    product = _binary("*", x, zero)
    assert zero_by_rule(product, 0, (3.0, 0.0), {})
    assert not zero_by_rule(_binary("*", x, ast.Name("z")), 0, (3.0, 0.0), {})
    # a fixed product's constant is converted at run time in compiled code: not folded
    assert not zero_by_rule(product, 0, (Fixed.from_value(3.0), 0), {})
    assert zero_by_rule(ast.Call("floor", (x,)), 0, (3.5,), {})
    assert not zero_by_rule(ast.Call("sin", (x,)), 0, (0.0,), {})
