"""`@parallel for` passes sharing a write on the cuda backend (Note [Shared writes on
the GPU], rlang/backends/cuda/shared_writes.py): with invcheck on, the interpreter's
ReversibilityError (class, message, span, call chain) whatever the launch shape,
forward, in the inverse, in nested loops and in gradient runs; loops without shared
writes give the interpreter's results and need no owner buffer; with invcheck off
nothing is checked."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.backends.cuda.backend import build_module
from rlang.backends.cuda.emit import write_program
from rlang.lower.argument_types import type_of_value

from shared_write_programs import INTERP, SOURCE, SharedWriteContract, error_of, loaded

CUDA = loaded("cuda")


class TestCuda(SharedWriteContract):
    backend = "cuda"
    refused = frozenset({"stacked", "disjoint"})    # a stack; an array ancilla in a kernel
    same_frames = False                 # cuda frames list no variables (docs/cuda.md)


@pytest.mark.parametrize("threads, blocks", [("1", "1"), ("2", "1"), ("8", "2")])
def test_the_report_does_not_depend_on_the_launch_shape(monkeypatch, threads, blocks):
    """Many passes racing on few elements: the one-thread run reports the
    interpreter's pair (the first writer of the first element written twice)."""
    monkeypatch.setenv("RLANG_CUDA_THREADS", threads)
    monkeypatch.setenv("RLANG_CUDA_BLOCKS", blocks)
    xs = np.arange(40.0)
    contract = TestCuda()
    error = contract.same_error(CUDA, lambda m: m.backward_range, np.zeros(10), xs)
    assert "iterations i = 39 and i = 37" in error.message
    error = contract.same_error(CUDA, lambda m: m.mod_two, np.zeros(3), xs)
    assert error.message.startswith("@parallel for: iterations i = 0 and i = 2 both write "
                                    "`a[i % 2]`")


def test_the_arrays_are_those_of_the_one_thread_run():
    """After a shared write the arrays are as the passes before the failing one left
    them, with the failing pass's writes up to its claim (the interpreter's state)."""
    got, expected = np.zeros(2), np.zeros(2)
    xs = np.array([1.0, 2.0, 3.0, 4.0])
    error_of(lambda: CUDA.through_call(got, xs))
    error_of(lambda: INTERP.through_call(expected, xs))
    np.testing.assert_array_equal(got, expected)


def test_an_inner_loop_runs_afresh_each_time():
    """The inner loop's owner words belong to one run of it: the second run (the
    next pass of the sequential loop around it) writes the same elements freely."""
    source = """
    function f(a: f64[:,:], x: f64[:])
        @parallel for i = 0:size(a, 0) - 1
            for k = 0:2
                @parallel for j = 0:length(x) - 1
                    a[i, (j + k) % length(x)] += x[j]
                end
            end
        end
    end
    """
    a = np.zeros((4, 3))
    rlang.loads(source, backend="cuda").f(a, np.array([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(a, np.full((4, 3), 6.0))


def _kernels(name, args, invcheck=True):
    types = tuple(type_of_value(v) for v in args)
    module, shadows = build_module(CUDA.unit, name, types, False, invcheck)
    return write_program(module, shadows).kernels


def test_a_loop_writing_only_at_its_index_needs_no_owner_buffer():
    source = "function f(y: f64[:], x: f64[:])\n    @parallel for i = 0:length(x) - 1\n" \
             "        y[i] += x[i] * x[0]\n    end\nend\n"
    m = rlang.loads(source, backend="cuda")
    types = (type_of_value(np.zeros(2)),) * 2
    (plan,) = write_program(build_module(m.unit, "f", types, False, True)[0]).kernels
    assert plan.owners == [] and plan.inner_owners == []
    (plan,) = _kernels("mod_two", (np.zeros(3), np.arange(4.0)))
    assert [v.name for v in plan.owners] == ["a"] and plan.checked
    (plan,) = _kernels("nested_inner", (np.zeros((2, 2)), np.arange(3.0)))
    assert plan.owners == [] and [v.name for _, v in plan.inner_owners] == ["a"]
    (plan,) = _kernels("mod_two", (np.zeros(3), np.arange(4.0)), invcheck=False)
    assert plan.owners == [] and plan.inner_owners == []


def test_with_invcheck_off_shared_writes_are_not_checked():
    """No owner buffer, no error (what the racing passes leave is undefined)."""
    unchecked = rlang.loads(SOURCE, backend="cuda", invcheck=False)
    unchecked.mod_two(np.zeros(3), np.arange(4.0))
    unchecked.nested_inner(np.zeros((2, 2)), np.arange(3.0))
