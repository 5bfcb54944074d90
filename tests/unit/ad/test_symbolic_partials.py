"""The symbolic partial derivatives of rlang/ad/symbolic.py.

`partials(node)` runs the registry's own rules (`primitives.BUILTINS[name].partials`,
`primitives.OPERATOR_PARTIALS`) on `Sym` values, which build IR instead of numbers.
For every differentiable built-in and operator the IR it builds is evaluated here
(by `evaluate`, a small evaluator of the node kinds that appear) and compared with
the same rule run on floats at sample points.  The registry is walked so that a new
built-in whose rule cannot be traced (it branches in Python, or calls float()) fails
here.  The other node kinds with partials (negation, conversions, selects,
reinterpretation, checks) and the leaves without any are checked too.
"""
from __future__ import annotations

import math
import operator

import numpy as np
import pytest

from rlang.ad.symbolic import Sym, as_f64, constant, is_zero, partials
from rlang.errors import InternalError
from rlang.ieee import rule_at
from rlang.ir import nodes as ir
from rlang.primitives import BUILTINS, OPERATOR_PARTIALS

#: What an IR `Builtin` node computes, in NumPy's IEEE arithmetic (independent of the
#: registry's `forward`).  A partial that uses any other built-in fails `evaluate`.
NUMPY_BUILTINS = {
    "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
    "tanh": np.tanh, "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "abs": np.abs,
    "sign": np.sign, "floor": np.floor,
}
ARITHMETIC = {"+": np.add, "-": np.subtract, "*": np.multiply, "/": np.divide,
              "**": np.power}
COMPARE = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
           "==": operator.eq, "!=": operator.ne}


def evaluate(e, env: dict) -> float:
    """The value of an f64 IR expression whose leaves are `Read`s of `env`'s variables."""
    kind = type(e)
    if kind is ir.Const:
        return np.float64(e.value)
    if kind is ir.Read:
        assert e.field is None
        return np.float64(env[e.var])
    if kind is ir.Unary:
        assert e.op == "-", e
        return -evaluate(e.operand, env)
    if kind is ir.Binary:
        return ARITHMETIC[e.op](evaluate(e.left, env), evaluate(e.right, env))
    if kind is ir.Builtin:
        return NUMPY_BUILTINS[e.name](*(evaluate(a, env) for a in e.args))
    if kind is ir.Compare:
        return COMPARE[e.op](evaluate(e.left, env), evaluate(e.right, env))
    if kind is ir.Select:           # both computed, as compiled code may
        cond, then, otherwise = (evaluate(x, env) for x in (e.cond, e.then, e.otherwise))
        return then if cond else otherwise
    if kind is ir.Convert:
        assert e.type == "f64", e
        value = evaluate(e.operand, env)
        return np.exp(value) if e.operand.type == "ulog" else value
    raise AssertionError(f"the evaluator does not know {kind.__name__}")


def traced(node, values: dict) -> dict:
    """{operand k: the value of ∂node/∂operand k} from the symbolic partials."""
    with np.errstate(all="ignore"):
        return {k: float(evaluate(p, values)) for k, p in partials(node)}


def agree(got: float, want: float) -> bool:
    if math.isnan(want):
        return math.isnan(got)
    return got == pytest.approx(want, rel=1e-12, abs=1e-15)


def reads(n: int, t: str = "f64") -> tuple:
    return tuple(ir.Var(f"x{k}", t) for k in range(n))


def check_against_rule(node, rule, variables, point) -> None:
    values = dict(zip(variables, point))
    want = rule_at(rule, tuple(float(v) for v in point))
    got = traced(node, values)
    assert set(got) <= set(range(len(variables))), got
    for k, expected in enumerate(want):
        expected = 0.0 if expected is None else float(expected)
        value = got.get(k, 0.0)        # an omitted partial is a constant zero
        assert agree(value, expected), (node, point, k, value, expected)


