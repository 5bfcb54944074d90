"""A gradient pass run from Python does not restore inputs that nobody reads
(Note [Restoration nobody reads], rlang/ir/prune.py): checked on the IR (what is
dropped, what must stay) and on the results, which stay the interpreter's, with
the caller's arrays as they were."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang.ad.derivatives import complete
from rlang.backends.llvm.backend import build_derivative
from rlang.ir import nodes as ir
from rlang.ir.passes import run_passes
from rlang.ir.walk import walk
from rlang.lower.argument_types import type_of_value
from rlang.numbers import ulog_array

from gradient_agreement import assert_same_gradients

#: the sparse product y += A x (`csc_matvec!`) is the benchmarks' (primal_speed.py)
WORKLOADS = Path(__file__).resolve().parents[3] / "benchmarks" / "llvm" / "workloads.rev"
SOURCE = f"""
include "{WORKLOADS}"

# x's restoration is read by the chain rule of the statement before it
function reread!(y!: f64, x: f64)
    y! += x * x
    x += 1.0
end

# a's restoration is read by the chain rule before it: the pass writes a
function rewrite!(y!: f64, a: f64[:])
    @inbounds y! += a[0] * a[1]
    @inbounds a[0] += 1.0
end

# the pass calls itself: the inner passes' callers read what they restore
function power!(y!: f64, x: f64, n: i64)
    if (n > 0, ~)
        y! += x * x * 0.5
        x += sin(y!) * 0.25
        power!(y!, x, n - 1)
        x -= y! * y! * 0.1
    end
end

# a ulog argument's gradient comes back in value space, from its restored value
function logs!(y!: f64, a: ulog[:])
    @inbounds for i = 0:length(a) - 1
        a[i] *= 2.0
        y! += f64(a[i]) * f64(a[i])
    end
end
"""
CSC_ARGS = [np.zeros(3), np.array([0, 2, 3, 5]), np.array([0, 2, 1, 0, 2]),
            np.array([1.0, -2.0, 0.5, 3.0, 0.25]), np.array([0.5, -1.0, 2.0])]


def _pass_updates(name: str, args: list, derivative: str = "grad") -> dict:
    """Per variable name, the updates the compiled gradient pass of `name` (or its
    tangent, `derivative` "tan_grad") makes."""
    m = rlang.loads(SOURCE, backend="llvm")
    types = tuple(type_of_value(v) for v in args)
    module, _ = build_derivative(m.unit, name, types, False, False, derivative)
    module = run_passes(complete(module))
    found: dict = {}
    for stmt in walk(module.functions[module.entry].body):
        if isinstance(stmt, ir.Update):
            found[stmt.target.var.name] = found.get(stmt.target.var.name, 0) + 1
    return found


def test_the_sparse_products_pass_leaves_y_alone():
    updates = _pass_updates("csc_matvec!", CSC_ARGS)
    assert "y!" not in updates                      # no restoration of y
    assert updates.get("x·grad") and updates.get("nzval·grad")


def test_the_tangent_of_the_pass_leaves_y_and_its_tangent_alone():
    # Hessians and hvps read the gradients and their tangents only
    updates = _pass_updates("csc_matvec!", CSC_ARGS, "tan_grad")
    assert "y!" not in updates and "y!·tan" not in updates
    assert updates.get("x·grad·tan") and updates.get("nzval·grad·tan")


def test_hessians_and_hvps_through_the_sparse_product_agree_with_the_interpreter():
    compiled, reference = (rlang.loads(SOURCE, backend=b) for b in ("llvm", "interp"))
    args = [np.array([0.5, -1.0, 0.25])] + CSC_ARGS[1:]
    direction = [None, None, None, np.array([1.0, 0.5, -2.0, 0.0, 3.0]),
                 np.array([0.25, 1.0, -1.0])]
    for loss in (("y!", 0), ("y!", 2)):
        ours = rlang.hvp(compiled["csc_matvec!"], args, direction, loss)
        theirs = rlang.hvp(reference["csc_matvec!"], args, direction, loss)
        for a, b in zip(ours, theirs):
            assert (a is None) == (b is None)
            if a is not None:
                np.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-15)
        hessian = rlang.hessian(compiled["csc_matvec!"], args, loss)
        np.testing.assert_allclose(hessian, rlang.hessian(reference["csc_matvec!"], args,
                                                          loss), rtol=1e-14, atol=1e-15)


def test_a_restoration_the_chain_rule_reads_is_kept():
    updates = _pass_updates("reread!", [0.0, 1.5])
    assert "x" in updates and "y!" not in updates


@pytest.mark.parametrize("name, args, loss", [
    ("csc_matvec!", CSC_ARGS, ("y!", 1)),
    ("reread!", [0.25, 1.5], "y!"),
    ("power!", [0.1, 0.7, 6], "y!"),
    ("logs!", [0.0, ulog_array([0.5, 2.0, 3.0])], "y!"),
])
@pytest.mark.parametrize("invcheck", [True, False])
def test_gradients_are_the_interpreters_and_arrays_come_back(name, args, loss, invcheck):
    interp = rlang.loads(SOURCE, invcheck=invcheck)
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    expected = rlang.gradient(interp[name], [a.copy() if isinstance(a, np.ndarray) else a
                                             for a in args], loss)
    for _ in range(2):              # the general route, then the short one
        before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert_same_gradients(rlang.gradient(llvm[name], args, loss), expected, name)
        for a, b in zip(args, before):
            if isinstance(a, np.ndarray):
                assert a.tobytes() == b.tobytes()


@pytest.mark.parametrize("name, args, seed", [
    ("csc_matvec!", CSC_ARGS, (np.array([1.0, -0.5, 2.0]), None, None, None, None)),
    ("rewrite!", [0.5, np.array([1.5, -2.0])], (1.0, np.array([0.25, 0.5]))),
])
def test_a_vjp_may_be_pulled_again(name, args, seed):
    """vjp_fn copies only the arrays its pass writes (rewrite!'s a, not the sparse
    product's y): the outputs it keeps stay as they were from pull to pull."""
    llvm = rlang.loads(SOURCE, backend="llvm")
    interp = rlang.loads(SOURCE)
    ours = rlang.vjp(llvm[name], *[a.copy() if isinstance(a, np.ndarray) else a
                                   for a in args])
    theirs = rlang.vjp(interp[name], *[a.copy() if isinstance(a, np.ndarray) else a
                                       for a in args])
    kept = [o.copy() if isinstance(o, np.ndarray) else o for o in ours[0]]
    for _ in range(3):
        assert_same_gradients(ours[1](seed), theirs[1](seed), name)
    for now, before in zip(ours[0], kept):
        assert np.array_equal(now, before)
    writes = llvm.compiled.arrays_written(next(
        p.native for k, p in llvm.compiled.plans.items() if k[0] == "vjp"))
    primal = {k for k in writes if k < len(args)}          # (the rest are gradients)
    assert primal == ({1} if name == "rewrite!" else set())
