"""The default backend of `rlang.load`/`rlang.loads` (docs/backends.md, "The default
backend"): "auto" runs each call compiled by llvm where llvm can run it and on the
interpreter where llvm refuses it; RLANG_BACKEND names another default.  (The test
suite's conftest sets RLANG_BACKEND=interp for the other tests; these unset it.)"""
from __future__ import annotations

import io
import sys
from contextlib import redirect_stdout

import numpy as np
import pytest

import rlang
from rlang.types_rules import BackendUnsupported

SOURCE = """
function poly!(y!: f64, x: f64)
    y! += x * x + 3.0 * x
end

# llvm refuses the ulog literal with a variable element
function shown!(a!: f64[:])
    a![0] += 1.0
    @safe show(a!)
    t ← [ulog(a![0]), ulog(2.0)]
    t → [ulog(a![0]), ulog(2.0)]
end

function main()
    v ← zeros(f64, 2)
    shown!(v)
end
"""


@pytest.fixture
def no_default(monkeypatch):
    monkeypatch.delenv("RLANG_BACKEND", raising=False)


def test_the_default_is_auto_and_compiles_what_llvm_can_run(no_default):
    m = rlang.loads(SOURCE)
    assert m.backend == "auto" and m.fallback
    assert m.poly_(1.0, 2.0) == (11.0, 2.0)
    assert type(m.compiled).__name__ == "LlvmFunctions"
    assert any(key[0] == "poly!" for key in m.compiled._modules)    # it ran compiled
    assert (~m.poly_)(11.0, 2.0) == (1.0, 2.0)
    assert rlang.gradient(m.poly_, [1.0, 2.0], "y!") == (1.0, 7.0)
    assert np.allclose(rlang.hessian(m.poly_, [1.0, 2.0], "y!"), [[0, 0], [0, 2]])


def test_what_llvm_refuses_runs_on_the_interpreter(no_default):
    with pytest.raises(BackendUnsupported, match="ulog array literals"):
        rlang.loads(SOURCE, backend="llvm").shown_(np.zeros(2))
    m = rlang.loads(SOURCE)
    out = io.StringIO()
    with redirect_stdout(out):
        a, = m.shown_(np.zeros(2))
        store = m.run_main()
    assert np.array_equal(a, [1.0, 0.0])
    assert out.getvalue() == "a! = [1.0, 0.0]\na! = [1.0, 0.0]\n"
    assert [name for name, _ in store] == ["v"] and np.array_equal(store[0][1], [1.0, 0.0])
    with redirect_stdout(io.StringIO()):
        grads = rlang.gradient(m.shown_, [np.zeros(2)], ("a!", 0))
    assert np.array_equal(grads[0], [1.0, 0.0])


def test_errors_are_the_interpreters_on_either_path(no_default):
    source = "function f(x: f64)\n    t ← 1.0\n    t → 2.0\nend\n"
    messages = []
    for backend in (None, "interp"):
        with pytest.raises(rlang.RlangError) as caught:
            rlang.loads(source, backend=backend).f(0.0)
        messages.append((type(caught.value), str(caught.value).splitlines()[0]))
    assert messages[0] == messages[1]


def test_rlang_backend_names_the_default(monkeypatch):
    monkeypatch.setenv("RLANG_BACKEND", "interp")
    m = rlang.loads(SOURCE)
    assert m.backend == "interp" and m.compiled is None and not m.fallback
    monkeypatch.setenv("RLANG_BACKEND", "llvm")
    assert rlang.loads(SOURCE).backend == "llvm"
    monkeypatch.setenv("RLANG_BACKEND", "gpu")
    with pytest.raises(rlang.RlangError, match="interp, llvm, cuda, auto"):
        rlang.loads(SOURCE)


def test_auto_without_llvmlite_is_the_interpreter(no_default, monkeypatch):
    monkeypatch.setitem(sys.modules, "rlang.backends.llvm.backend", None)   # import fails
    m = rlang.loads(SOURCE)
    assert m.backend == "auto" and m.compiled is None
    assert m.poly_(1.0, 2.0) == (11.0, 2.0)


def test_an_array_llvm_cannot_address_runs_on_the_interpreter(no_default):
    source = "function take!(s!: f64, x: f64[:])\n    s! += x[1]\nend\n"
    misaligned = np.zeros(8 * 3 + 1, dtype=np.uint8)[1:].view(np.float64)
    misaligned[:] = [1.0, 2.0, 3.0]
    with pytest.raises(BackendUnsupported, match="aligned arrays"):
        rlang.loads(source, backend="llvm").take_(0.0, misaligned)
    assert rlang.loads(source).take_(0.0, misaligned)[0] == 2.0


def test_a_hessian_llvm_refuses_is_the_interpreters(no_default):
    # compiled Hessians refuse any function holding a complex value; the
    # interpreter only where a tangent reaches one (docs/backends.md)
    source = """
function f(y!: f64, x: f64)
    z ← complex(1.0, 2.0)
    y! += x * x * real(z)
    z → complex(1.0, 2.0)
end
"""
    with pytest.raises(rlang.RlangTypeError, match="Hessians through complex"):
        rlang.hessian(rlang.loads(source, backend="llvm").f, [0.0, 2.0], "y!")
    assert np.array_equal(rlang.hessian(rlang.loads(source).f, [0.0, 2.0], "y!"),
                          [[0.0, 0.0], [0.0, 2.0]])
