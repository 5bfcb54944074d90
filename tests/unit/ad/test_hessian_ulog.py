"""Second derivatives through ulog values (Note [Tangents of ulog values], rlang/numbers.py).

A ulog's tangent is carried in log space, as its gradient is: the interpreter's
Hessian runs hold dual logarithms, the compiled tangent transform an f64 shadow of
the logarithm.  Checked here, on the interpreter and the llvm backend (one column a
pass, and in lanes from the second call):

- Hessians through ulog products, quotients, sums, differences, powers with a float
  exponent, `log`, `f64` and built-ins of ulogs, ulog array literals, a ulog stack,
  comparisons of ulogs and a ulog loss,
  against central differences of `rlang.gradient`;
- ulog arguments are held constant (no row or column; no entry in `hvp`), as fixed and
  complex ones are (docs/ad.md);
- `rlang.jvp` reports a ulog output's tangent in value space (dx = x·dℓ), as ulog
  gradients are reported, against finite differences of the call;
- `hvp`, `hessian_diag` and `jvp` of `grad` agree between the backends.
"""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.numbers import ULog, ulog_array

SOURCE = """
function quotient(y, x)
    @routine begin
        l ← ulog(x) ** 3.0
        l /= ulog(x + 1.0)
    end
    y += exp(-f64(l)) + tanh(l) * x
    ~@routine
end

function sums(y, x, z)
    @routine begin
        a ← ulog(x) + ulog(z) * ulog(x)
        b ← a - ulog(z)
        c ← b / ulog(z)
    end
    y += f64(c) * x + sin(b) + log(a) * z
    ~@routine
end

function power(y, x, z)
    @routine begin
        a ← ulog(x) ** z
    end
    y += f64(a)
    ~@routine
end

function uloss(l!: ulog, x, v: f64[:])
    l! *= ulog(x) * ulog(x) + ulog(v[0]) * ulog(x)
    l! /= ulog(v[1])
end

function arr(y, v: f64[:])
    @routine begin
        a ← [ulog(1.0), ulog(1.0), ulog(1.0)]
        for i = 0:2
            a[i] *= ulog(v[i]) + ulog(v[(i + 1) % 3])
        end
    end
    y += f64(a[0]) * f64(a[1]) + log(a[2]) * v[0]
    ~@routine
end

function uparam(y, l: ulog, ls: ulog[:], x)
    @routine begin
        a ← one(ulog)
        a *= l * ulog(x) + ls[0]
        a *= ls[1]
    end
    y += f64(a) * x
    ~@routine
end

function history!(y!, x, w, n)
    s ← stack(ulog)
    h ← one(ulog)
    h *= ulog(x)
    for i = 1:n
        hn ← one(ulog)
        hn *= h * ulog(w) + ulog(0.1 * i)
        PUSH(s, h)
        SWAP(h, hn)
        hn → zero(ulog)
    end
    if (h > ulog(0.5), ~)
        y! += f64(h) * x
    end
    for i = n:-1:1
        hn ← zero(ulog)
        SWAP(h, hn)
        POP(s, h)
        hn /= h * ulog(w) + ulog(0.1 * i)
        hn → one(ulog)
    end
    h /= ulog(x)
    h → one(ulog)
    s → stack(ulog)
end

function uout(l!: ulog, ls!: ulog[:], x, v: f64[:])
    l! *= ulog(x) * ulog(x) + ulog(v[0])
    ls![0] *= ulog(v[1]) + l!
    ls![1] /= ulog(x)
end
"""

CASES = {
    "quotient": (lambda: [0.0, 1.3], "y"),
    "sums": (lambda: [0.0, 0.7, 1.9], "y"),
    "power": (lambda: [0.0, 1.7, 2.3], "y"),
    "uloss": (lambda: [ULog.from_value(2.0), 0.8, np.array([1.5, 0.6])], "l!"),
    "arr": (lambda: [0.0, np.array([0.5, 1.2, 2.0])], "y"),
    "uparam": (lambda: [0.0, ULog.from_value(1.5), ulog_array([0.4, 2.5]), 0.9], "y"),
    "history!": (lambda: [0.0, 1.3, 0.7, 3], "y!"),     # a ulog stack and a comparison
}
BACKENDS = ("interp", "llvm")


@pytest.fixture(scope="module")
def modules():
    return {backend: rlang.loads(SOURCE, backend=backend) for backend in BACKENDS}


def float_inputs(args) -> list:
    """(position, index or None) of the float inputs, in rlang.hessian's order."""
    return [(p, i) for p, v in enumerate(args)
            if type(v) is float or type(v) is np.ndarray
            for i in (np.ndindex(v.shape) if type(v) is np.ndarray else [None])]


