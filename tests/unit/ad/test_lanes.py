"""Gradient passes with lanes (Note [Gradient lanes], rlang/ad/lanes.py) and
`rlang.jacobian` on a compiled backend, which takes its rows W at a time with them
(rlang/ad/jacobian_rows.py): the same Jacobians as the interpreter's one gradient per
row, on hand-written and generated programs; the values computed once per pass;
and a pass that cannot carry lanes refused, so that the driver falls back."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlang
from rlang.ad import jacobian_rows
from rlang.ad.derivatives import derivative_ir
from rlang.ad.symbols import lane_count
from rlang.ad.lanes import NotLaned, laned
from rlang.ir import nodes as ir
from rlang.ir.walk import walk
from rlang.lower.statements import lower
from rlang.types_rules import BackendUnsupported
from tests.property.test_gradients import LENGTH, programs

SOURCE = """
function f(y: f64[:], x: f64[:], w)
    for i = 0:length(x) - 1
        y[i] += sin(x[i]) * w * x[(i + 1) % length(x)]
        if x[i] > 0.0
            y[i] += x[i] * x[i]
        end
    end
end

function g(r0: f64[:], r1: f64[:], P: f64[:,:], s)
    @parallel for i = 0:length(r0) - 1
        r0[i] += P[i, 0] * P[i, 1] * s
        r1[i] += exp(P[i, 1]) - P[i, 2]
    end
end

function h(t, z: complex[:], u)
    t += real(z[0] * z[1]) + u * u
end

function stacked(y: f64[:], x: f64[:])
    s ← stack(f64)
    for i = 0:length(x) - 1
        e ← 0.0
        e += x[i] * 2.0
        PUSH(s, e)
        e → 0.0
    end
    for i = length(x) - 1:-1:0
        e ← 0.0
        POP(s, e)
        y[i] += e * x[i]
        e -= x[i] * 2.0
        e → 0.0
    end
    s → stack(f64)
end
"""

INTERP = rlang.loads(SOURCE, backend="interp")


@pytest.fixture(scope="module", params=["llvm", "cuda"])
def compiled(request):
    return rlang.loads(SOURCE, backend=request.param)


def _jacobians(compiled, name, args, **kwargs):
    return rlang.jacobian(getattr(compiled, name), args, **kwargs), \
        rlang.jacobian(getattr(INTERP, name), args, **kwargs)


@pytest.mark.parametrize("name, args, kwargs", [
    ("f", lambda: (np.zeros(7), np.linspace(-1.0, 1.0, 7), 0.7), {}),
    ("g", lambda: (np.zeros(5), np.zeros(5),
                   np.random.default_rng(0).standard_normal((5, 3)), 0.3),
     {"inputs": ["P", "s"], "outputs": ["r0", "r1"]}),
    ("h", lambda: (0.0, np.array([1.0 + 2.0j, 0.5 - 1.0j]), 0.25),
     {"inputs": ["z", "u"], "outputs": ["t"]}),
    ("stacked", lambda: (np.zeros(3), np.array([0.5, -1.0, 2.0])), {}),
])
def test_jacobians_agree_with_the_interpreter(compiled, name, args, kwargs):
    if name == "stacked" and compiled.backend == "cuda":     # stacks: llvm only
        with pytest.raises(BackendUnsupported):
            _jacobians(compiled, name, args(), **kwargs)
        return
    got, expected = _jacobians(compiled, name, args(), **kwargs)
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_one_forward_run_and_a_pass_per_four_rows(monkeypatch):
    """f has 14 rows (y and x): one forward call and ceil(14 / 4) passes."""
    module = rlang.loads(SOURCE, backend="llvm")
    calls, runs = [], []
    functions = module.compiled
    call, run = functions.call, functions.run
    monkeypatch.setattr(functions, "call", lambda *a: calls.append(a) or call(*a))
    monkeypatch.setattr(functions, "run", lambda *a: runs.append(a) or run(*a))
    rlang.jacobian(module.f, (np.zeros(7), np.linspace(-1.0, 1.0, 7), 0.7),
                   outputs=["y", "x"])
    passes = [symbol for _, symbol, _ in runs if symbol.endswith("__x4")]
    assert len(calls) == 1 and len(passes) == 4 and len(runs) == 1 + 4   # the call's run


def test_values_are_computed_once_and_gradients_once_per_lane():
    unit = rlang.loads(SOURCE).unit
    types = (ir.ArrayType("f64", 1), ir.ArrayType("f64", 1), "f64")

    def lowered(backward):
        return lower(unit, "f", types, backward, True)

    plain, shared = derivative_ir(lowered, "grad")
    wide, wide_shared = derivative_ir(lowered, "grad3")
    entry, laned_entry = plain.functions[plain.entry], wide.functions[wide.entry]
    assert laned_entry.symbol == entry.symbol + "__x3" and lane_count("grad3") == 3
    assert len(laned_entry.params) == 3 + 3 * 3         # y x w, then 3 lanes of 3 shadows

    def updates(fn, shadows):
        found = [s for s in walk(fn.body) if isinstance(s, ir.Update)]
        return (sum(s.target.var not in shadows for s in found),
                sum(s.target.var in shadows for s in found))

    values, gradients = updates(entry, shared)
    wide_values, wide_gradients = updates(laned_entry, wide_shared)
    assert wide_values == values and wide_gradients == 3 * gradients > 0


def test_a_pass_that_computes_a_value_from_a_gradient_is_refused():
    y, g = ir.Var("y", "f64", True), ir.Var("y·grad", "f64", True)
    body = (ir.Update(ir.VarPlace(y), "+=", ir.Read(g)),)
    fn = ir.Function("rev_grad_f", "f", False, (y, g), body, written=frozenset({0, 1}))
    module = ir.Module("rev_grad_f", {"rev_grad_f": fn})
    with pytest.raises(NotLaned):
        laned(module, frozenset({g}), 2)


def test_the_driver_falls_back_where_lanes_are_refused(monkeypatch):
    module = rlang.loads(SOURCE, backend="llvm")

    def refuse(*args, **kwargs):
        raise NotLaned("refused for the test")

    monkeypatch.setattr(jacobian_rows, "GradientPlan", refuse)
    args = (np.zeros(7), np.linspace(-1.0, 1.0, 7), 0.7)
    assert jacobian_rows.compiled_jacobian(module.compiled, "f", list(args), False,
                                           [1, 2], [0]) is None
    got, expected = _jacobians(module, "f", args)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                 HealthCheck.data_too_large])
@given(source=programs(),
       inputs=st.lists(st.floats(-1.0, 1.0), min_size=4 + LENGTH, max_size=4 + LENGTH),
       k=st.integers(0, 4))
def test_jacobians_of_generated_programs(source, inputs, k):
    """The generated programs of tests/property/test_gradients.py: branches, loops,
    ancillas, instructions, calls and uncalls."""
    args = (*inputs[:4], np.array(inputs[4:]), k)
    interp = rlang.loads(source, backend="interp")
    try:
        outputs = interp.f(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
    except rlang.RlangError:
        assume(False)
    assume(all(math.isfinite(x) and abs(x) < 100.0 for x in [*outputs[:4], *outputs[4]]))
    expected = rlang.jacobian(interp.f, args)
    compiled = rlang.loads(source, backend="llvm")
    got = rlang.jacobian(compiled.f, args)
    assert any(key[3] == "grad4" for key in compiled.compiled._modules)     # lanes taken
    scale = max(1.0, float(np.max(np.abs(expected))))
    np.testing.assert_allclose(got, expected, rtol=1e-10, atol=1e-10 * scale)
