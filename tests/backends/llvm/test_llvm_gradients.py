"""Compiled gradients agree with the interpreter's (issue #5, LANGUAGE.md §9).

`rlang.gradient` on a module loaded with `backend="llvm"` runs the compiled gradient
pass (rlang/ad/adjoint_ir.py, rlang/ad/compiled.py).  Here it is compared with the
interpreter's gradient, which is itself tested against finite differences and JAX:

- Hypothesis-generated float programs (the generator of
  tests/property/test_gradients.py: updates over random expression trees, SWAP,
  NEG, ROT, IROT, HADAMARD, ancillas, routines, branches, loops, calls and uncalls
  with expression arguments), every loss, within 1e-12 relative;
- programs that exercise each rule of Note [Adjoints of executed statements] and
  every built-in with a partial derivative;
- the loss forms (name, position, element, text) and their errors.
"""
from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import rlang
from rlang.primitives import BUILTINS, OPERATOR_PARTIALS

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "property"))
from test_gradients import LENGTH, LOSSES, programs  # noqa: E402
from gradient_agreement import (MAGNIFYING_PROGRAM, agree_or_ill_conditioned,  # noqa: E402
                                assert_same_gradients, assert_within_spread, ulp_spread)


def _copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def both(source, name, args, loss, invcheck=True):
    interp = rlang.loads(source, invcheck=invcheck)
    llvm = rlang.loads(source, backend="llvm", invcheck=invcheck)
    expected = rlang.gradient(interp[name], _copy(args), loss=loss)
    llvm_args = _copy(args)
    got = rlang.gradient(llvm[name], llvm_args, loss=loss)
    for before, after in zip(args, llvm_args):      # the gradient pass restores inputs
        if isinstance(before, np.ndarray):
            np.testing.assert_allclose(after, before, rtol=0, atol=1e-9)
    return got, expected


def float_programs(max_examples: int):
    """Hypothesis cases of the float-program generator: the test gets (source,
    arguments of f, loss name); programs whose values leave a modest range are
    rejected, as in tests/property/test_gradients.py."""
    def decorate(test):
        @settings(max_examples=max_examples, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                         HealthCheck.data_too_large])
        @given(source=programs(), inputs=st.lists(st.floats(-1.0, 1.0), min_size=4 + LENGTH,
                                                  max_size=4 + LENGTH),
               k=st.integers(0, 4), loss=st.sampled_from(LOSSES))
        def run(source, inputs, k, loss):
            args = [*inputs[:4], np.array(inputs[4:]), k]
            try:
                outputs = rlang.loads(source).f(*_copy(args))
            except rlang.RlangError:        # (exp(exp(v)) overflowing into an
                assume(False)               # ancilla's check: not a case)
            assume(all(math.isfinite(x) and abs(x) < 100.0
                       for x in [*outputs[:4], *outputs[4]]))
            test(source, args, loss[0])
        run.__name__ = test.__name__
        return run
    return decorate


@float_programs(max_examples=60)
def test_generated_float_programs(source, args, loss):
    got, expected = both(source, "f", args, loss)
    interp = rlang.loads(source)
    agree_or_ill_conditioned(
        got, expected, lambda a: rlang.gradient(interp.f, _copy(a), loss=loss), args, source)


@float_programs(max_examples=25)
def test_vmap_of_jacrev_of_generated_float_programs(source, args, loss):
    """One batched forward run and laned gradient passes (Note [Batched Jacobians])
    give every item the interpreter's Jacobian of that item alone, for the array
    output `v` (LENGTH rows) and a scalar output, over three items."""
    interp = rlang.loads(source, backend="interp")
    llvm = rlang.loads(source, backend="llvm")
    items = [args] + [[x * 0.5 if isinstance(x, float) else x for x in args[:4]] +
                      [args[4][::-1].copy(), args[5]] for _ in range(1)] + \
        [[-x if isinstance(x, float) else x for x in args[:4]] + [args[4] * 0.25, args[5]]]
    for output in ("v", loss if "[" not in loss else "a"):
        try:
            expected = [rlang.jacrev(interp.f, output)(*_copy(item)) for item in items]
        except rlang.RlangError:        # (an item whose values overflow an ancilla's
            continue                    # check: not a case)
        batches = [np.array([item[j] for item in items]) for j in range(len(args))]
        got = rlang.vmap(rlang.jacrev(llvm.f, output))(*batches)
        for k, jacobians in enumerate(expected):
            agree_or_ill_conditioned(
                [None if g is None else g[k] for g in got], jacobians,
                lambda a: rlang.jacrev(interp.f, output)(*_copy(a)), items[k],
                f"{source}\noutput {output}, item {k}")


