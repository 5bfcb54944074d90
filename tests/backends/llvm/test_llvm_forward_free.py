"""Gradients without the forward run (Note [Gradients without the forward run],
rlang/ir/outputs.py): with invcheck off, a function that only reads some parameters
and only adds to the others gets its gradient from the pass alone, started from
its inputs.  The analysis is checked on the IR; the gradients against the
interpreter's and against the compiled gradient with the forward run; the caller's
arrays are left as they were; a failing pass gives the forward run's error.  The
first call of a gradient takes the pass alone too, and compiles no forward."""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import rlang
from rlang.ir.outputs import accumulate_only
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import (agree_or_ill_conditioned, assert_same_error,
                                assert_same_gradients)
from test_llvm_gradients import float_programs

REPO = Path(__file__).resolve().parents[3]
WORKLOADS = REPO / "benchmarks" / "llvm" / "workloads.rev"

SOURCE = """
function add_sq!(s!: f64, x: f64[:])
    for i = 0:length(x) - 1
        s! += x[i] * x[i]
    end
end

# s! is added to through a call, y! element by element
function outer!(s!: f64, y!: f64[:], x: f64[:])
    add_sq!(s!, x)
    for i = 0:length(x) - 1
        y![i] -= 2.0 * x[i]
    end
end

# s! is read as well: the pass needs its final value
function reads!(s!: f64, x: f64[:])
    s! += x[0]
    x[1] += s! * 0.5
end

# x is swapped, not added to
function swaps!(s!: f64, x: f64[:])
    SWAP(x[0], x[1])
    s! += x[0] * 3.0
end

function loud!(s!: f64, x: f64[:])
    s! += x[0]
    @safe print("s", s!)
end

function pick!(s!: f64, x: f64[:], i: i64)
    s! += x[i] * x[i]
end

# the conversion is checked with invcheck off too
function whole!(s!: f64, x: f64[:])
    s! += x[1] * f64(i64(x[0] * 2.0))
end
"""

X = np.array([0.5, -1.25, 2.0])


def _accumulated(name: str, args: list):
    unit = rlang.loads(SOURCE).unit
    return accumulate_only(lower(unit, name, tuple(type_of_value(a) for a in args),
                                 False, False))


def test_which_functions_need_no_forward_run():
    assert _accumulated("add_sq!", [0.0, X]) == {0}
    assert _accumulated("outer!", [0.0, X.copy(), X]) == {0, 1}
    assert _accumulated("pick!", [0.0, X, 1]) == {0}
    assert _accumulated("whole!", [0.0, X]) == {0}
    for name in ("reads!", "swaps!", "loud!"):
        assert _accumulated(name, [0.0, X]) is None, name


def _counting(module):
    """The module's compiled functions, counting the forward runs (the runs of
    entry points that are not a gradient pass's `rev_grad_…`), also those packed
    with their pass into one call (Note [Two entry points on one buffer]).  The
    routes get no builtin (Note [Gradient calls without Python]), whose runs are
    not Python's to count."""
    functions = module.compiled
    functions.native_call = lambda entries, call: None
    calls = []
    original, original_paired = functions.run, functions.paired

    def run(native, symbol, values):
        if not symbol.startswith("rev_grad_"):
            calls.append(symbol)
        return original(native, symbol, values)

    def paired(forward, backward):
        pair = original_paired(forward, backward)
        if not pair or forward is None:
            return pair

        def both(values, between=None):
            calls.append(forward[1])
            return pair(values, between)
        return both

    functions.run, functions.paired = run, paired
    return calls


