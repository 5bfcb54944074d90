"""`@parallel for` passes in SIMD lanes on the llvm backend (Note [Iterations in
lanes], rlang/ir/iteration_lanes.py): which loops' block functions are laned, and
that laned loops give the interpreter's values (forward bit for bit; gradients, whose
private sums add in another order, within rounding), with the same bits for every
thread count."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ir import blocks as plans
from rlang.ir import nodes as ir
from rlang.ir.iteration_lanes import LANES, laned_blocks
from rlang.ir.walk import walk
from rlang.lower.argument_types import type_of_value

from gradient_agreement import assert_same_gradients

SOURCE = """
function mix!(y!: f64[:], x: f64[:,:], mu: f64[:,:])
    @parallel for i = 0:size(x, 0) - 1
        @inbounds begin
            @routine begin
                d ← size(x, 1)
                s ← zeros(f64, size(mu, 0))
                for k = 0:size(mu, 0) - 1
                    for j = 0:d - 1
                        s[k] += (x[i, j] - mu[k, j]) * (x[i, j] - mu[k, j])
                    end
                end
            end
            for k = 0:size(mu, 0) - 1
                if s[k] < 4.0
                    y![i] += 1.0 / (1.0 + s[k])
                end
                if d > 2
                    y![i] += 0.5 * s[k] * mu[k, 0]
                end
            end
            ~@routine
        end
    end
end

function down!(y!: f64[:], x: f64[:,:], c: f64)
    @parallel for i = size(x, 0) - 1:-1:0
        @inbounds begin
            @routine begin
                t ← 0.0
                for j = 0:size(x, 1) - 1
                    t += x[i, j] * c
                end
            end
            y![i] += t * t
            ~@routine
        end
    end
end

function own!(y!: f64[:], x: f64[:,:])
    @parallel for i = 0:size(x, 0) - 1
        @inbounds for j = 0:size(x, 1) - 1
            y![i] += x[i, j] * x[i, j] * (j + 1)
        end
    end
end

function own_loss!(l!: f64, y: f64[:], x: f64[:,:])
    @routine own!(y, x)
    for i = 0:length(y) - 1
        @inbounds l! += y[i] * y[i]
    end
    ~@routine
end

function loss!(l!: f64, y: f64[:], x: f64[:,:], mu: f64[:,:])
    @routine mix!(y, x, mu)
    for i = 0:length(y) - 1
        @inbounds l! += y[i] * y[i]
    end
    ~@routine
end

function helper(o: f64, v: f64)
    o += v * v
end

function calls!(y!: f64[:], x: f64[:,:])
    @parallel for i = 0:size(x, 0) - 1
        @inbounds for j = 0:size(x, 1) - 1
            helper(y![i], x[i, j])
        end
    end
end

function flat!(y!: f64[:], x: f64[:,:])
    @parallel for i = 0:size(x, 0) - 1
        @inbounds y![i] += x[i, 0] * x[i, 1]
    end
end
"""

COUNTS = [0, 1, 7, 16, 17, 33, 100, 1001]


@pytest.fixture(scope="module")
def modules():
    return (rlang.loads(SOURCE, backend="llvm", invcheck=False),
            rlang.loads(SOURCE, backend="interp", invcheck=False))


@pytest.fixture
def threads():
    before = rlang.get_num_threads()
    yield rlang.set_num_threads
    rlang.set_num_threads(before)


def _laned(name: str, args: tuple, invcheck: bool = False, derivative: str = "") -> list:
    """Whether each planned loop of `name`'s module (or derivative) is laned."""
    from rlang.ad.derivatives import derivative_ir
    from rlang.ir.passes import run_passes
    from rlang.lower.statements import lower

    unit = rlang.loads(SOURCE, backend="interp").unit
    types = tuple(type_of_value(a) for a in args)
    if derivative:
        module, shared = derivative_ir(
            lambda backward: lower(unit, name, types, backward, invcheck), derivative)
    else:
        module, shared = lower(unit, name, types, False, invcheck), frozenset()
    module, found = plans.plan_blocks(run_passes(module), shared)
    laned_module, laned = laned_blocks(module, found)
    for plan in laned.values():
        block = laned_module.functions[plan.threaded.block]
        groups = [s for s in walk(block.body) if isinstance(s, ir.For)
                  and s.var.name == "p·lanes"]
        assert bool(groups) == plan.laned       # lane loops exactly where it says
    return [plan.laned for plan in laned.values()]


