"""`@parallel for` iterations sharing a write on llvm (Note [Shared writes in compiled
parallel loops], rlang/backends/llvm/parallel.py): with invcheck on, the interpreter's
ReversibilityError (class, message, span, call chain, frame variables), forward, in
the inverse and in gradients; loops without shared writes run as before; with
invcheck off nothing is checked and the compiled code has no trace of the check."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.backends.llvm.emit import emit_module
from rlang.ir import nodes as ir
from rlang.ir.walk import stmt_places, walk
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_error
from shared_write_programs import SOURCE, SharedWriteContract, error_of, loaded

LLVM = loaded("llvm")


class TestLlvm(SharedWriteContract):
    backend = "llvm"


def test_the_golden_programs_fail_alike():
    """tests/golden/errors/rev_parallel_shared_write*.rev, forward and backward."""
    source = """
    function main()
        hist ← zeros(i64, 3)
        data ← [0, 2, 1, 2]
        @parallel for i = 0:3
            hist[data[i]] += 1
        end
    end
    """
    expected = error_of(rlang.loads(source).run_main)
    got = error_of(rlang.loads(source, backend="llvm").run_main)
    assert_same_error(got, expected)
    assert "with hist = [1, 1, 1], data = [0, 2, 1, 2]" in got.render()
    assert got.render() == expected.render()


def test_a_called_function_cannot_write_a_whole_array_from_outside_the_loop():
    """The one way a callee could write an array of the loop other than through an
    element argument is refused by the checker on every backend."""
    source = """
    function scale!(v: f64[:], w)
        v[0] += w
    end

    function indirect!(v: f64[:], w)
        scale!(v, w)
    end

    function whole(a: f64[:], x: f64[:])
        @parallel for i = 0:length(x) - 1
            indirect!(a, x[i])
        end
    end
    """
    for backend in ("interp", "llvm", "cuda"):
        with pytest.raises(rlang.CheckErrors, match="`a` is written by every iteration"):
            rlang.loads(source, backend=backend)


def test_with_invcheck_off_shared_writes_run_as_a_sequential_loop():
    unchecked = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    a = np.zeros(3)
    unchecked.mod_two(a, np.arange(4.0))
    assert a.tolist() == [2.0, 2.0, 0.0]
    a = np.zeros(2)
    unchecked.sum_into(a, np.array([1.0, 2.0, 3.0]))
    assert a.tolist() == [6.0, 0.0]


def _types(args):
    return tuple(type_of_value(v) for v in args)


@pytest.mark.parametrize("invcheck", [True, False])
def test_the_check_is_compiled_only_with_invcheck_on(invcheck):
    args = (np.zeros(3), np.arange(4.0))
    module = lower(LLVM.unit, "through_call", _types(args), False, invcheck)
    claimed = [p for fn in module.functions.values() for s in walk(fn.body)
               for p in stmt_places(s) if isinstance(p, ir.ElemPlace) and p.claims]
    assert bool(claimed) == invcheck
    text = str(emit_module(module))
    assert ("writers" in text) == invcheck


def test_a_loop_writing_only_at_its_index_needs_no_record():
    """`y[i]` cannot be shared: no buffer, no claim (Note [Shared writes in compiled
    parallel loops]); `a[i]` next to `a[i + 1]` can."""
    for name, args, recorded in (("disjoint", (np.zeros(3), np.ones(3)), False),
                                 ("nested_inner", (np.zeros((2, 2)), np.ones(3)), True),
                                 ("swaps", (np.zeros(3),), True)):
        text = str(emit_module(lower(LLVM.unit, name, _types(args), False, True)))
        assert ("writers" in text) == recorded, name

