"""Gradient passes that sum a loop's conditional updates of one element in a scalar
(Note [Invariant sums in registers], rlang/ir/invariant_sums.py): a pass that
scatters keeps its seed branch and sums an element's conditional updates; the CSC
mat-vec's pass only gathers (it does not restore y, which nobody reads), so its
seeds are selects every pass runs and nothing is summed; its pullbacks stay the
interpreter's for dense, sparse, zero and non-finite seeds; a loop that runs no
pass leaves an element the index would miss alone; updates under the program's own
`if` and f32 sums agree too."""
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

from gradient_agreement import assert_same_gradients

#: csc_matvec! (the benchmarks' sparse product) is in workloads.rev
WORKLOADS = Path(__file__).resolve().parents[3] / "benchmarks" / "llvm" / "workloads.rev"
SOURCE = f"""
include "{WORKLOADS}"

# y![p] += w[n - 1] x[idx[p]]: the pass scatters into x·grad, so its seed branch
# stays, and w·grad[n - 1] is summed in the p loop, which runs no pass for n = 0
# (where w[n - 1] would be w[-1])
function tail!(y!: f64[:], idx: i64[:], w: f64[:], x: f64[:], n: i64)
    @inbounds for p = 0:n - 1
        y![p] += w[n - 1] * x[idx[p]]
    end
end

# w·grad[j] summed under the program's own `if`
function clipped!(s!: f64[:], x: f64[:], w: f64[:], j: i64)
    for i = 0:length(x) - 1
        if (x[i] > 0.0, ~)
            s![i] += x[i] * w[j]
        end
    end
end

function narrow_csc!(y!: f32[:], colptr: i64[:], rowval: i64[:], nzval: f32[:], x: f32[:])
    @inbounds for j = 0:length(x) - 1
        for p = colptr[j]:colptr[j + 1] - 1
            y![rowval[p]] += nzval[p] * x[j]
        end
    end
end
"""


def csc_args(dtype=np.float64, m=7, seed=3):
    rng = np.random.default_rng(seed)
    dense = rng.normal(size=(m, m)) * (rng.random((m, m)) < 0.4)
    dense[:, 2] = 0.0                               # an empty column
    colptr = np.concatenate([[0], np.cumsum((dense != 0).sum(axis=0))]).astype(np.int64)
    rowval = np.concatenate([np.flatnonzero(dense[:, j]) for j in range(m)]).astype(np.int64)
    nzval = np.concatenate([dense[dense[:, j] != 0, j] for j in range(m)]).astype(dtype)
    return [np.zeros(m, dtype), colptr, rowval, nzval, rng.normal(size=m).astype(dtype)]


def summed_targets(name: str, args: list, invcheck: bool = False) -> list:
    """The arrays whose updates the vjp pass of `name` adds from a summing scalar."""
    m = rlang.loads(SOURCE, backend="llvm")
    types = tuple(type_of_value(v) for v in args)
    module, _ = build_derivative(m.unit, name, types, False, invcheck, "grad")
    module = run_passes(complete(module))
    scalars = {s.var for s in walk(module.functions[module.entry].body)
               if isinstance(s, ir.Alloc) and s.var.name.endswith("·sum")}
    return sorted(s.target.var.name for s in walk(module.functions[module.entry].body)
                  if isinstance(s, ir.Update) and isinstance(s.value, ir.Read) and
                  s.value.var in scalars and isinstance(s.target, ir.ElemPlace))


@pytest.mark.parametrize("invcheck", [True, False])
def test_the_sparse_products_pass_gathers_with_selects_and_sums_nothing(invcheck):
    # a loop that gathers alone: its seeds are selects (Note [Seed branches in
    # serial loops]), its updates unconditional and kept in registers by LLVM
    assert summed_targets("csc_matvec!", csc_args(), invcheck) == []


def pulled(module, name, args, seed):
    copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    return rlang.vjp(module[name], *copy)[1](seed)


SEEDS = {
    "dense": lambda m: np.linspace(-1.0, 2.0, m),
    "one element": lambda m: np.eye(m)[0],
    "zero": lambda m: np.zeros(m),
    "non-finite": lambda m: np.where(np.arange(m) == 1, np.inf, np.linspace(0.5, 1.5, m)),
}


def finite_parts(gradients) -> list:
    return [None if g is None else np.where(np.isfinite(g), g, 0.0) for g in gradients]


@pytest.mark.parametrize("seed", SEEDS)
def test_sparse_pullbacks_are_the_interpreters(seed):
    interp, llvm = rlang.loads(SOURCE), rlang.loads(SOURCE, backend="llvm")
    args = csc_args()
    cotangents = (SEEDS[seed](7), None, None, None, None)
    expected = pulled(interp, "csc_matvec!", args, cotangents)
    for _ in range(2):
        got = pulled(llvm, "csc_matvec!", args, cotangents)
        for g, e in zip(got, expected):
            if e is not None:                   # the same infinities, the rest close
                assert np.array_equal(g[~np.isfinite(e)], e[~np.isfinite(e)]), seed
        assert_same_gradients(*(finite_parts(got), finite_parts(expected)), seed)


def test_f32_sums_are_the_interpreters():
    interp, llvm = rlang.loads(SOURCE), rlang.loads(SOURCE, backend="llvm")
    args = csc_args(np.float32)
    cotangents = (np.linspace(-1.0, 2.0, 7).astype(np.float32), None, None, None, None)
    assert_same_gradients(pulled(llvm, "narrow_csc!", args, cotangents),
                          pulled(interp, "narrow_csc!", args, cotangents), "f32", rtol=1e-5)


@pytest.mark.parametrize("n", [0, 1, 4])
def test_a_loop_that_runs_no_pass_adds_nothing(n):
    """With n = 0 the summed element w·grad[-1] is outside w: its add is skipped
    (a zero sum), so w's gradient stays zero."""
    interp, llvm = rlang.loads(SOURCE), rlang.loads(SOURCE, backend="llvm")
    args = [np.zeros(4), np.array([2, 0, 3, 1], dtype=np.int64),
            np.array([0.5, -1.0, 2.0, 1.5]), np.array([0.25, 1.0, -2.0, 4.0]), n]
    assert summed_targets("tail!", args) == ["w·grad"]
    cotangents = (np.array([1.0, -2.0, 0.5, 3.0]), None, None, None, None)
    ours = pulled(llvm, "tail!", args, cotangents)
    assert_same_gradients(ours, pulled(interp, "tail!", args, cotangents), f"n = {n}")
    if n == 0:
        assert np.array_equal(ours[2], np.zeros(4))


def test_updates_under_the_programs_if_are_summed_and_agree():
    interp, llvm = rlang.loads(SOURCE), rlang.loads(SOURCE, backend="llvm")
    args = [np.zeros(5), np.array([0.5, -1.0, 2.0, 0.0, 1.5]), np.array([0.25, -3.0]), 1]
    assert summed_targets("clipped!", args) == ["w·grad"]
    cotangents = (np.array([1.0, -2.0, 0.5, 3.0, 0.75]), None, None, None)
    for invcheck in (True, False):
        interp = rlang.loads(SOURCE, invcheck=invcheck)
        llvm = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
        assert_same_gradients(pulled(llvm, "clipped!", args, cotangents),
                              pulled(interp, "clipped!", args, cotangents), "clipped!")