# A generated program whose gradients the restoring inverses magnify from the last
# bits (tests/gradient_agreement.py); its Jacobian with respect to c, exactly (mpmath).
MAGNIFYING_DV_DC = [5.347820980686148, 1755.3003599454539, 592.5151397794352]


def test_a_magnifying_case_agrees_within_its_inputs_last_bits():
    """Compiled and interpreted Jacobians of the case are both 2e-10 of the exact one
    away, and agree within how far one ulp of the inputs moves the interpreter's;
    a Jacobian off by 1e-8 of its scale does not."""
    args = [0.0, 0.0, 0.75, 0.0, np.array([0.9375, 0.5, 0.0]), 0]
    interp = rlang.loads(MAGNIFYING_PROGRAM, backend="interp")
    llvm = rlang.loads(MAGNIFYING_PROGRAM, backend="llvm")
    expected = rlang.jacrev(interp.f, "v")(*_copy(args))
    got = rlang.jacrev(llvm.f, "v")(*_copy(args))
    for jacobian in (expected[2], got[2]):
        np.testing.assert_allclose(jacobian, MAGNIFYING_DV_DC, rtol=1e-9)
    spread = ulp_spread(lambda a: rlang.jacrev(interp.f, "v")(*_copy(a)), args)
    assert_within_spread(got, expected, spread)
    off = [None if g is None else g * (1 + 1e-8) for g in got]
    with pytest.raises(AssertionError):
        assert_within_spread(off, expected, spread)


def _builtin_case(name):
    """A program reading `name` at a few points where it is differentiable."""
    arity = BUILTINS[name].min_args
    call = f"{name}(x)" if arity == 1 else f"{name}(x, w)"
    return f"""
function f(y!, x, w)
    y! += {call} * w + {call}
end
"""


_POINTS = {"asin": 0.3, "acos": -0.4, "log": 1.7, "log1p": 0.4, "sqrt": 2.2, "cbrt": -1.9}


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.partials))
def test_every_builtin_partial(name):
    x = _POINTS.get(name, 0.6)
    for w in (1.3, -0.8, x):                    # w == x: min/max ties
        got, expected = both(_builtin_case(name), "f", [0.25, x, w], "y!")
        assert_same_gradients(got, expected, name)


@pytest.mark.parametrize("op", sorted(OPERATOR_PARTIALS))
def test_every_operator_partial(op):
    source = f"function f(y!, a, b)\n    y! += (a {op} b) * a\nend\n"
    for a, b in ((1.7, 0.6), (-2.5, 0.7), (0.9, -1.1), (2.0, 3.0)):
        if op == "**" and a < 0:
            continue
        got, expected = both(source, "f", [0.0, a, b], "y!")
        assert_same_gradients(got, expected, f"{op} at {a}, {b}")


def test_zero_seed_stops_an_infinite_partial():
    # ∂/∂x of log(x) at 0 is infinite, but it is multiplied by a zero seed (w = 0):
    # the interpreter does not descend there, and the compiled pass selects 0
    source = "function f(y!, x, w)\n    y! += w * log(x)\nend\n"
    got, expected = both(source, "f", [0.0, 0.0, 0.0], "y!")
    assert_same_gradients(got, expected)
    assert got[1] == 0.0


INSTRUCTIONS = """
function f(a, b, c, t)
    a += b * c
    ROT(a, b, t * c)
    SWAP(a, c)
    NEG(b)
    HADAMARD(b, c)
    IROT(c, a, 0.3 + t)
    t += 1.0
    a += t * t
end
"""


@pytest.mark.parametrize("loss", ["a", "b", "c", "t"])
def test_instructions(loss):
    got, expected = both(INSTRUCTIONS, "f", [0.3, -1.2, 0.7, 0.45], loss)
    assert_same_gradients(got, expected, loss)


