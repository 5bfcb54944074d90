"""The pass that carries a recurrence kept in an array from pass to pass in a scalar
(Note [Recurrences carried in registers], rlang/ir/carried_values.py), on
functions lowered from source and passed through every IR pass: which loops it
rewrites and which it leaves; and, compiled, that the llvm backend gives the
interpreter's bits, zeros of either sign, infinities and NaNs included, for loops
that run zero, one or many times."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ad.adjoint_ir import adjoint_module
from rlang.ad.derivatives import complete
from rlang.ir import nodes as ir
from rlang.ir.carried_values import carry_recurrences
from rlang.ir.passes import run_passes
from rlang.ir.walk import walk
from rlang.lower.statements import lower

from gradient_agreement import assert_same_gradients
from ir_builders import passed_from_source

SOURCE = """
# NiLang's recurrence in an ancilla array
function logistic!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1] * (1.0 - s[i - 1]) + -s[i - 1] * 0.5
        end
    end
    y! += s[n]
    ~@routine
end

# the same going down, in one row of a matrix
function down!(y!: f64, r: f64, s0: f64, n: i64, k: i64)
    @routine begin
        s ← zeros(f64, 3, n + 1)
        @inbounds s[k, n] += s0
        @inbounds for i = n - 1:-1:0
            s[k, i] += r * s[k, i + 1] - s[k, i + 1] * s[k, i + 1]
        end
    end
    y! += s[k, 0]
    ~@routine
end

# a division of the carried element: not carried (1 / -0.0 is -inf)
function divided!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r / (1.0 + s[i - 1])
        end
    end
    y! += s[n]
    ~@routine
end

# a read that is bounds-checked: not carried (the check would be lost)
function checked!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        for i = 1:n
            s[i] += r * s[i - 1] * (1.0 - s[i - 1])
        end
    end
    y! += s[n]
    ~@routine
end

# a second statement in the body: not carried
function two!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        t ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1] * (1.0 - s[i - 1])
            t[i] += s[i - 1]
        end
    end
    y! += s[n] + t[n]
    ~@routine
end

# an element two passes back: not carried
function skip!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 2)
        @inbounds s[0] += s0
        @inbounds s[1] += s0
        @inbounds for i = 2:n + 1
            s[i] += r * s[i - 2]
        end
    end
    y! += s[n + 1]
    ~@routine