#: Sample points inside each built-in's domain (one- or two-argument tuples).
POINTS = {
    "asin": [(-0.5,), (0.2,), (0.9,)], "acos": [(-0.5,), (0.2,), (0.9,)],
    "log": [(0.25,), (1.5,), (40.0,)], "sqrt": [(0.25,), (1.5,), (40.0,)],
    "log1p": [(-0.5,), (0.25,), (7.0,)],
    "atan": [(0.3,), (-1.7,), (0.3, 0.7), (-1.2, 0.4), (2.0, -3.0)],
    "min": [(0.3, 0.7), (0.7, 0.3), (2.0, 2.0)], "max": [(0.3, 0.7), (0.7, 0.3), (2.0, 2.0)],
    "hypot": [(3.0, 4.0), (-1.0, 0.5), (0.2, -7.0)],
    "abs": [(-1.5,), (0.0,), (2.25,)], "sign": [(-1.5,), (0.0,), (2.25,)],
}
DEFAULT_POINTS = [(0.3,), (-0.7,), (1.9,)]

DIFFERENTIABLE = sorted(name for name, b in BUILTINS.items() if b.partials is not None)


def builtin_cases():
    for name in DIFFERENTIABLE:
        for point in POINTS.get(name, DEFAULT_POINTS):
            yield pytest.param(name, point, id=f"{name}{point}")


@pytest.mark.parametrize("name, point", list(builtin_cases()))
def test_builtin_partials_agree_with_the_rule_on_floats(name, point):
    variables = reads(len(point))
    node = ir.Builtin(name, tuple(ir.Read(v) for v in variables), "f64")
    check_against_rule(node, BUILTINS[name].partials, variables, point)


OPERATOR_POINTS = [(1.5, 2.0), (0.7, -3.0), (-2.5, 0.5), (4.0, 1.0), (0.0, 2.0),
                   (-1.5, 2.0), (2.0, -0.5), (0.0, 0.0), (3.0, 0.0)]


@pytest.mark.parametrize("op", sorted(OPERATOR_PARTIALS))
@pytest.mark.parametrize("point", OPERATOR_POINTS, ids=str)
def test_operator_partials_agree_with_the_rule_on_floats(op, point):
    a, b = reads(2)
    node = ir.Binary(op, ir.Read(a), ir.Read(b), "f64")
    check_against_rule(node, OPERATOR_PARTIALS[op], (a, b), point)


def test_every_differentiable_builtin_has_a_symbolic_rule():
    """Walk the registry: each rule must trace (no Python branch on a value, no
    float()), give f64 partials for operands that exist, and give one wherever the
    rule on floats is not zero at a point inside every domain."""
    missing = []
    for name in DIFFERENTIABLE:
        builtin = BUILTINS[name]
        for arity in range(builtin.min_args, builtin.max_args + 1):
            variables = reads(arity)
            node = ir.Builtin(name, tuple(ir.Read(v) for v in variables), "f64")
            try:
                found = partials(node)
            except InternalError as error:
                missing.append(f"{name}/{arity}: {error}")
                continue
            assert all(p.type == "f64" and 0 <= k < arity for k, p in found), (name, found)
            point = (0.4, 0.7)[:arity]
            want = rule_at(builtin.partials, point)
            for k, value in enumerate(want):
                if value not in (None, 0.0) and k not in dict(found):
                    missing.append(f"{name}/{arity}: no partial for operand {k}")
    assert not missing, missing
    assert set(POINTS) <= set(DIFFERENTIABLE)       # no stale sample points


def test_every_operator_rule_traces():
    a, b = reads(2)
    for op in OPERATOR_PARTIALS:
        found = partials(ir.Binary(op, ir.Read(a), ir.Read(b), "f64"))
        assert all(p.type == "f64" for _, p in found), op


def test_constant_partials_are_constants_and_zeros_are_left_out():
    a, b = reads(2)
    assert partials(ir.Binary("+", ir.Read(a), ir.Read(b), "f64")) == \
        [(0, constant(1.0)), (1, constant(1.0))]
    assert partials(ir.Binary("-", ir.Read(a), ir.Read(b), "f64")) == \
        [(0, constant(1.0)), (1, constant(-1.0))]
    assert partials(ir.Binary("//", ir.Read(a), ir.Read(b), "f64")) == []
    assert partials(ir.Builtin("floor", (ir.Read(a),), "f64")) == []
    assert partials(ir.Binary("*", ir.Read(a), ir.Read(b), "f64")) == \
        [(0, ir.Read(b)), (1, ir.Read(a))]


def test_min_chooses_its_partial_at_run_time():
    a, b = reads(2)
    first, second = (p for _, p in partials(ir.Builtin("min", (ir.Read(a), ir.Read(b)), "f64")))
    condition = ir.Compare("<=", ir.Read(a), ir.Read(b))
    assert first == ir.Select(condition, constant(1.0), constant(0.0), "f64")
    assert second == ir.Select(condition, constant(0.0), constant(1.0), "f64")