ARRAYS = """
function kernel(y!, xs: f64[:], w)
    for i = 0:length(xs) - 1
        y! += w * xs[i] * xs[i]
    end
end
function f(out: f64[:], m: f64[:, :], s)
    tmp ← zeros(f64, 3)
    for i = 0:2
        for j = 0:2
            tmp[i] += m[i, j] * s
        end
    end
    for i = 0:2
        out[i] += sin(tmp[i])
    end
    kernel(out[0], tmp, s * 2.0)
    ~kernel(out[1], tmp, m[0, 0])
    for i = 0:2
        for j = 0:2
            tmp[i] -= m[i, j] * s
        end
    end
    tmp → zeros(f64, 3)
    copy ← [1.0, 2.0, 3.0]
    copy[1] += out[2] * s
    copy[1] -= out[2] * s
    copy → [1.0, 2.0, 3.0]
end
"""


@pytest.mark.parametrize("loss", ["out[0]", "out[1]", ("out", 2), 2])
def test_arrays_ancillas_and_calls(loss):
    rng = np.random.default_rng(3)
    args = [rng.normal(size=3), rng.normal(size=(3, 3)), 0.7]
    got, expected = both(ARRAYS, "f", args, loss)
    assert_same_gradients(got, expected, str(loss))


def test_inverse_functions_and_integer_arguments():
    source = """
function f(y!, x, n)
    for i = 1:n
        y! += x * i
    end
    n += 1
end
"""
    for fn in ("f", "~f"):
        interp, llvm = rlang.loads(source), rlang.loads(source, backend="llvm")
        pick = (lambda m: ~m.f) if fn == "~f" else (lambda m: m.f)
        expected = rlang.gradient(pick(interp), [1.0, 2.5, 4], loss="y!")
        got = rlang.gradient(pick(llvm), [1.0, 2.5, 4], loss="y!")
        assert_same_gradients(got, expected, fn)
        assert got[2] is None


def test_recursion_and_f32():
    source = """
function down(y!, x, n)
    if (n > 0, ~)
        y! += x * x
        n -= 1
        down(y!, x, n)
        n += 1
    end
end
function g(y!: f32, x: f32)
    y! += sin(x) * x
end
"""
    got, expected = both(source, "down", [0.0, 1.5, 40], "y!")
    assert_same_gradients(got, expected)
    from rlang.numbers import F32

    interp, llvm = rlang.loads(source), rlang.loads(source, backend="llvm")
    expected = rlang.gradient(interp.g, [F32(0.5), F32(0.75)], loss="y!")
    got = rlang.gradient(llvm.g, [F32(0.5), F32(0.75)], loss="y!")
    assert got[1] == pytest.approx(expected[1], rel=1e-6)


def test_checks_off_and_dealloc_values_still_carry_gradients():
    source = """
function f(y!, x)
    t ← x * x
    y! += t * 3.0
    t → x * x
end
"""
    got, expected = both(source, "f", [0.0, 1.25], "y!", invcheck=False)
    assert_same_gradients(got, expected)
    assert got[1] == pytest.approx(7.5)


@pytest.mark.parametrize("invcheck", [True, False])
def test_an_array_deallocated_against_variable_elements_carries_their_gradients(invcheck):
    # `b → [x, 2x]` is a subtraction the gradient pass differentiates; with invcheck
    # off it was briefly dropped with the check (gradient 0 instead of 6)
    source = """
function f(y!, x)
    b ← [x, 2.0 * x]
    y! += b[0] * b[1]
    b → [x, 2.0 * x]
end
"""
    got, expected = both(source, "f", [0.0, 1.5], "y!", invcheck=invcheck)
    assert_same_gradients(got, expected)
    assert got[1] == pytest.approx(6.0)


@pytest.mark.parametrize("loss, message", [
    ("z", "is not a parameter"), ("n", "must be a float"), ("xs", "must be a float"),
    ("xs[7]", "out of bounds")])
def test_loss_errors_match(loss, message):
    source = "function f(y!, xs: f64[:], n)\n    y! += xs[0] * n\nend\n"
    errors = []
    for backend in ("interp", "llvm"):
        m = rlang.loads(source, backend=backend)
        with pytest.raises(rlang.RlangError, match=message) as caught:
            rlang.gradient(m.f, [0.0, np.ones(2), 3], loss=loss)
        errors.append((type(caught.value), str(caught.value)))
    assert errors[0] == errors[1]


