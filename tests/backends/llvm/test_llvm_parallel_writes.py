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

from gradient_agreement import assert_same_error, assert_same_gradients

SOURCE = """
function mod_two(a: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        a[i % 2] += 1.0
    end
end

function sum_into(a: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        a[0] += x[i]
    end
end

function scatter(out: f64[:], xs: f64[:])
    @parallel for i = 0:2
        out[i // 2] += xs[i]
    end
end

function uncall_scatter(out: f64[:], xs: f64[:])
    ~scatter(out, xs)
end

function add(p!, v)
    p! += v
end

function through_call(a: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        add(a[i // 3], x[i])
    end
end

function two(p!, q!, v)
    p! += v
    q! -= v
end

function second_shared(a: f64[:], b: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        two(a[i], b[i // 2], x[i])
    end
end

function first_shared(a: f64[:], b: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        two(b[i // 2], a[i], x[i])
    end
end

function reads_in_call(a: f64[:], x: f64[:])
    @parallel for i = 0:length(a) - 1
        add(a[i], x[0])
    end
end

function nested(a: f64[:], x: f64[:])
    @parallel for i = 0:1
        @parallel for j = 0:length(x) - 1
            a[j] += x[j] * i
        end
    end
end

function nested_inner(a: f64[:,:], x: f64[:])
    @parallel for i = 0:size(a, 0) - 1
        @parallel for j = 0:length(x) - 1
            a[i, j // 2] += x[j]
        end
    end
end

function swaps(a: f64[:])
    @parallel for i = 0:length(a) - 2
        SWAP(a[i], a[i + 1])
    end
end

function swaps_back(a: f64[:])
    @parallel for i = 0:length(a) - 2
        SWAP(a[i + 1], a[i])
    end
end

function parts(z: complex[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        z[i].re += x[i]
        z[length(x) - 1 - i].im += x[i]
    end
end

function stacked(a: f64[:])
    @parallel for i = 0:length(a) - 1
        s ← stack(f64)
        PUSH(s, a[i % 2])
        POP(s, a[i % 2])
        s → stack(f64)
    end
end

function backward_range(a: f64[:], x: f64[:])
    @parallel for i = length(x) - 1:-2:0
        a[i // 4] += x[i]
    end
end

function disjoint(y: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        t ← zeros(f64, 2)
        t[0] += x[i]
        y[i] += t[0] * x[0]
        add(y[i], x[i])
        t[0] -= x[i]
        t → zeros(f64, 2)
    end
end

function spread(l, y: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        y[i] += x[0] * x[i]
        add(y[i], x[i] * x[1])
    end
    l += y[1] * y[2]
end

function loss(l, y: f64[:], x: f64[:])
    sum_into(y, x)
    l += y[0] * y[0]
end

"""

INTERP = rlang.loads(SOURCE)
LLVM = rlang.loads(SOURCE, backend="llvm")


def _error(run):
    try:
        run()
    except rlang.RlangError as error:
        return error
    raise AssertionError("no error")


def _same_error(pick, *args):
    """`pick(module)(*copies of args)` raises the same error on both backends, and the
    frames show the same variables."""
    copies = [[np.copy(a) if isinstance(a, np.ndarray) else a for a in args]
              for _ in range(2)]
    expected = _error(lambda: pick(INTERP)(*copies[0]))
    got = _error(lambda: pick(LLVM)(*copies[1]))
    assert isinstance(expected, rlang.ReversibilityError)
    assert "iterations must not share a write" in expected.message
    assert_same_error(got, expected)
    assert got.render() == expected.render()        # the `with …` lines too
    return got


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
    expected = _error(rlang.loads(source).run_main)
    got = _error(rlang.loads(source, backend="llvm").run_main)
    assert_same_error(got, expected)
    assert "with hist = [1, 1, 1], data = [0, 2, 1, 2]" in got.render()
    assert got.render() == expected.render()