def test_narrower_float_operands_are_converted_to_f64():
    a, b = reads(2, "f32")
    found = partials(ir.Binary("*", ir.Read(a), ir.Read(b), "f32"))
    assert found == [(0, ir.Convert(ir.Read(b), "f64")), (1, ir.Convert(ir.Read(a), "f64"))]
    assert traced(ir.Binary("*", ir.Read(a), ir.Read(b), "f32"), {a: 2.5, b: -4.0}) == \
        {0: -4.0, 1: 2.5}
    (x,) = reads(1)
    assert as_f64(ir.Read(x)) == ir.Read(x)


def test_integer_nodes_and_operands_have_no_partials():
    i, j = reads(2, "i64")
    (x,) = reads(1)
    assert partials(ir.Binary("*", ir.Read(i), ir.Read(j), "i64")) == []
    assert partials(ir.Builtin("abs", (ir.Read(i),), "i64")) == []
    assert partials(ir.Convert(ir.Read(i), "f64")) == []          # from an integer
    assert partials(ir.Convert(ir.Read(x), "i64")) == []          # to an integer
    assert partials(ir.Read(x)) == [] and partials(constant(2.0)) == []
    # an f64 builtin of integer arguments: no gradient flows into integers
    assert partials(ir.Builtin("sin", (ir.Read(i),), "f64")) == []


def test_negation_conversion_and_selects():
    x, y = reads(2)
    c = ir.Var("c", "bool")
    assert traced(ir.Unary("-", ir.Read(x), "f64"), {x: 3.0}) == {0: -1.0}
    f32 = ir.Var("h", "f32")
    assert traced(ir.Convert(ir.Read(f32), "f64"), {f32: 3.0}) == {0: 1.0}
    select = ir.Select(ir.Read(c), ir.Read(x), ir.Read(y), "f64")
    for cond, want in ((True, {1: 1.0, 2: 0.0}), (False, {1: 0.0, 2: 1.0})):
        assert traced(select, {c: cond, x: 5.0, y: 6.0}) == want


def test_ulog_conversions_are_differentiated_in_log_space():
    """ℓ = log x has ∂ℓ/∂x = 1/x; x = e^ℓ has ∂x/∂ℓ = e^ℓ (Note [Number systems in the
    IR], rlang/ir/nodes.py)."""
    x, ell = ir.Var("x", "f64"), ir.Var("l", "ulog")
    (into,) = partials(ir.Convert(ir.Read(x), "ulog"))
    assert into[0] == 0 and float(evaluate(into[1], {x: 4.0})) == 0.25
    (out_of,) = partials(ir.Convert(ir.Read(ell), "f64"))
    assert out_of[0] == 0
    assert float(evaluate(out_of[1], {ell: math.log(3.0)})) == pytest.approx(3.0, rel=1e-15)
    # a reinterpretation (a ulog as its logarithm) and a checked value pass gradients
    assert partials(ir.Reinterpret(ir.Read(ell), "f64")) == [(0, constant(1.0))]
    checked = ir.Checked(ir.Read(x), ir.Compare(">", ir.Read(x), constant(0.0)), 0)
    assert partials(checked) == [(0, constant(1.0))]


def test_a_rule_cannot_branch_on_a_symbolic_value():
    (x,) = reads(1)
    value = Sym(ir.Read(x))
    with pytest.raises(InternalError, match="select"):
        bool(value > 0.0)
    with pytest.raises(InternalError, match="select"):
        bool(value)
    with pytest.raises(InternalError, match="float"):
        float(value)


def test_sym_arithmetic_folds_known_constants():
    (x,) = reads(1)
    value = Sym(ir.Read(x))
    assert (value * 0.0).expr == constant(0.0) and is_zero((0.0 * value).expr)
    assert (1.0 * value).expr == ir.Read(x) and (value / 1.0).expr == ir.Read(x)
    assert (value + 0.0).expr == ir.Read(x) and (0.0 + value).expr == ir.Read(x)
    assert (value - 1.0).expr == ir.Binary("-", ir.Read(x), constant(1.0), "f64")
    assert (2.0 ** value).expr == ir.Binary("**", constant(2.0), ir.Read(x), "f64")