def test_a_failing_check_in_the_gradient_pass_is_the_interpreter_error():
    # forward, t is freed unchecked; backward, `t ← 5.0` then `t → x` fails
    source = """
function f(y!, x)
    t ← x
    y! += t * x
    @invcheckoff t → 5.0
end
"""
    messages = []
    for backend in ("interp", "llvm"):
        m = rlang.loads(source, backend=backend)
        with pytest.raises(rlang.RlangError) as caught:
            rlang.gradient(m.f, [0.0, 2.0], loss="y!")
        text = caught.value.render()
        # compiled frames have no `with locals` line (docs/backends.md)
        messages.append((type(caught.value).__name__, [
            line for line in text.splitlines() if not line.lstrip().startswith("with ")]))
    assert messages[0] == messages[1]
    assert "running backward" in "\n".join(messages[1][1])


# ------------------------------------------------------------------ Hessians

def both_hessians(source, name, args, loss):
    expected = rlang.hessian(rlang.loads(source)[name], _copy(args), loss=loss)
    llvm_args = _copy(args)
    got = rlang.hessian(rlang.loads(source, backend="llvm")[name], llvm_args, loss=loss)
    for before, after in zip(args, llvm_args):          # the caller's arrays untouched
        if isinstance(before, np.ndarray):
            assert np.array_equal(before, after)
    return got, expected


def assert_same_matrix(got, expected, context=""):
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    assert got.shape == expected.shape, context
    assert np.allclose(got, expected, rtol=1e-11, atol=1e-11 * scale, equal_nan=True), \
        f"{context}\nllvm\n{got}\ninterpreter\n{expected}"


ROTATIONS = """
function f(a, b, c, d, v: f64[:])
    a += 0.5 * c
    ROT(a, c, b * d)
    IROT(c, v[1], a * 0.3)
    for i = 0:2
        a += d * v[0]
        ROT(d, v[1], a)
        IROT(v[0], b, sin(c))
    end
end
"""


@pytest.mark.parametrize("loss", ["c", "a", ("v", 1)])
def test_hessians_through_rotations_are_the_interpreters_to_the_last_bit(loss):
    """Note [Rotations of dual numbers] (rlang/ad/tangent_ir.py): the tangent of a
    rotation is the dual-number sum, grouped as the interpreter groups it."""
    args = [0.3, -1.2, 0.7, 2.0, np.array([0.5, -0.25, 1.5])]
    got, expected = both_hessians(ROTATIONS, "f", args, loss)
    assert np.array_equal(got, expected)


def test_hessian_entries_that_are_rounding_noise_agree():
    """A generated program Hypothesis found: ∂²c/∂b∂d is 0 exactly, and both backends
    compute the noise of restoring `a` by rotating back (4.4e-10); a regrouped
    rotation tangent gave 9.7e-10."""
    source = """
function f(a, b, c, d, v: f64[:])
    a += 0.5
    ROT(a, c, b)
    for i1 = 0:2
        v[1] += exp(2.0)
    end
    for i2 = 0:2
        a += d
        ROT(d, v[1], a)
    end
end
"""
    got, expected = both_hessians(source, "f", [0.0, 0.0, 0.0, 0.0, np.zeros(3)], "c")
    assert np.array_equal(got, expected) and expected[1, 3] != 0.0


@float_programs(max_examples=25)
def test_hessians_of_generated_float_programs(source, args, loss):
    got, expected = both_hessians(source, "f", args, loss)
    interp = rlang.loads(source)
    agree_or_ill_conditioned([got], [expected],
                             lambda a: [rlang.hessian(interp.f, _copy(a), loss=loss)],
                             args, source, rtol=1e-11)


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.partials))
def test_hessians_of_every_builtin(name):
    x = _POINTS.get(name, 0.6)
    for w in (1.3, -0.8):
        got, expected = both_hessians(_builtin_case(name), "f", [0.25, x, w], "y!")
        assert_same_matrix(got, expected, name)


@pytest.mark.parametrize("op", sorted(OPERATOR_PARTIALS))
def test_hessians_of_every_operator(op):
    source = f"function f(y!, a, b)\n    y! += (a {op} b) * a\nend\n"
    got, expected = both_hessians(source, "f", [0.0, 1.7, 0.6], "y!")
    assert_same_matrix(got, expected, op)