def fd_hessian(function, make_args, loss, h=1e-5) -> np.ndarray:
    """Central differences of rlang.gradient over the float inputs."""
    inputs = float_inputs(make_args())

    def gradient(step):
        args = make_args()
        for (p, i), s in zip(inputs, step):
            if i is None:
                args[p] += s
            else:
                args[p][i] += s
        grads = rlang.gradient(function, args, loss=loss)
        return np.array([grads[p] if i is None else grads[p][i] for p, i in inputs])

    eye = np.eye(len(inputs)) * h
    return np.array([(gradient(e) - gradient(-e)) / (2 * h) for e in eye]).T


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_hessians_through_ulog_match_finite_differences(modules, backend, name):
    make_args, loss = CASES[name]
    expected = fd_hessian(modules["interp"][name], make_args, loss)
    function = modules[backend][name]
    for _ in range(2):      # llvm: one column a pass, then in lanes where they apply
        got = rlang.hessian(function, make_args(), loss=loss)
        assert got.shape == expected.shape      # ulog arguments are not inputs
        np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got, got.T, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_backends_agree_on_second_derivatives(modules, name):
    make_args, loss = CASES[name]
    args = make_args()
    vector = [1.0 if type(v) is float else np.linspace(0.5, 1.5, v.size).reshape(v.shape)
              if type(v) is np.ndarray else None for v in args]
    results = {}
    for backend, module in modules.items():
        function = module[name]
        results[backend] = (rlang.hessian(function, make_args(), loss=loss),
                            rlang.hvp(function, make_args(), vector, loss=loss),
                            rlang.hessian_diag(function, make_args(), loss=loss),
                            rlang.jvp(rlang.grad(function, loss=loss), make_args(), vector))
    interp, llvm = results["interp"], results["llvm"]
    np.testing.assert_allclose(llvm[0], interp[0], rtol=1e-12, atol=1e-12)
    for got, expected in zip(_flat(llvm[1:]), _flat(interp[1:])):
        if expected is None:
            assert got is None
        else:
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def _flat(nested):
    for item in nested:
        if isinstance(item, tuple):
            yield from _flat(item)
        else:
            yield item


@pytest.mark.parametrize("backend", BACKENDS)
def test_ulog_arguments_are_held_constant(modules, backend):
    function = modules[backend].uparam
    args = [0.0, ULog.from_value(1.5), ulog_array([0.4, 2.5]), 0.9]
    hessian = rlang.hessian(function, args, loss="y")
    assert hessian.shape == (2, 2)      # y and x; l and ls are held constant
    # y = (1.5 x + 0.4) · 2.5 · x: ∂²y/∂x² = 2 · 1.5 · 2.5
    assert hessian[1, 1] == pytest.approx(7.5, rel=1e-12)
    assert hessian[0].tolist() == [0.0, 0.0]
    moved = rlang.hvp(function, args, [0.0, None, None, 1.0], loss="y")
    assert moved[1] is None and moved[2] is None
    assert moved[3] == pytest.approx(7.5, rel=1e-12)
    assert rlang.to_floats(args[2]).tolist() == pytest.approx([0.4, 2.5], rel=1e-15)


@pytest.mark.parametrize("backend", BACKENDS)
def test_jvp_reports_ulog_tangents_in_value_space(modules, backend):
    function = modules[backend].uout
    interp = modules["interp"].uout

    def make_args():
        return [ULog.from_value(2.0), ulog_array([0.5, 3.0]), 0.8, np.array([1.5, 0.6])]

    direction = [None, None, 1.0, np.array([0.3, -2.0])]
    outputs, tangents = rlang.jvp(function, make_args(), direction)

    def values(step):
        args = make_args()
        args[2] += step
        args[3] = args[3] + step * direction[3]
        new = interp(*args)
        return np.array([float(new[0]), *rlang.to_floats(new[1])])

    h = 1e-6
    expected = (values(h) - values(-h)) / (2 * h)
    got = np.array([tangents[0], *tangents[1]])
    np.testing.assert_allclose(got, expected, rtol=1e-7)
    assert isinstance(outputs[0], ULog) and type(outputs[0].log) is float
    assert isinstance(outputs[1], rlang.ULogArray) and outputs[1].dtype == np.float64
    np.testing.assert_allclose(rlang.to_floats(outputs[1]), values(0.0)[1:], rtol=1e-15)
    assert tangents[2] == 1.0


def test_a_ulog_conversion_of_a_float_carries_its_tangent():
    m = rlang.loads("function f(y, x)\n    y += f64(ulog(x)) * x\nend\n", backend="interp")
    hessian = rlang.hessian(m.f, (0.0, 1.3), "y")
    np.testing.assert_allclose(hessian, [[0.0, 0.0], [0.0, 2.0]], rtol=1e-14)