@pytest.mark.parametrize("name, args", [
    ("mod_two", (np.zeros(3), np.arange(4.0))),
    ("sum_into", (np.zeros(2), np.array([1.0, 2.0, 3.0]))),
    ("scatter", (np.zeros(3), np.array([1.0, 2.0, 3.0]))),
    ("through_call", (np.zeros(2), np.arange(5.0))),
    ("second_shared", (np.zeros(3), np.zeros(2), np.array([1.0, 2.0, 3.0]))),
    ("first_shared", (np.zeros(3), np.zeros(2), np.array([1.0, 2.0, 3.0]))),
    ("swaps", (np.arange(4.0),)),
    ("swaps_back", (np.arange(4.0),)),
    ("parts", (np.zeros(3, dtype=complex), np.array([1.0, 2.0, 3.0]))),
    ("stacked", (np.arange(3.0),)),
    ("backward_range", (np.zeros(3), np.arange(9.0))),
], ids=lambda v: v if isinstance(v, str) else "")
def test_a_shared_write_is_the_interpreters_error(name, args):
    error = _same_error(lambda m: getattr(m, name), *args)
    assert SOURCE.splitlines()[error.span.line - 1].strip().startswith("@parallel for")


def test_the_writer_and_the_writing_iteration_are_named():
    error = _same_error(lambda m: m.mod_two, np.zeros(3), np.arange(4.0))
    assert error.message.startswith("@parallel for: iterations i = 0 and i = 2 both write "
                                    "`a[i % 2]`")


def test_a_shared_write_in_the_inverse():
    xs = np.array([1.0, 2.0, 3.0])
    error = _same_error(lambda m: ~m.scatter, np.zeros(3), xs)
    assert "iterations i = 1 and i = 0" in error.message
    error = _same_error(lambda m: m.uncall_scatter, np.zeros(3), xs)
    assert [f.function for f in error.frames] == ["scatter", "uncall_scatter"]


def test_nested_parallel_loops_check_the_outer_loop_first():
    error = _same_error(lambda m: m.nested, np.zeros(3), np.arange(3.0))
    assert "iterations i = 0 and i = 1 both write `a[j]`" in error.message
    error = _same_error(lambda m: m.nested_inner, np.zeros((2, 2)), np.arange(3.0))
    assert "iterations j = 0 and j = 1" in error.message


def test_a_shared_write_in_a_gradient_run():
    args = (0.0, np.zeros(2), np.array([1.0, 2.0]))
    expected = _error(lambda: rlang.gradient(INTERP.loss, list(args), loss="l"))
    got = _error(lambda: rlang.gradient(LLVM.loss, [a.copy() if isinstance(a, np.ndarray)
                                                    else a for a in args], loss="l"))
    assert "iterations must not share a write" in expected.message
    assert_same_error(got, expected)


def test_gradients_shared_between_iterations_are_not_shared_writes():
    args = [0.0, np.zeros(3), np.array([1.5, -2.0, 0.5])]
    expected = rlang.gradient(INTERP.spread, [np.copy(a) for a in args], loss="l")
    got = rlang.gradient(LLVM.spread, [np.copy(a) for a in args], loss="l")
    assert_same_gradients(got, expected)


def test_loops_without_shared_writes_run_as_before():
    for name, args in (("disjoint", (np.zeros(3), np.array([1.0, 2.0, -3.0]))),
                       ("reads_in_call", (np.arange(3.0), np.array([1.0])))):
        expected = [np.copy(a) for a in args]
        getattr(INTERP, name)(*expected)
        got = [np.copy(a) for a in args]
        getattr(LLVM, name)(*got)
        for g, e in zip(got, expected):
            np.testing.assert_array_equal(g, e)
        back = [np.copy(a) for a in got]
        (~getattr(LLVM, name))(*back)
        for b, a in zip(back, args):
            np.testing.assert_allclose(b, a)


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
    for backend in ("interp", "llvm"):
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

