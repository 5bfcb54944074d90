"""An array element an expression reads more than once gets one gradient update in
the compiled pass (a scalar still one a read), seed · (the sum of its paths'
partials) (Note [Elements read more than once], rlang/ad/adjoint_ir.py); the
interpreter adds one term a read.  The two agree to the
tolerance of floats, a zero path still stops an infinite partial, and a gradient
that decays reaches zero rather than a subnormal that never does."""
from __future__ import annotations

from pathlib import Path

import numpy as np

import rlang
from rlang.ad.adjoint_ir import adjoint_module, repeated_leaves
from rlang.ir import nodes as ir
from rlang.ir.walk import walk
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_gradients

# logistic!: n steps of the logistic map in an ancilla array (primal_speed.py's)
WORKLOADS = Path(__file__).resolve().parents[3] / "benchmarks" / "llvm" / "workloads.rev"

SOURCE = """
function cube!(y!, x)
    y! += x * x * x
end

# at x[0] = 0 the path through sqrt(x[0]) is 0 · ∞
function root!(y!, x: f64[:])
    y! += x[0] * sqrt(x[0])
end

# x[i] twice, x[i + 1] once, y read by two different indices
function mixed!(z!, x: f64[:])
    for i = 0:length(x) - 2
        z! += x[i] * x[i + 1] * x[i] - sin(x[i + 1]) * x[i]
    end
end
"""


def _both(invcheck: bool = True):
    return (rlang.loads(SOURCE, backend="llvm", invcheck=invcheck),
            rlang.loads(SOURCE, invcheck=invcheck))


def test_a_decaying_gradient_reaches_zero():
    """Near the fixed point s = 0.6 of r = 2.5 the seed of s[i-1] is seed · (-0.5):
    summed first it halves to zero; the interpreter's two terms, seed · 1.0 and
    -seed · 1.5, leave the smallest subnormal at ±d for ever."""
    llvm = rlang.load(WORKLOADS, backend="llvm", invcheck=False)
    interp = rlang.load(WORKLOADS, invcheck=False)
    args = [0.0, 2.5, 0.3, 3000]
    got = rlang.gradient(llvm["logistic!"], args, "out!")
    want = rlang.gradient(interp["logistic!"], args, "out!")
    assert got[2] == 0.0
    assert 0.0 < abs(want[2]) < 1e-320
    assert got[1] == want[1] or abs(got[1] - want[1]) <= 1e-12 * abs(want[1])


def test_repeated_reads_give_one_update():
    """In logistic!'s gradient pass s[i - 1] gets one update in each of the two loops
    (the routine's and its uncomputation's; two each, one a read, without the
    rule), and s[n] one from `out! += s[n]`; cube!'s scalar x gets three, one a read."""
    for name, args, want in (("logistic!", (0.0, 2.5, 0.3, 4), {"s·grad": 3}),
                             ("cube!", (0.0, 2.0), {"x·grad": 3})):
        unit = (rlang.load(WORKLOADS) if name == "logistic!" else rlang.loads(SOURCE)).unit
        types = tuple(type_of_value(a) for a in args)
        grad = adjoint_module(lower(unit, name, types, True, False))
        targets = [s.target.var.name for fn in grad.functions.values()
                   for s in walk(fn.body) if isinstance(s, ir.Update)]
        for var, count in want.items():
            assert targets.count(var) == count, targets


def test_which_reads_are_repeated():
    x, y = ir.Var("x", "f64"), ir.Var("y", "f64")
    a = ir.Var("a", ir.ArrayType("f64", 1))
    i = ir.Read(ir.Var("i", "i64"))
    times = lambda p, q: ir.Binary("*", p, q, "f64")     # noqa: E731
    checked = ir.Load(a, (i,), 7)
    same = ir.Load(a, (i,), 9)                            # another bounds check
    other = ir.Load(a, (ir.Binary("+", i, ir.Const(1, "i64"), "i64"),), 9)
    assert repeated_leaves(times(ir.Read(x), ir.Read(y))) == frozenset()
    # scalars keep a term a read (Note [Elements read more than once])
    assert repeated_leaves(times(ir.Read(x), times(ir.Read(y), ir.Read(x)))) == frozenset()
    assert repeated_leaves(times(checked, times(same, other))) == \
        {ir.Load(a, (i,), None)}


def test_gradients_and_hessians_agree_with_the_interpreter():
    llvm, interp = _both()
    rng = np.random.default_rng(4)
    for name, args, loss in (("cube!", [0.5, -1.25], "y!"),
                             ("root!", [0.0, np.array([2.25])], "y!"),
                             ("mixed!", [0.0, rng.normal(size=6)], "z!")):
        assert_same_gradients(rlang.gradient(llvm[name], args, loss),
                              rlang.gradient(interp[name], args, loss))
        np.testing.assert_allclose(rlang.hessian(llvm[name], args, loss),
                                   rlang.hessian(interp[name], args, loss),
                                   rtol=1e-12, atol=1e-12)


def test_a_zero_path_stops_an_infinite_partial():
    """d(x[0]·sqrt(x[0]))/dx[0] at 0: the path through sqrt has the product x = 0 before
    sqrt's infinite partial, and adds 0 (not NaN), as the interpreter stops there."""
    llvm, interp = _both()
    got = rlang.gradient(llvm["root!"], [0.0, np.zeros(1)], "y!")
    assert_same_gradients(got, rlang.gradient(interp["root!"], [0.0, np.zeros(1)], "y!"))
    assert got[1][0] == 0.0
