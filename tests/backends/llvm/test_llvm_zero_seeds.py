"""Zero seeds in the compiled gradient pass (Note [Zero seeds], rlang/ir/guards.py):
the chain rule of a seed runs in a branch where the seed is nonzero; in loops that
do not gather or scatter the branch becomes guarded values (selects).  Either way
the gradients and Hessians are the interpreter's, which skips zero seeds."""
from __future__ import annotations

import numpy as np

import rlang
from rlang.ir import nodes as ir
from rlang.ad.adjoint_ir import adjoint_module
from rlang.ir.guards import seed_guards, selects_outside_gathers
from rlang.ir.walk import walk
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_gradients

SOURCE = """
# y! += A x for A in compressed sparse column form (a gather and a scatter)
function csc!(y!: f64[:], colptr: i64[:], rowval: i64[:], nzval: f64[:], x: f64[:])
    for j = 0:length(x) - 1
        for p = colptr[j]:colptr[j + 1] - 1
            y![rowval[p]] += nzval[p] * x[j]
        end
    end
end

# s! += sum of squares: a loop LLVM vectorises
function sumsq!(s!: f64, x: f64[:])
    for i = 0:length(x) - 1
        s! += x[i] * x[i]
    end
end

# y![i] from y![i - 1] in place, top down: a loop whose passes wait on each other
# (Note [Seed branches in serial loops])
function recurrence!(y!: f64[:], x: f64[:])
    for i = length(y!) - 1:-1:1
        y![i] += x[i] * y![i - 1]
    end
end

# the same recurrence through an ancilla freed in every pass, as GradBench's RK4
# step keeps its stages: the ancilla's seed is zero wherever y![i]'s is
function staged!(y!: f64[:], x: f64[:])
    for i = length(y!) - 1:-1:1
        @routine begin
            k ← x[i] * y![i - 1]
        end
        y![i] += 0.5 * x[i] * k
        ~@routine
    end
end

# y! += 3 x^2 through two ancillas; at x = 0 both of their gradients are zero,
# but not their derivatives (the Hessian needs those seeds' chain rule)
function prod!(y!: f64, x: f64)
    @routine begin
        t ← 0.0
        t += 3.0 * x
        u ← 0.0
        u += x
    end
    y! += t * u
    ~@routine
end
"""

COLPTR = np.array([0, 2, 3, 5])
ROWVAL = np.array([0, 2, 1, 0, 2])


def _gradient_pass(name: str, args: list):
    unit = rlang.loads(SOURCE).unit
    types = tuple(type_of_value(a) for a in args)
    return adjoint_module(lower(unit, name, types, True, False))


def _branches_and_selects(module) -> tuple:
    stmts = [s for fn in module.functions.values() for s in walk(fn.body)]
    branches = sum(seed_guards(s) is not None for s in stmts)
    selects = sum(isinstance(s, ir.Update) and isinstance(s.value, ir.Guarded)
                  for s in stmts)
    return branches, selects


def test_seed_branches_stay_in_gather_loops_only():
    csc = _gradient_pass("csc!", [np.zeros(3), COLPTR, ROWVAL, np.ones(5), np.ones(3)])
    assert _branches_and_selects(csc) == (1, 0)
    assert _branches_and_selects(selects_outside_gathers(csc)) == (1, 0)
    squares = _gradient_pass("sumsq!", [0.0, np.ones(3)])
    assert _branches_and_selects(squares) == (1, 0)
    # x[i]·x[i]: one update, seed · (x[i] + x[i]) (Note [Elements read more than once])
    assert _branches_and_selects(selects_outside_gathers(squares)) == (0, 1)


def test_seed_branches_stay_in_loops_carried_through_elements():
    args = [np.ones(4), np.ones(4)]
    module = _gradient_pass("recurrence!", args)
    assert _branches_and_selects(selects_outside_gathers(module)) == \
        _branches_and_selects(module) == (1, 0)