end
"""

F64 = ("f64", "f64", "f64", "i64")


def _passed(name: str, types: tuple, invcheck: bool = False) -> ir.Module:
    return passed_from_source(SOURCE, "carried_values.rev", name, types, invcheck)


def _carried(module: ir.Module) -> list:
    """The names of the scalars the pass carries values in."""
    return [s.var.name for fn in module.functions.values() for s in walk(fn.body)
            if isinstance(s, ir.Alloc) and s.var.name.endswith("·carried")]


def test_the_recurrences_are_carried():
    assert _carried(_passed("logistic!", F64)) == ["s·carried"]
    assert _carried(_passed("down!", F64 + ("i64",))) == ["s·carried"]


def test_an_update_with_alias_checks_is_left_as_it_is():
    """With invcheck on, `s[i] += … s[i - 1] …` checks that i - 1 is not i: the
    update keeps its loads, and the checks with them."""
    module = _passed("logistic!", F64, invcheck=True)
    assert _carried(module) == [] and carry_recurrences(module) is module


@pytest.mark.parametrize("name", ["divided!", "checked!", "two!", "skip!"])
def test_other_loops_are_left_as_they_are(name):
    module = _passed(name, F64)
    assert _carried(module) == []
    assert carry_recurrences(module) is module


def test_the_loop_carries_its_value_through_a_swap():
    body = next(s for fn in _passed("logistic!", F64).functions.values()
                for s in walk(fn.body) if isinstance(s, ir.For)).body
    assert [type(s).__name__ for s in body] == ["Alloc", "Update", "Instr", "Dealloc"]
    alloc, update, swap, free = body
    assert update.signed_zero and update.value == ir.Read(alloc.var)
    assert swap.name == "SWAP" and free.site is None
    assert not any(isinstance(e, ir.Load) for e in _subexpressions(alloc.value))


def _gradient_pass(name: str, types: tuple) -> ir.Module:
    unit = rlang.loads(SOURCE).unit
    return run_passes(complete(adjoint_module(lower(unit, name, types, True, False))))


def test_the_gradient_pass_carries_its_recomputation():
    """The gradient pass recomputes s with every node in a temporary (the chain rule
    of its known-zero seeds dropped): the temporaries are put back into the update
    and the loop is carried; a checked read in a temporary keeps the loop as it is.
    Its backward loop stores s's gradient onto zeros, and carries it (Note
    [Gradients carried in registers]) whatever the operations (divided!), but not
    past a second array update (two!), an element two passes back (skip!) or the
    branches of checked reads (checked!)."""
    assert _carried(_gradient_pass("logistic!", F64)) == ["s·carried", "s·grad·carried"]
    assert _carried(_gradient_pass("down!", F64 + ("i64",))) == \
        ["s·carried", "s·grad·carried"]
    assert _carried(_gradient_pass("divided!", F64)) == ["s·grad·carried"]
    for name in ("checked!", "two!", "skip!"):
        assert _carried(_gradient_pass(name, F64)) == []


def _subexpressions(e):
    yield e
    for x in ir.operands(e):
        yield from _subexpressions(x)


# ----------------------------------------------------------------- compiled

@pytest.fixture(scope="module")
def programs():
    return {backend: rlang.loads(SOURCE, backend=backend, invcheck=False)
            for backend in ("interp", "llvm")}


VALUES = [0.0, -0.0, 0.3, -1.5, np.inf, -np.inf, np.nan]


def _bits(x: float) -> bytes:
    """x's bits; any NaN as one (which NaN an add of two NaNs gives is the order
    of its operands, which LLVM may swap: LANGUAGE.md promises none)."""
    return b"nan" if x != x else np.float64(x).tobytes()


@pytest.mark.parametrize("name", ["logistic!", "divided!", "checked!", "two!", "skip!"])
@pytest.mark.parametrize("n", [0, 1, 2, 7])
def test_the_compiled_recurrences_give_the_interpreters_bits(programs, name, n):
    for r in (2.5, -2.5, 0.0, -0.0, np.inf):
        for s0 in VALUES:
            expected = programs["interp"][name](0.0, r, s0, n)[0]
            assert _bits(programs["llvm"][name](0.0, r, s0, n)[0]) == _bits(expected), \
                (name, r, s0, n)


@pytest.mark.parametrize("n", [0, 1, 2, 7])
@pytest.mark.parametrize("k", [0, 2])
def test_the_compiled_recurrence_going_down_gives_the_interpreters_bits(programs, n, k):
    for r in (2.5, -2.5, 0.0, -0.0):
        for s0 in VALUES:
            expected = programs["interp"]["down!"](0.0, r, s0, n, k)[0]
            got = programs["llvm"]["down!"](0.0, r, s0, n, k)[0]
            assert _bits(got) == _bits(expected), (r, s0, n, k)


@pytest.mark.parametrize("n", [0, 1, 7, 300])
def test_the_compiled_gradients_agree_with_the_interpreters(programs, n):
    for name in ("logistic!", "divided!", "checked!"):
        for r, s0 in ((2.5, 0.3), (-1.5, 0.25), (0.5, -0.0)):
            want = rlang.gradient(programs["interp"][name], [0.0, r, s0, n], "y!")
            got = rlang.gradient(programs["llvm"][name], [0.0, r, s0, n], "y!")
            assert_same_gradients(got, want, (name, r, s0, n))


def test_a_negative_zero_in_the_chain_is_stored_as_the_interpreter_stores_it(programs):
    """r = -2.5 and s0 = 0.0: the first pass computes -0.0, stored +0.0, and the
    carried -0.0 gives the next pass +0.0 or -0.0, stored +0.0 either way."""
    for n in (1, 2, 3):
        got = programs["llvm"]["logistic!"](-0.0, -2.5, 0.0, n)[0]
        assert _bits(got) == _bits(0.0) == _bits(programs["interp"]["logistic!"](
            -0.0, -2.5, 0.0, n)[0])
