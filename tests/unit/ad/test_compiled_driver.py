"""The one compiled AD driver (rlang/ad/compiled.py) over the backends' interface
(rlang/backends/functions.py): each specialisation is lowered once per module, and
derivative IR comes from rlang/ad/derivatives.py alone."""
from __future__ import annotations

import numpy as np
import pytest

import rlang

SOURCE = """
function f!(y!, x)
    for i = 0:length(x) - 1
        y! += sin(x[i]) * x[i]
    end
end
"""


@pytest.fixture
def lowerings(monkeypatch, tmp_path):
    """The (name, types, inverse) of every lowering by a compiled backend; an empty
    disk cache, so that nothing is skipped."""
    pytest.importorskip("llvmlite")
    import rlang.lower.statements as statements    # (where the backends import it from)

    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))
    calls = []
    real = statements.lower

    def counting(unit, name, types, inverse, invcheck):
        calls.append((name, types, inverse))
        return real(unit, name, types, inverse, invcheck)

    monkeypatch.setattr(statements, "lower", counting)
    return calls


@pytest.mark.parametrize("invcheck", [True, False])
def test_a_gradient_lowers_each_specialisation_once(lowerings, invcheck):
    m = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    x = np.linspace(0.1, 0.9, 5)
    grads = rlang.gradient(m["f!"], [0.0, x], "y!")
    assert np.allclose(grads[1], np.sin(x) + x * np.cos(x))
    rlang.gradient(m["f!"], [0.0, x], "y!")        # a second call lowers nothing
    rlang.hessian(m["f!"], [0.0, x[:2].copy()], "y!")
    assert lowerings, "the backend lowered nothing: the test sees no lowering"
    assert len(lowerings) == len(set(lowerings)), lowerings


def test_both_backends_build_derivatives_from_one_place(monkeypatch, tmp_path):
    pytest.importorskip("numba")
    monkeypatch.setenv("RLANG_CACHE_DIR", str(tmp_path))    # compile, not load
    import rlang.ad.derivatives as derivatives
    import rlang.backends.cuda.backend as cuda_backend
    import rlang.backends.llvm.backend as llvm_backend

    asked = []
    real = derivatives.derivative_ir

    def recording(lowered, derivative):
        asked.append(derivative)
        return real(lowered, derivative)

    for module in (llvm_backend, cuda_backend, derivatives):
        if hasattr(module, "derivative_ir"):
            monkeypatch.setattr(module, "derivative_ir", recording)
    for backend in ("llvm", "cuda"):
        asked.clear()
        m = rlang.loads("function g!(y!, x)\n    y! += x * x\nend\n", backend=backend)
        assert rlang.gradient(m["g!"], [0.0, 3.0], "y!") == (1.0, 6.0)
        assert asked == ["grad"], backend
