"""The shared-write check of `@parallel for` on a compiled backend against the
interpreter's: programs whose passes share writes (or do not), and
`SharedWriteContract`, the tests every compiled backend passes (subclassed, with its
backend's name, by tests/backends/llvm/test_llvm_parallel_writes.py and
tests/backends/cuda/test_cuda_parallel_writes.py)."""
from __future__ import annotations

import functools

import numpy as np
import pytest

import rlang
from rlang.types_rules import BackendUnsupported

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

CASES = [
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
]


def error_of(run):
    """The RlangError `run()` raises."""
    try:
        run()
    except rlang.RlangError as error:
        return error
    raise AssertionError("no error")


@functools.lru_cache(maxsize=None)
def loaded(backend: str):
    """SOURCE on `backend`, loaded once."""
    return rlang.loads(SOURCE, backend=backend)


def _copies(args) -> list:
    return [np.copy(a) if isinstance(a, np.ndarray) else a for a in args]


class SharedWriteContract:
    """What every compiled backend does with shared writes (invcheck on)."""

    backend = ""
    refused: frozenset = frozenset()     # functions the backend refuses (stacks)
    same_frames = True                   # errors show the interpreter's `with …` lines

    @pytest.fixture
    def compiled(self):
        return loaded(self.backend)

    def same_error(self, compiled, pick, *args):
        """`pick(module)(*copies of args)` raises the interpreter's error."""
        expected = error_of(lambda: pick(INTERP)(*_copies(args)))
        got = error_of(lambda: pick(compiled)(*_copies(args)))
        assert isinstance(expected, rlang.ReversibilityError)
        assert "iterations must not share a write" in expected.message
        assert_same_error(got, expected)
        if self.same_frames:
            assert got.render() == expected.render()
        return got

    @pytest.mark.parametrize("name, args", CASES, ids=[c[0] for c in CASES])
    def test_a_shared_write_is_the_interpreters_error(self, compiled, name, args):
        if name in self.refused:
            with pytest.raises(BackendUnsupported):
                getattr(compiled, name)(*_copies(args))
            return
        error = self.same_error(compiled, lambda m: getattr(m, name), *args)
        assert SOURCE.splitlines()[error.span.line - 1].strip().startswith("@parallel for")

    def test_the_writer_and_the_writing_iteration_are_named(self, compiled):
        error = self.same_error(compiled, lambda m: m.mod_two, np.zeros(3), np.arange(4.0))
        assert error.message.startswith("@parallel for: iterations i = 0 and i = 2 both "
                                        "write `a[i % 2]`")

    def test_a_shared_write_in_the_inverse(self, compiled):
        xs = np.array([1.0, 2.0, 3.0])
        error = self.same_error(compiled, lambda m: ~m.scatter, np.zeros(3), xs)
        assert "iterations i = 1 and i = 0" in error.message
        error = self.same_error(compiled, lambda m: m.uncall_scatter, np.zeros(3), xs)
        assert [f.function for f in error.frames] == ["scatter", "uncall_scatter"]

    def test_nested_parallel_loops_check_the_outer_loop_first(self, compiled):
        error = self.same_error(compiled, lambda m: m.nested, np.zeros(3), np.arange(3.0))
        assert "iterations i = 0 and i = 1 both write `a[j]`" in error.message
        error = self.same_error(compiled, lambda m: m.nested_inner, np.zeros((2, 2)),
                                np.arange(3.0))
        assert "iterations j = 0 and j = 1" in error.message

    def test_a_shared_write_in_a_gradient_run(self, compiled):
        args = (0.0, np.zeros(2), np.array([1.0, 2.0]))
        expected = error_of(lambda: rlang.gradient(INTERP.loss, _copies(args), loss="l"))
        got = error_of(lambda: rlang.gradient(compiled.loss, _copies(args), loss="l"))
        assert "iterations must not share a write" in expected.message
        assert_same_error(got, expected)

    def test_gradients_shared_between_iterations_are_not_shared_writes(self, compiled):
        args = [0.0, np.zeros(3), np.array([1.5, -2.0, 0.5])]
        expected = rlang.gradient(INTERP.spread, _copies(args), loss="l")
        got = rlang.gradient(compiled.spread, _copies(args), loss="l")
        assert_same_gradients(got, expected)

    def test_loops_without_shared_writes_run_as_before(self, compiled):
        for name, args in (("disjoint", (np.zeros(3), np.array([1.0, 2.0, -3.0]))),
                           ("reads_in_call", (np.arange(3.0), np.array([1.0]))),
                           ("swaps", (np.arange(1.0, 3.0),))):
            if name in self.refused:
                with pytest.raises(BackendUnsupported):
                    getattr(compiled, name)(*_copies(args))
                continue
            expected = _copies(args)
            getattr(INTERP, name)(*expected)
            got = _copies(args)
            getattr(compiled, name)(*got)
            for g, e in zip(got, expected):
                np.testing.assert_array_equal(g, e)
            back = _copies(got)
            (~getattr(compiled, name))(*back)
            for b, a in zip(back, args):
                np.testing.assert_allclose(b, a)
