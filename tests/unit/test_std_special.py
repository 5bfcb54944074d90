"""std/special.rev (docs/std.md): log Γ at half-integers and the multivariate
log-gamma function, against the math module and SciPy, on the interpreter and on
llvm; the inverse takes the result away again; bad arguments stop with the
function's assertion."""
from __future__ import annotations

import math

import pytest

import rlang

SOURCE = 'include "std/special.rev"\n'


@pytest.fixture(params=["interp", "llvm"])
def special(request):
    if request.param == "llvm":
        pytest.importorskip("llvmlite")
    return rlang.loads(SOURCE, backend=request.param)


@pytest.mark.parametrize("t", [1, 2, 3, 4, 7, 10, 25, 130])
def test_lgamma_half(special, t):
    out, t_after = special.i_lgamma_half(0.25, t)
    assert t_after == t
    assert out - 0.25 == pytest.approx(math.lgamma(t / 2), rel=1e-13, abs=1e-15)
    back, _ = (~special.i_lgamma_half)(out, t)
    assert back == pytest.approx(0.25, abs=1e-13)


@pytest.mark.parametrize("t,d", [(1, 1), (3, 2), (4, 2), (11, 10), (13, 10), (70, 64)])
def test_multigammaln_half(special, t, d):
    scipy_special = pytest.importorskip("scipy.special")
    out = special.i_multigammaln_half(0.0, t, d)[0]
    assert out == pytest.approx(scipy_special.multigammaln(t / 2, d), rel=1e-13, abs=1e-14)
    assert (~special.i_multigammaln_half)(out, t, d)[0] == pytest.approx(0.0, abs=1e-11)


def test_the_output_passes_its_gradient_through(special):
    assert rlang.gradient(special.i_lgamma_half, (0.0, 5), "out!") == (1.0, None)


@pytest.mark.parametrize("call", ["i_lgamma_half(0.0, 0)", "i_multigammaln_half(0.0, 2, 3)",
                                  "i_multigammaln_half(0.0, 2, 0)"])
def test_bad_arguments_stop(special, call):
    name, args = call.split("(", 1)
    with pytest.raises(rlang.RlangRuntimeError, match="assertion failed"):
        getattr(special, name)(*eval("(" + args))