def test_which_loops_run_in_lanes():
    x, mu = np.zeros((4, 3)), np.zeros((2, 3))
    assert _laned("mix!", (np.zeros(4), x, mu)) == [True]
    # a gradient that every pass adds into (μ̄, c̄: private sums) stays one pass at a time
    assert _laned("mix!", (np.zeros(4), x, mu), derivative="grad") == [False]
    assert _laned("down!", (np.zeros(4), x, 1.0), derivative="grad") == [False]
    # one whose passes write only their own rows' gradients runs in lanes
    assert _laned("own!", (np.zeros(4), x), derivative="grad") == [True]
    assert _laned("down!", (np.zeros(4), x, 1.0)) == [True]
    assert _laned("mix!", (np.zeros(4), x, mu), invcheck=True) == [False]     # checks
    assert _laned("calls!", (np.zeros(4), x)) == [False]            # a call
    assert _laned("flat!", (np.zeros(4), x)) == [False]             # no loop inside


def test_laned_blocks_hold_at_least_two_groups():
    assert plans.block_count(1000, True, laned=True) == 62
    assert plans.block_count(31, True, laned=True) == 1             # runs inline
    assert plans.block_count(32, True, laned=True) == 2
    assert plans.LANED_BLOCK == 2 * LANES


@pytest.mark.parametrize("n", COUNTS)
def test_forward_runs_are_the_interpreters_to_the_bit(modules, threads, n):
    llvm, interp = modules
    rng = np.random.default_rng(n)
    x, mu = rng.normal(size=(n, 3)), rng.normal(size=(4, 3))
    expected = interp["mix!"](np.zeros(n), x, mu)[0]
    expected_down = interp["down!"](np.zeros(n), x, 0.7)[0]
    for count in (1, 3):
        threads(count)
        np.testing.assert_array_equal(llvm["mix!"](np.zeros(n), x, mu)[0], expected)
        np.testing.assert_array_equal(llvm["down!"](np.zeros(n), x, 0.7)[0], expected_down)
        back = (~llvm["mix!"])(expected.copy(), x, mu)[0]     # the inverse, laned too
        np.testing.assert_array_equal(back, (~interp["mix!"])(expected.copy(), x, mu)[0])


@pytest.mark.parametrize("n", [5, 40, 1001])
def test_gradients_agree_with_the_interpreter_and_across_thread_counts(modules, threads, n):
    llvm, interp = modules
    rng = np.random.default_rng(n + 1)
    args = (0.0, np.zeros(n), rng.normal(size=(n, 3)), rng.normal(size=(4, 3)))
    expected = rlang.gradient(interp["loss!"], args, loss="l!")
    seen = []
    for count in (1, 2, 3):
        threads(count)
        got = rlang.gradient(llvm["loss!"], args, loss="l!")
        assert_same_gradients(got, expected, f"n = {n}", rtol=1e-12)
        seen.append([np.asarray(g).tobytes() for g in got if g is not None])
    assert seen[0] == seen[1] == seen[2]


@pytest.mark.parametrize("n", [3, 40, 1001])
def test_laned_gradient_passes_are_the_interpreters(modules, threads, n):
    llvm, interp = modules
    x = np.random.default_rng(n + 2).normal(size=(n, 5))
    args = (0.0, np.zeros(n), x)
    expected = rlang.gradient(interp["own_loss!"], args, loss="l!")
    for count in (1, 3):
        threads(count)
        got = rlang.gradient(llvm["own_loss!"], args, loss="l!")
        assert_same_gradients(got, expected, f"n = {n}", rtol=1e-13)