@pytest.mark.parametrize("name, args, loss", [
    ("add_sq!", [0.0, X], "s!"),
    ("outer!", [1.5, np.array([1.0, 2.0, 3.0]), X], "s!"),
    ("outer!", [1.5, np.array([1.0, 2.0, 3.0]), X], ("y!", 2)),
    ("reads!", [0.25, X], "s!"),
    ("swaps!", [0.0, X], "s!"),
])
def test_gradients_are_the_interpreters_and_arguments_are_left_alone(name, args, loss):
    interp = rlang.loads(SOURCE, invcheck=False)
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    expected = rlang.gradient(interp[name], [a.copy() if isinstance(a, np.ndarray) else a
                                             for a in args], loss)
    calls = _counting(llvm)
    for _ in range(3):
        before = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        assert_same_gradients(rlang.gradient(llvm[name], args, loss), expected, name)
        for a, b in zip(args, before):
            if isinstance(a, np.ndarray):
                assert np.array_equal(a, b)
    skipped = _accumulated(name, args) is not None
    assert len(calls) == (0 if skipped else 3)      # the first call too starts from
    #                                                 the arguments
    compiled = {key[3] for key in llvm.compiled._modules if key[0] == name}
    assert compiled == ({"grad"} if skipped else {"", "grad"})    # no forward compiled


@pytest.mark.parametrize("first", [False, True])
def test_a_failing_pass_gives_the_forward_runs_error(first):
    """The pass fails its conversion as the forward run would (running backward);
    the driver then runs the forward run, whose error is the interpreter's.  On a
    later call (the plan made by a good one, which ran no forward) and on the
    gradient's first call, which compiles the forward only then."""
    interp = rlang.loads(SOURCE, invcheck=False)
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    calls = _counting(llvm)
    if not first:
        rlang.gradient(llvm["whole!"], [0.0, X], "s!")           # the plan
    bad = np.array([0.3, 1.0, 2.0])
    with pytest.raises(rlang.RlangError) as got:
        rlang.gradient(llvm["whole!"], [0.0, bad], "s!")
    with pytest.raises(rlang.RlangError) as want:
        rlang.gradient(interp["whole!"], [0.0, bad], "s!")
    assert_same_error(got.value, want.value)
    assert "running backward" not in want.value.render()
    assert len(calls) == 1 and np.array_equal(bad, [0.3, 1.0, 2.0])
    assert_same_gradients(rlang.gradient(llvm["whole!"], [0.0, X], "s!"),
                          rlang.gradient(interp["whole!"], [0.0, X], "s!"))


def test_invcheck_on_always_runs_forward():
    llvm = rlang.loads(SOURCE, backend="llvm")
    calls = _counting(llvm)
    for _ in range(2):
        rlang.gradient(llvm["add_sq!"], [0.0, X], "s!")
    assert len(calls) == 2


def test_the_benchmark_objectives():
    """GMM's objective, the CSC product and the sum of squares skip the forward run
    (and its compilation) and agree with the interpreter."""
    sys.path.insert(0, str(WORKLOADS.parent))
    import baselines

    g = baselines.make_gmm(3, 4, 6)
    sparse = baselines.make_sparse(20, 20, 0.3)
    cases = [("gmm_objective!", [0.0, g["alphas"], g["means"], g["icf"], g["x"], g["gamma"],
                                 g["m"]], "err!"),
             ("csc_matvec!", [np.zeros(20), sparse["colptr"], sparse["rowval"],
                              sparse["nzval"], sparse["x"]], ("y!", 3)),
             ("sumsq!", [0.0, np.linspace(-1.0, 1.0, 50)], "s!")]
    interp = rlang.load(WORKLOADS, invcheck=False)
    llvm = rlang.load(WORKLOADS, backend="llvm", invcheck=False)
    calls = _counting(llvm)
    for name, args, loss in cases:
        expected = rlang.gradient(interp[name], args, loss)
        for _ in range(2):
            assert_same_gradients(rlang.gradient(llvm[name], args, loss), expected, name)
    assert calls == []          # not even the first calls run the forward
    assert {key[3] for key in llvm.compiled._modules} == {"grad"}


@float_programs(max_examples=40)
def test_generated_programs_with_invcheck_off(source, args, loss):
    interp = rlang.loads(source, invcheck=False)
    llvm = rlang.loads(source, backend="llvm", invcheck=False)
    copy = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
    expected = rlang.gradient(interp.f, copy, loss)
    for _ in range(2):          # the second call may skip the forward run
        agree_or_ill_conditioned(
            rlang.gradient(llvm.f, args, loss), expected,
            lambda a: rlang.gradient(interp.f, [x.copy() if isinstance(x, np.ndarray) else x
                                                for x in a], loss), args, source)