def test_a_freed_ancillas_chain_rule_is_a_seed_branch_too():
    """The chain rule of `k ← x[i] * y![i - 1]`, run where the pass frees k, is a
    branch on k's seed like an update's (Note [Seeds of freed ancillas]): in a serial
    loop both stay branches, in a loop that vectorises both become selects."""
    module = _gradient_pass("staged!", [np.ones(4), np.ones(4)])
    assert _branches_and_selects(module) == (2, 0)
    assert _branches_and_selects(selects_outside_gathers(module)) == (2, 0)
    prod = _gradient_pass("prod!", [0.0, 0.0])
    assert _branches_and_selects(prod)[0] > 0
    assert _branches_and_selects(selects_outside_gathers(prod))[0] == 0


def test_a_freed_ancilla_with_a_zero_seed_adds_nothing():
    """y[1]'s loss leaves y[2..]'s seeds, and with them k's, zero; x[3] = inf makes
    k's partial in y[2] infinite, which the branch skips as the interpreter does."""
    x = np.array([0.0, 2.0, -1.5, np.inf, 0.5])
    y0 = np.array([1.0, -2.0, 0.5, 3.0, 0.25])
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    interp = rlang.loads(SOURCE, invcheck=False)
    for loss in (("y!", 1), ("y!", 2), ("y!", 4)):
        got = rlang.gradient(llvm["staged!"], [y0.copy(), x], loss)
        assert_same_gradients(got, rlang.gradient(interp["staged!"], [y0.copy(), x], loss))
    finite = rlang.gradient(llvm["staged!"], [y0.copy(), x], ("y!", 2))
    assert np.all(np.isfinite(finite[0])) and np.all(np.isfinite(finite[1]))


def test_an_infinite_partial_behind_a_zero_seed_in_a_serial_loop_adds_nothing():
    """The loss y[1] gives y[2..] zero seeds; x[3] = inf makes y[3]'s partial in
    y[2] infinite, and the branch skips it as the interpreter does."""
    x = np.array([0.0, 2.0, -1.5, np.inf, 0.5])
    for y0 in (np.array([1.0, -2.0, 0.0, 3.0, 0.25]), np.zeros(5)):
        llvm = rlang.loads(SOURCE, backend="llvm", invcheck=False)
        interp = rlang.loads(SOURCE, invcheck=False)
        for loss in (("y!", 1), ("y!", 2)):
            got = rlang.gradient(llvm["recurrence!"], [y0.copy(), x], loss)
            assert_same_gradients(got, rlang.gradient(interp["recurrence!"],
                                                      [y0.copy(), x], loss))
            assert np.all(np.isfinite(got[1]))


def test_an_infinite_partial_behind_a_zero_seed_adds_nothing():
    """Rows 1 and 2 of y get an infinite product; the loss y[0] gives them zero
    seeds, so x's and nzval's gradients stay finite, as the interpreter's do."""
    nzval = np.array([2.0, np.inf, np.inf, -1.5, 0.5])
    x = np.array([0.5, -2.0, 3.0])
    args = [np.zeros(3), COLPTR, ROWVAL, nzval, x]
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    interp = rlang.loads(SOURCE, invcheck=False)
    got = rlang.gradient(llvm["csc!"], args, ("y!", 0))
    assert_same_gradients(got, rlang.gradient(interp["csc!"], args, ("y!", 0)))
    assert np.all(np.isfinite(got[3])) and np.all(np.isfinite(got[4]))
    assert np.array_equal(got[4], [2.0, 0.0, -1.5])


def test_a_zero_seed_with_a_nonzero_tangent_runs_its_chain_rule():
    for invcheck in (True, False):
        llvm = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
        interp = rlang.loads(SOURCE, invcheck=invcheck)
        want = rlang.hessian(interp["prod!"], [0.0, 0.0], "y!")
        assert np.array_equal(want, [[0.0, 0.0], [0.0, 6.0]])
        assert np.array_equal(rlang.hessian(llvm["prod!"], [0.0, 0.0], "y!"), want)
