"""The pass that keeps a loop's stores into an array ancilla only for the elements
read after the loop (Note [Stores nobody reads], rlang/ir/unread_stores.py), on
functions lowered from source and passed through every IR pass: which stores it
makes conditional or drops and which it leaves; and, compiled, that the llvm
backend gives the interpreter's values and gradients for loops that run zero, one
or many times."""
from __future__ import annotations

import numpy as np
import pytest

import rlang
from rlang.ad.adjoint_ir import adjoint_module
from rlang.ad.derivatives import complete
from rlang.ir import nodes as ir
from rlang.ir.passes import run_passes
from rlang.ir.unread_stores import skip_unread_stores
from rlang.ir.walk import walk
from rlang.lower.statements import lower

from gradient_agreement import assert_same_gradients
from ir_builders import passed_from_source

# the recurrence of primal_speed.py, its read after the loop `read` (unchecked in
# logistic!; in shown!, bounds-checked, and s is shown in error frames)
RECURRENCE = """
function {name}(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1] * (1.0 - s[i - 1])
        end
    end
    {read}y! += s[n]
    ~@routine
end
"""

SOURCE = RECURRENCE.format(name="logistic!", read="@inbounds ") + \
    RECURRENCE.format(name="shown!", read="") + """

# two elements read after the loop, one of them twice
function ends!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1] - 0.5
        end
    end
    @inbounds y! += s[n] * s[n] + s[0]
    ~@routine
end

# a row of a matrix, its other row never written: the zeros are read, so the
# loop adds to memory rather than storing, and stays as it is
function row!(y!: f64, r: f64, s0: f64, n: i64, k: i64)
    @routine begin
        s ← zeros(f64, 2, n + 1)
        @inbounds s[k, 0] += s0
        @inbounds for i = 1:n
            s[k, i] += r * s[k, i - 1] - 0.5
        end
    end
    @inbounds y! += s[k, n] + s[1 - k, n]
    ~@routine
end

# a loop whose stores nobody reads after it: they go (x has n + 1 elements)
function unread!(y!: f64, r: f64, x: f64[:], n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds for i = 0:n
            s[i] += r * x[i]
        end
    end
    y! += r
    ~@routine
end

# the read index is written after the loop: the stores stay
function moved!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        j ← 0
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1]
        end
        j += n
    end
    @inbounds y! += s[j]
    ~@routine
end

# read in a loop after it: the stores stay
function summed!(y!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1]
        end
    end
    @inbounds for i = 0:n
        y! += s[i]
    end
    ~@routine
end
"""

F64 = ("f64", "f64", "f64", "i64")


def _passed(name: str, types: tuple, invcheck: bool = False) -> ir.Module:
    return passed_from_source(SOURCE, "unread_stores.rev", name, types, invcheck)


def _gradient_pass(name: str, types: tuple) -> ir.Module:
    unit = rlang.loads(SOURCE).unit
    return run_passes(complete(adjoint_module(lower(unit, name, types, True, False))))


def _stores(module: ir.Module, array: str) -> list:
    """(the store, the condition it runs under or None) for each update of an
    element of `array` in a loop, at any depth."""
    found = []

    def visit(body, condition, in_loop):
        for stmt in body:
            if isinstance(stmt, ir.Update) and isinstance(stmt.target, ir.ElemPlace) \
                    and stmt.target.var.name == array and in_loop:
                found.append((stmt, condition))
            elif isinstance(stmt, ir.If):
                for branch in stmt.branches:
                    visit(branch.body, branch.pre, in_loop)
            elif isinstance(stmt, (ir.For, ir.While)):
                visit(stmt.body, None, True)

    for fn in module.functions.values():
        visit(fn.body, None, False)
    return found


def _show(e) -> str:
    if isinstance(e, ir.Const):
        return str(e.value)
    if isinstance(e, ir.Read):
        return e.var.name
    if isinstance(e, (ir.Binary, ir.Compare, ir.Logic)):
        return f"({_show(e.left)} {e.op} {_show(e.right)})"
    raise AssertionError(e)


def test_the_gradient_pass_stores_the_start_values_gradient_alone():
    """The carried backward loop (Note [Gradients carried in registers]) stores
    s·grad[i - 1] only where it is s·grad[0], the one element read after it."""
    stores = _stores(_gradient_pass("logistic!", F64), "s·grad")
    assert [_show(condition) for _, condition in stores] == ["((i - 1) == 0)"]


def test_the_forward_stores_the_element_read_after_the_loop_alone():
    stores = _stores(_passed("logistic!", F64), "s")
    assert [_show(condition) for _, condition in stores] == ["(i == n)"]


def test_elements_read_twice_are_compared_once():
    stores = _stores(_passed("ends!", F64), "s")
    assert [_show(condition) for _, condition in stores] == \
        ["((i == n) || (i == 0))"]


def test_stores_nobody_reads_go():
    assert _stores(_passed("unread!", ("f64", "f64", ir.ArrayType("f64", 1), "i64")),
                   "s") == []


@pytest.mark.parametrize("name", ["shown!", "moved!", "summed!", "row!"])
def test_other_stores_are_left_as_they_are(name):
    stores = _stores(_passed(name, F64 + (("i64",) if name == "row!" else ())), "s")
    assert stores and all(condition is None for _, condition in stores)


def test_a_checked_free_keeps_the_stores():
    """With invcheck on, freeing s checks that it is zero again: every element is
    read."""
    module = _passed("logistic!", F64, invcheck=True)
    assert all(condition is None for _, condition in _stores(module, "s"))
    assert skip_unread_stores(module) is module


def test_a_module_without_such_stores_is_the_same_object():
    module = _passed("summed!", F64)
    assert skip_unread_stores(module) is module


# ----------------------------------------------------------------- compiled

@pytest.fixture(scope="module")
def programs():
    return {backend: rlang.loads(SOURCE, backend=backend, invcheck=False)
            for backend in ("interp", "llvm")}


def _args(name: str, n: int) -> list:
    if name == "row!":
        return [0.0, 0.75, 0.3, n, 1]
    if name == "unread!":
        return [0.0, 0.75, np.linspace(-1.0, 2.0, n + 1), n]
    return [0.0, 0.75, 0.3, n]


@pytest.mark.parametrize("name", ["logistic!", "shown!", "ends!", "unread!", "moved!",
                                  "summed!", "row!"])
@pytest.mark.parametrize("n", [0, 1, 2, 7, 300])
def test_the_compiled_functions_agree_with_the_interpreter(programs, name, n):
    want = programs["interp"][name](*_args(name, n))
    got = programs["llvm"][name](*_args(name, n))
    assert np.allclose(got[0], want[0], rtol=1e-12, atol=0.0)
    want = rlang.gradient(programs["interp"][name], _args(name, n), "y!")
    got = rlang.gradient(programs["llvm"][name], _args(name, n), "y!")
    assert_same_gradients(got, want, (name, n))
