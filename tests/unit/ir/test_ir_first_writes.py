"""The pass that finds array ancillas whose zeros nobody reads (Note [Arrays written
before they are read], rlang/ir/first_writes.py), on functions lowered from
source and passed through every IR pass: which allocations are marked
`written_first` and which updates become first writes (`onto_zero` with
`signed_zero`); and, compiled, that the llvm backend (which then does not zero
them) gives the interpreter's bits, for sizes where loops run once or not at all,
and for blocks of memory a call before left dirty."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ir import nodes as ir
from rlang.ir.first_writes import mark_first_writes
from rlang.ir.walk import walk

from ir_builders import passed_from_source

SOURCE = """
# Horner's rule for a block of points, as evals/llsq.rev does it
function horner!(y!: f64, x: f64[:], n: i64)
    @routine begin
        m ← length(x)
        t ← zeros(f64, 8)
        h ← zeros(f64, m, 8)
        @inbounds for l = 0:7
            t[l] += -1.0 + f64(min(l, n - 1)) * 0.25
            h[m - 1, l] += x[m - 1]
        end
        @inbounds for j = m - 2:-1:0
            for l = 0:7
                h[j, l] += x[j] + t[l] * h[j + 1, l]
            end
        end
    end
    @inbounds for l = 0:min(8, n) - 1
        y! += h[0, l] * h[0, l]
    end
    ~@routine
end

