"""`rlang.torch.wrap` (rlang/bridges/torch.py, Note [The PyTorch bridge]): a rev
function inside PyTorch: values, gradients and Hessians equal PyTorch's own for
the same functions (tests/bridge_programs.py) to 1e-12; gradcheck and gradgradcheck;
no_grad; float32 tensors; outputs mode; torch.compile; the caller's tensors kept."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

if os.environ.get("RLANG_CI"):
    import torch                    # CI installs torch: a missing one is a failure
else:
    torch = pytest.importorskip("torch")

import rlang  # noqa: E402

from bridge_programs import PROGRAMS  # noqa: E402
from optional_parts import missing_package_message  # noqa: E402

BACKENDS = ["interp", "llvm"]


def tensors(values, requires_grad=True, dtype=torch.float64):
    return [torch.tensor(v, dtype=dtype, requires_grad=requires_grad) for v in values]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.name)
def test_gradients_and_hessians_equal_pytorchs_own(program, backend):
    m = rlang.loads(program.source, backend=backend)
    wrapped = rlang.torch.wrap(m.f, loss="y!")
    values = program.arguments(np.random.default_rng(len(program.name)))
    ours, theirs = tensors(values), tensors(values)
    value = wrapped(0.0, *ours)
    expected = program.reference(torch, *theirs)
    assert value.item() == pytest.approx(expected.item(), rel=1e-12, abs=1e-12)
    value.backward()
    expected.backward()
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-12, atol=1e-12)
    hessian = torch.autograd.functional.hessian(lambda *xs: wrapped(0.0, *xs),
                                                tuple(tensors(values, False)))
    reference = torch.autograd.functional.hessian(lambda *xs: program.reference(torch, *xs),
                                                  tuple(tensors(values, False)))
    for row, expected_row in zip(hessian, reference):
        for block, expected_block in zip(row, expected_row):
            np.testing.assert_allclose(block.numpy(), expected_block.numpy(),
                                       rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_gradcheck_and_gradgradcheck_pass(backend):
    program = PROGRAMS[0]
    m = rlang.loads(program.source, backend=backend)
    wrapped = rlang.torch.wrap(m.f, loss="y!")
    args = tuple(tensors(program.arguments(np.random.default_rng(3))))
    assert torch.autograd.gradcheck(lambda *xs: wrapped(0.0, *xs), args)
    assert torch.autograd.gradgradcheck(lambda *xs: wrapped(0.0, *xs), args)
    outputs = rlang.torch.wrap(m.f)
    y = torch.tensor(0.5, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda y, *xs: outputs(y, *xs), (y,) + args)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", PROGRAMS[:3], ids=lambda p: p.name)
def test_second_derivatives_of_outputs_equal_pytorchs_own(program, backend):
    """Without a loss, the Hessian of a function of the outputs that is not linear
    in them (so the incoming gradients depend on the arguments), and gradgradcheck
    of the outputs themselves."""
    m = rlang.loads(program.source, backend=backend)
    outputs = rlang.torch.wrap(m.f)
    values = tuple(tensors(program.arguments(np.random.default_rng(7)), False))

    def ours(*xs):
        outs = outputs(0.0, *xs)
        return outs[0] ** 2 + sum(torch.sin(o).sum() for o in outs[1:])

    def theirs(*xs):
        return program.reference(torch, *xs) ** 2 + sum(torch.sin(x).sum() for x in xs)

    got = torch.autograd.functional.hessian(ours, values)
    expected = torch.autograd.functional.hessian(theirs, values)
    for row, expected_row in zip(got, expected):
        for block, expected_block in zip(row, expected_row):
            np.testing.assert_allclose(block.numpy(), expected_block.numpy(),
                                       rtol=1e-10, atol=1e-10)
    args = tuple(t.requires_grad_() for t in tensors(program.arguments(np.random.default_rng(8))))
    assert torch.autograd.gradgradcheck(lambda *xs: outputs(0.5, *xs)[0], args)


def test_no_grad_runs_no_gradient(monkeypatch):
    m = rlang.loads(PROGRAMS[0].source, backend="llvm")
    wrapped = rlang.torch.wrap(m.f, loss="y!")
    from rlang.ad import drivers

    monkeypatch.setattr(drivers, "value_and_gradient", None)    # would fail if called
    a, x = tensors(PROGRAMS[0].arguments(np.random.default_rng(0)))
    with torch.no_grad():
        value = wrapped(0.0, a, x)
    assert not value.requires_grad
    assert value.item() == pytest.approx((a * (x ** 3).sum()).item(), rel=1e-14)


def test_float32_tensors_come_back_in_float32():
    m = rlang.loads(PROGRAMS[0].source, backend="llvm")
    wrapped = rlang.torch.wrap(m.f, loss="y!")
    a, x = tensors([2.0, [1.0, 2.0]], dtype=torch.float32)
    value = wrapped(0.0, a, x)
    value.backward()
    assert value.dtype == torch.float32 and x.grad.dtype == torch.float32
    np.testing.assert_array_equal(x.grad.numpy(), [6.0, 24.0])


def test_outputs_mode_and_the_callers_tensors():
    m = rlang.loads("""
