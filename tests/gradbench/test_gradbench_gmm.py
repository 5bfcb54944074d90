"""gmm beyond the shared test: the objective is the log posterior of the eval's
definition (checked against SciPy's densities, not the simplified formula), the
interpreter agrees with llvm, the reversibility checks pass, other sizes (d = 1,
m > 0, gamma != 1) agree with the baselines, the output's shape, and GradBench's
manual tool's output where it is installed."""


import numpy as np
import pytest

import rlang
from tests.gradbench import suite_path  # noqa: F401
from suite import tool_module  # noqa: E402
from suite.common import measure  # noqa: E402
from suite.compare import mismatches  # noqa: E402
from suite.inputs import gmm as inputs  # noqa: E402
from suite.rlang_impl._load import program  # noqa: E402
from tests.gradbench.manual import manual_output, needs_manual  # noqa: E402
from suite.rlang_impl.gmm import INDEPENDENT  # noqa: E402

TINY = {"d": 2, "k": 2, "n": 3, "m": 1, "gamma": 0.7}


def _args(data):
    k, d = data["k"], data["d"]
    return (0.0, np.array(data["alpha"]), np.array(data["mu"]), np.array(data["q"]),
            np.array(data["l"], dtype=np.float64).reshape(k, d * (d - 1) // 2),
            np.array(data["x"]), float(data["gamma"]), int(data["m"]))


def _objective_and_gradient(m, args):
    f = m["gmm_objective!"]
    return f(*args)[0], rlang.grad(f, "err!", argnums=tuple(INDEPENDENT.values()))(*args)


def test_the_objective_is_the_log_posterior_of_the_definition():
    stats = pytest.importorskip("scipy.stats")
    data = inputs.generate(seed=5, **TINY)
    _, alpha, mu, q, l, x, gamma, m = _args(data)
    d, k = data["d"], data["k"]
    phi = np.exp(alpha) / np.exp(alpha).sum()
    precisions = []
    for c in range(k):
        lower = np.diag(np.exp(q[c]))
        lower[np.triu_indices(d, 1)[::-1]] = l[c]        # column by column
        precisions.append(lower.T @ lower)
    likelihood = sum(np.log(sum(phi[c] * stats.multivariate_normal(
        mu[c], np.linalg.inv(precisions[c])).pdf(xi) for c in range(k))) for xi in x)
    prior = sum(stats.wishart(df=d + m + 1, scale=np.eye(d) / gamma ** 2).logpdf(p)
                for p in precisions)
    ours = program("gmm")["gmm_objective!"](0.0, alpha, mu, q, l, x, gamma, m)[0]
    assert ours == pytest.approx(likelihood + prior, rel=1e-12)


def test_interpreter_agrees_with_llvm():
    args = _args(inputs.generate(seed=2, **TINY))
    value, grads = _objective_and_gradient(program("gmm"), args)
    value_i, grads_i = _objective_and_gradient(program("gmm", backend="interp"), args)
    assert value == pytest.approx(value_i, rel=1e-13)
    for a, b in zip(grads, grads_i):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_reversibility_checks_pass():
    args = _args(inputs.generate(seed=2, **inputs.SIZES["small"]))
    value, grads = _objective_and_gradient(program("gmm", invcheck=True), args)
    value_u, grads_u = _objective_and_gradient(program("gmm"), args)
    assert value == value_u
    for a, b in zip(grads, grads_u):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("size", [{"d": 1, "k": 2, "n": 4, "m": 0, "gamma": 1.0},
                                  {"d": 4, "k": 1, "n": 5, "m": 3, "gamma": 2.5},
                                  {"d": 5, "k": 6, "n": 20, "m": 2, "gamma": 0.5}])
def test_other_sizes_agree_with_the_baselines(size):
    data = inputs.generate(seed=11, **size)
    for function in ("objective", "jacobian"):
        ours = measure(tool_module("rlang", "gmm").prepare(function, data), 1, 0)[0]
        for baseline in ("jax", "pytorch"):
            theirs = measure(tool_module(baseline, "gmm").prepare(function, data), 1, 0)[0]
            found = mismatches(theirs, ours, 1e-10)
            assert not found, (function, baseline, found[:3])


def test_output_shapes():
    data = inputs.generate(seed=1, **inputs.SIZES["small"])
    module = tool_module("rlang", "gmm")
    assert type(measure(module.prepare("objective", data), 1, 0)[0]) is float
    jacobian = measure(module.prepare("jacobian", data), 1, 0)[0]
    assert sorted(jacobian) == ["alpha", "l", "mu", "q"]
    assert len(jacobian["alpha"]) == data["k"] and all(type(v) is float for v in jacobian["alpha"])
    for name in ("mu", "q", "l"):
        assert [len(row) for row in jacobian[name]] == [len(row) for row in data[name]]


def test_unknown_function():
    from suite.common import UnknownFunction
    with pytest.raises(UnknownFunction):
        tool_module("rlang", "gmm").prepare("gradient", inputs.generate(**TINY))


@needs_manual("gmm")
@pytest.mark.parametrize("function", ["objective", "jacobian"])
def test_agrees_with_gradbenchs_manual_tool(function, tmp_path):
    data = inputs.generate(seed=1, **inputs.SIZES["small"])
    theirs = manual_output("gmm", function, data, tmp_path)
    ours = measure(tool_module("rlang", "gmm").prepare(function, data), 1, 0)[0]
    assert not mismatches(theirs, ours, 1e-12)