# a recurrence kept in an ancilla array
function recurrence!(y!: f64, r: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        s[0] += 0.5
        for i = 1:n
            s[i] += r * s[i - 1] * (1.0 - s[i - 1])
        end
    end
    y! += s[n]
    ~@routine
end

# GMM's triangle (evals/gmm.rev): rows c + 1 … d - 1 of column c, added to a block
# whose every element the loop before wrote
function triangle!(y!: f64, l: f64[:], d: i64)
    @routine begin
        q ← zeros(f64, d, 8)
        @inbounds for j = 0:d - 1
            for p = 0:7
                q[j, p] += l[j]
            end
        end
        @inbounds for c = 0:d - 2
            for r = c + 1:d - 1
                for p = 0:7
                    q[r, p] += l[c] * q[c, p]
                end
            end
        end
    end
    @inbounds y! += q[d - 1, 0] * q[d - 1, 7]
    ~@routine
end

# a triangle written first, below the diagonal only: q[1, 1] is read as a zero,
# though it lies in the box that holds every pass's rows and columns
function below_diagonal!(y!: f64, l: f64[:], d: i64)
    @routine begin
        q ← zeros(f64, 4, 4)
        @inbounds for c = 0:2
            for r = c + 1:3
                q[r, c] += l[c] + f64(d)
            end
        end
    end
    @inbounds y! += q[3, 0] + q[1, 1]
    ~@routine
end

# a temporary that reads a zero and is freed unread (unchecked with invcheck off),
# as a gradient pass's seeds of zero gradients are
function dead_temporary!(y!: f64, x: f64[:], n: i64)
    s ← zeros(f64, n + 1)
    @inbounds e ← s[0]
    @inbounds e → s[0]
    @inbounds for i = 0:n
        s[i] += x[i]
    end
    @inbounds y! += s[n]
    @inbounds for i = n:-1:0
        s[i] -= x[i]
    end
    s → zeros(f64, n + 1)
end

# reads an element before anything is written there: s[n] stays 0 for n > 0
function read_first!(y!: f64, x: f64[:], n: i64)
    s ← zeros(f64, n + 1)
    for i = 0:n - 1
        s[i] += x[i]
    end
    y! += s[n]
    for i = n - 1:-1:0
        s[i] -= x[i]
    end
    s → zeros(f64, n + 1)
end

# every pass adds into the same element
function same_element!(y!: f64, x: f64[:])
    s ← zeros(f64, 1)
    for i = 0:length(x) - 1
        s[0] += x[i]
    end
    y! += s[0]
    for i = length(x) - 1:-1:0
        s[0] -= x[i]
    end
    s → zeros(f64, 1)
end

# a write in a branch
function branch!(y!: f64, x: f64[:])
    s ← zeros(f64, 2)
    if x[0] > 0.0
        s[0] += x[0]
    end
    y! += s[0]
    if x[0] > 0.0
        s[0] -= x[0]
    end
    s → zeros(f64, 2)
end

function helper!(a: f64[:])
    a[0] += 1.0
end

# a call that takes the array
function called!(y!: f64, x: f64[:])
    s ← zeros(f64, 2)
    helper!(s)
    y! += s[0] * x[0]
    ~helper!(s)
    s → zeros(f64, 2)
end

# an element written before a loop that might write it again
function before_a_loop!(y!: f64, x: f64[:], n: i64)
    s ← zeros(f64, 8)
    s[5] += x[0]
    @inbounds for i = 0:n - 1
        s[i] += x[i]
    end
    @inbounds y! += s[5]
    @inbounds for i = n - 1:-1:0
        s[i] -= x[i]
    end
    s[5] -= x[0]
    s → zeros(f64, 8)
end
"""

VEC = ir.ArrayType("f64", 1, unit_stride=True)
FLOATS = ("f64", VEC, "i64")


def _passed(name: str, types: tuple, invcheck: bool) -> ir.Module:
    return passed_from_source(SOURCE, "first_writes.rev", name, types, invcheck)



def _function(module: ir.Module, name: str) -> ir.Function:
    return next(fn for fn in module.functions.values() if fn.name == name)


def _marked(name: str, types: tuple, invcheck: bool = False) -> dict:
    """{array ancilla: written_first} of the function `name` after the passes."""
    fn = _function(_passed(name, types, invcheck), name)
    return {s.var.name: s.written_first for s in walk(fn.body)
            if isinstance(s, ir.Alloc) and isinstance(s.var.type, ir.ArrayType)}


def test_horners_rule_and_its_points_need_no_zeros():
    assert _marked("horner!", FLOATS) == {"t": True, "h": True}


def test_the_first_write_of_each_element_adds_to_a_constant_zero_keeping_its_sign():
    fn = _function(_passed("horner!", FLOATS, False), "horner!")
    updates = [s for s in walk(fn.body) if isinstance(s, ir.Update) and
               s.target.var.name in ("t", "h")]
    assert updates and all(s.onto_zero and s.signed_zero for s in updates)


def test_a_recurrence_kept_in_an_array_needs_no_zeros():
    assert _marked("recurrence!", ("f64", "f64", "i64")) == {"s": True}


def test_a_triangle_over_a_block_written_first_needs_no_zeros():
    """The triangle's passes write rows c + 1 … d - 1, a box whose ends move with
    the column: its sweep over the columns is a box holding them all (not exact),
    and every element it adds to is one the first loop wrote."""
    assert _marked("triangle!", FLOATS) == {"q": True}


def test_a_triangle_written_first_keeps_the_zeros_read_above_it():
    assert _marked("below_diagonal!", FLOATS) == {"q": False}


def test_a_temporary_freed_unread_does_not_read_the_zeros():
    """With invcheck on, `e → s[0]` checks e against the zero: it is read."""
    assert _marked("dead_temporary!", FLOATS) == {"s": True}
    assert _marked("dead_temporary!", FLOATS, invcheck=True) == {"s": False}


def test_with_invcheck_on_the_deallocation_reads_every_element():
    """The uncomputation is kept, and the checked deallocation reads the whole
    array: both are covered once every element is written."""
    assert _marked("recurrence!", ("f64", "f64", "i64"), invcheck=True) == {"s": True}
    assert _marked("horner!", FLOATS, invcheck=True) == {"t": True, "h": True}


@pytest.mark.parametrize("name, types", [
    ("read_first!", FLOATS),
    ("same_element!", ("f64", VEC)),
    ("branch!", ("f64", VEC)),
    ("called!", ("f64", VEC)),
    ("before_a_loop!", FLOATS),
])
def test_zeros_someone_may_read_are_kept(name, types):
    for invcheck in (False, True):
        assert not any(_marked(name, types, invcheck).values())


def test_a_module_without_such_arrays_is_given_back_unchanged():
    module = _passed("branch!", ("f64", VEC), False)
    assert mark_first_writes(module) is module


# ----------------------------------------------------------------- compiled

@pytest.fixture(scope="module")
def programs():
    return {backend: {invcheck: rlang.loads(SOURCE, backend=backend, invcheck=invcheck)
                      for invcheck in (False, True)}
            for backend in ("interp", "llvm")}


@pytest.mark.parametrize("invcheck", [False, True])
@pytest.mark.parametrize("m, n", [(1, 1), (2, 1), (2, 3), (5, 8), (9, 20)])
def test_horner_agrees_with_the_interpreter(programs, invcheck, m, n):
    x = np.linspace(-0.7, 1.3, m)
    expected = programs["interp"][invcheck]["horner!"](0.0, x, n)[0]
    compiled = programs["llvm"][invcheck]["horner!"]
    for _ in range(3):          # memory a call before left dirty, with other values
        compiled(0.0, np.full(12, 1e6), 30)
        assert compiled(0.0, x, n)[0] == expected


@pytest.mark.parametrize("invcheck", [False, True])
@pytest.mark.parametrize("n", [0, 1, 2, 17])
def test_the_recurrence_agrees_with_the_interpreter(programs, invcheck, n):
    expected = programs["interp"][invcheck]["recurrence!"](0.0, 3.7, n)[0]
    for _ in range(3):
        assert programs["llvm"][invcheck]["recurrence!"](0.0, 3.7, n)[0] == expected


@pytest.mark.parametrize("invcheck", [False, True])
@pytest.mark.parametrize("name", ["triangle!", "below_diagonal!"])
@pytest.mark.parametrize("d", [1, 2, 5, 9])
def test_the_triangles_agree_with_the_interpreter(programs, invcheck, name, d):
    """With values of few bits, so that the uncomputation (invcheck on) is exact."""
    l = np.array([0.5, -0.25, 1.0, 0.75, -1.5, 0.125, 2.0, -0.5, 1.25])
    expected = programs["interp"][invcheck][name](0.0, l, d)[0]
    compiled = programs["llvm"][invcheck][name]
    for _ in range(3):          # memory a call before left dirty, with other values
        compiled(0.0, np.full(9, 3.0), 9)
        assert compiled(0.0, l, d)[0] == expected


def test_kept_blocks_given_back_dirty_are_taken_again():
    """Arrays of at least a megabyte go through the kept blocks (Note [Large
    ancillas kept between calls]): a block the recurrence leaves dirty is taken,
    unzeroed, by its next call, and zeroed by a function that reads its zeros."""
    program = programs_llvm = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    n = 200_000
    s = np.empty(n + 1)
    s[0] = 0.5
    for i in range(1, n + 1):
        s[i] = 3.7 * s[i - 1] * (1.0 - s[i - 1])
    for _ in range(3):
        assert program["recurrence!"](0.0, 3.7, n)[0] == s[n]
        x = np.ones(n)
        assert programs_llvm["read_first!"](0.0, x, n)[0] == 0.0


@pytest.mark.parametrize("invcheck", [False, True])
@pytest.mark.parametrize("name, args", [
    ("read_first!", lambda: (0.0, np.array([0.5, -1.5, 2.0]), 3)),
    ("same_element!", lambda: (0.0, np.array([0.5, -1.5, 2.0]))),
    ("branch!", lambda: (0.0, np.array([0.5, -1.5]))),
    ("branch!", lambda: (0.0, np.array([-0.5, -1.5]))),
    ("called!", lambda: (0.0, np.array([0.5, -1.5]))),
    ("before_a_loop!", lambda: (0.0, np.arange(1.0, 9.0), 4)),
    ("before_a_loop!", lambda: (0.0, np.arange(1.0, 9.0), 7)),
    ("dead_temporary!", lambda: (0.0, np.arange(1.0, 9.0), 7)),
])
def test_functions_whose_zeros_are_read_agree_with_the_interpreter(programs, invcheck,
                                                                   name, args):
    expected = programs["interp"][invcheck][name](*args())
    for _ in range(3):
        got = programs["llvm"][invcheck][name](*args())
        assert got[0] == expected[0]


def test_a_recurrences_gradient_through_kept_blocks_agrees(programs):
    """The gradient pass's s and s·grad (1.6 MB each) need no zeros either (the
    seed of s·grad[0]'s zero gradient is a temporary nobody reads); blocks the
    calls before left dirty are taken again."""
    n = 200_000
    interp = rlang.grad(programs["interp"][False]["recurrence!"], "y!", argnums=1)
    llvm = rlang.grad(programs["llvm"][False]["recurrence!"], "y!", argnums=1)
    expected = interp(0.0, 3.7, 50)
    for _ in range(3):
        assert llvm(0.0, 3.7, 50) == pytest.approx(expected, rel=1e-12)
        llvm(0.0, 3.7, n)
        assert llvm(0.0, 3.7, 50) == pytest.approx(expected, rel=1e-12)


def test_gradients_through_arrays_without_zeros_agree(programs):
    x = np.linspace(-0.7, 1.3, 6)
    expected = rlang.grad(programs["interp"][False]["horner!"], "y!", argnums=1)(0.0, x, 5)
    got = rlang.grad(programs["llvm"][False]["horner!"], "y!", argnums=1)(0.0, x, 5)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)