function step(q!: f64[:], p: f64[:], k: i64)
    for i = 0:length(q!) - 1
        q![i] += p[i] * p[i] * k
    end
end""", backend="llvm")
    wrapped = rlang.torch.wrap(m.step)
    q = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    p = torch.tensor([3.0, 4.0], dtype=torch.float64, requires_grad=True)
    new_q, new_p, k = wrapped(q, p, torch.tensor(2))
    np.testing.assert_array_equal(new_q.detach().numpy(), [19.0, 34.0])
    np.testing.assert_array_equal(q.detach().numpy(), [1.0, 2.0])    # not written
    assert k.dtype == torch.int64 and not k.requires_grad
    (new_q * torch.tensor([1.0, 10.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_array_equal(q.grad.numpy(), [1.0, 10.0])
    np.testing.assert_array_equal(p.grad.numpy(), [12.0, 160.0])


def test_a_model_under_torch_compile_gives_the_eager_results():
    program = PROGRAMS[8]
    m = rlang.loads(program.source, backend="llvm")
    layer = rlang.torch.wrap(m.f, loss="y!")

    def model(w, x):
        return layer(0.0, torch.sin(w), x) * 3.0

    values = program.arguments(np.random.default_rng(5))
    eager, compiled = tensors(values), tensors(values)
    model(*eager).backward()
    torch.compile(model)(*compiled).backward()
    for a, b in zip(eager, compiled):
        np.testing.assert_allclose(a.grad.numpy(), b.grad.numpy(), rtol=1e-14)


def test_bad_uses_are_clear_errors():
    m = rlang.loads(PROGRAMS[0].source, backend="interp")
    with pytest.raises(rlang.RlangTypeError, match="takes a function of a loaded program"):
        rlang.torch.wrap(lambda x: x)
    with pytest.raises(rlang.RlangError, match="is not a parameter"):
        rlang.torch.wrap(m.f, loss="nothing")
    with pytest.raises(rlang.RlangTypeError, match="must be an f64"):
        rlang.torch.wrap(m.f, loss="y!")(0.0, 1.0, torch.tensor([[1.0]]))
    with pytest.raises(rlang.RlangTypeError, match="cannot be applied to an f64"):
        rlang.torch.wrap(m.f, loss="y!")(0.0, torch.tensor([1.0]), torch.tensor([1.0]))


def test_import_rlang_imports_no_torch():
    code = "import sys, rlang; assert 'torch' not in sys.modules; rlang.torch; " \
           "assert 'torch' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_framework_is_a_clear_import_error():
    assert "rlang.torch needs PyTorch, which is not installed" in \
        missing_package_message("torch", "torch")