@pytest.mark.parametrize("loss", ["a", "b", "c"])
def test_hessians_through_instructions(loss):
    got, expected = both_hessians(INSTRUCTIONS, "f", [0.3, -1.2, 0.7, 0.45], loss)
    assert_same_matrix(got, expected, loss)


def test_hessians_through_arrays_ancillas_and_calls():
    rng = np.random.default_rng(5)
    args = [rng.normal(size=3), rng.normal(size=(3, 3)), 0.7]
    got, expected = both_hessians(ARRAYS, "f", args, "out[1]")
    assert_same_matrix(got, expected)
    assert got.shape == (13, 13)


def test_one_view_passed_for_two_read_only_parameters():
    # the callee's two gradients are added back to the one view, statically (b, b)
    # and when only the indices coincide at run time (v[i], v[j] with i == j)
    source = """
function h0(p, q, r)
    p += q * sin(r) + r * 0.5
end
function f(a, b, v: f64[:], i, j)
    h0(a, b, b)
    h0(a, v[i], v[j])
end
"""
    args = [0.0, 0.0, np.array([0.3, -0.2]), 1, 1]
    got, expected = both(source, "f", args, "a")
    assert_same_gradients(got, expected)
    assert got[1] == pytest.approx(0.5)             # sin(0) + 0·cos(0) + 0.5
    got, expected = both_hessians(source, "f", args, "a")
    assert_same_matrix(got, expected)
    assert got[1, 1] == pytest.approx(2.0)          # d²(b sin b)/db² at 0


# Poles: where a partial is infinite or undefined, both passes answer as IEEE 754
# does (inf, nan) -- the interpreter's rules run in NumPy float64 arithmetic
# (rlang/ieee.py), never raising Python's ZeroDivisionError or OverflowError.
_POLES = ((0.0, 0.0), (0.0, 1.0), (1.0, 0.0), (-1.0, 0.0), (-1.0, 0.5))


@pytest.mark.parametrize("name", sorted(n for n, b in BUILTINS.items() if b.partials))
def test_gradients_and_hessians_of_every_builtin_at_its_poles(name):
    arity = BUILTINS[name].min_args
    call = f"{name}(x)" if arity == 1 else f"{name}(x, w)"
    source = f"function f(y!, x, w)\n    y! += {call}\nend\n"
    for x, w in _POLES:
        got, expected = both(source, "f", [0.0, x, w], "y!")
        assert_same_gradients(got, expected, f"{name} at {x}, {w}")
        got, expected = both_hessians(source, "f", [0.0, x, w], "y!")
        assert_same_matrix(got, expected, f"{name} at {x}, {w}")


@pytest.mark.parametrize("op", sorted(OPERATOR_PARTIALS))
def test_gradients_and_hessians_of_every_operator_at_its_poles(op):
    source = f"function f(y!, a, b)\n    y! += a {op} b\nend\n"
    for a, b in (*_POLES, (-1.0, 1e308), (1e308, 0.5)):
        got, expected = both(source, "f", [0.0, a, b], "y!")
        assert_same_gradients(got, expected, f"{op} at {a}, {b}")
        if b == 1e308:      # b·b overflows: the two passes' second-derivative formulas
            continue        # meet inf - inf in different places (0 against nan)
        got, expected = both_hessians(source, "f", [0.0, a, b], "y!")
        assert_same_matrix(got, expected, f"{op} at {a}, {b}")


def test_a_hessian_without_float_inputs_still_checks_its_loss():
    """No column to run is no excuse: an integer loss is refused on llvm as on the
    interpreter (found by the fuzzer's argument family, seed 2026 case 217)."""
    source = """
function count(k: i64, a: i64[:])
    for i = 0:length(a) - 1
        a[i] += k
    end
end
function bump(k: i64, y: f64)
    y += 1.0
end
"""
    for backend in ("interp", "llvm"):
        module = rlang.loads(source, backend=backend)
        with pytest.raises(rlang.RlangError, match="the loss `k` must be a float"):
            rlang.hessian(module.count, [3, np.array([0, 1, 2, 3])], loss="k")
        assert rlang.hessian(module.bump, [3, 2.0], loss="y", argnums=0).shape == (0, 0)
