"""The seed-guard pass (rlang/ir/guards.py, Note [Zero seeds]) and the
accumulate-only analysis (rlang/ir/outputs.py, Note [Gradients without the forward
run]).

- `selects_outside_gathers` turns the seed branches of the gradient pass into
  `Guarded` values (none where a seed times a finite constant is zero anyway), keeps
  the branches that hold what cannot be guarded and those in loops that scatter,
  or gather around a loop of their own, and leaves other `if`s alone; on IR built
  by hand and on the adjoint (rlang/ad/adjoint_ir.py) of small lowered programs;
- `accumulate_only` gives the parameters a function only adds to when every other
  one is only read, and None otherwise (or when it prints).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from rlang.ad.adjoint_ir import adjoint_module
from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.ir import nodes as ir
from rlang.ir.guards import (_carried_through_elements, seed_guards, selects_outside_gathers,
                              when_nonzero)
from rlang.ir.outputs import accumulate_only
from rlang.ir.walk import walk
from rlang.lower.statements import lower

from ir_builders import IVEC, VEC, add, body_of, f64, function, module_of, param, read, times


WORKLOADS = Path(__file__).resolve().parents[3] / "benchmarks" / "llvm" / "workloads.rev"

# ---------------------------------------------------------------- seed guards

def seed_program(inner):
    y, x, seed = param("y"), param("x"), ir.Var("seed", "f64")
    body = [ir.Alloc(seed, read(y))] + when_nonzero((read(seed),), inner(seed, x)) + \
        [ir.Dealloc(seed, None, None)]
    return module_of(function(body, [y, x])), seed, x


def test_a_seed_branch_becomes_guarded_updates():
    module, seed, x = seed_program(lambda s, x: [add(x, times(read(s), read(x)))])
    assert seed_guards(body_of(module)[1]) == (read(seed),)
    new = body_of(selects_outside_gathers(module))
    assert [type(s).__name__ for s in new] == ["Alloc", "Update", "Dealloc"]
    assert new[1].value == ir.Guarded((read(seed),), times(read(seed), read(x)))


def test_a_seed_scaled_by_a_finite_constant_needs_no_guard():
    module, seed, x = seed_program(lambda s, x: [add(x, times(read(s), f64(3.0))),
                                                 add(x, ir.Unary("-", read(s), "f64"))])
    new = body_of(selects_outside_gathers(module))
    assert [s.value for s in new[1:3]] == [times(read(seed), f64(3.0)),
                                           ir.Unary("-", read(seed), "f64")]
    inf = body_of(selects_outside_gathers(
        seed_program(lambda s, x: [add(x, times(read(s), f64(float("inf"))))])[0]))
    assert isinstance(inf[1].value, ir.Guarded)


def test_a_branch_holding_what_cannot_be_guarded_stays_a_branch():
    module, _, _ = seed_program(lambda s, x: [ir.Print("print", (("s", read(s)),), 0)])
    module.sites.append(ir.Site("print", None, "f", False))
    assert selects_outside_gathers(module) is module


def test_ifs_that_are_not_seed_branches_are_left_alone():
    y, c = param("y"), param("c", "bool")
    checked = ir.If((ir.Branch(ir.Nonzero((read(y),)), None, (add(y, f64(1.0)),)),), (), 0)
    other = ir.If((ir.Branch(read(c), None, (add(y, f64(1.0)),)),), (), None)
    assert seed_guards(checked) is None and seed_guards(other) is None
    module = module_of(function([checked, other], [y, c]),
                       sites=[ir.Site("if", None, "f", False)])
    assert selects_outside_gathers(module) is module


GRADIENTS = """
function sumsq!(s!: f64, x: f64[:])
    for i = 0:length(x) - 1
        s! += x[i] * x[i]
    end
end

function gathered!(s!: f64, idx: i64[:], x: f64[:])
    for i = 0:length(idx) - 1
        s! += x[idx[i]] * x[idx[i]]
    end
end

# y![i] from y![i - 1] in place: its inverse restores them in order, so the gradient
# pass's passes wait on each other
function recurrence!(y!: f64[:], x: f64[:])
    for i = length(y!) - 1:-1:1
        y![i] += x[i] * y![i - 1]
    end
end

# the same offsets in different arrays, and an element of a row moving with i in
# one position only: no pass reads what another wrote
function apart!(y!: f64[:], z!: f64[:, :], x: f64[:], w: f64[:])
    for i = 1:length(x) - 1
        y![i] += x[i] * w[i - 1]
        z![i, 0] += x[i] * x[i]
    end
end
"""


def gradient_pass(name, types, source=GRADIENTS, path="gradients.rev"):
    unit = loads_unit(textwrap.dedent(source), path)
    check(unit)
    return adjoint_module(lower(unit, name, types, True, False))


def guarded_updates(module) -> int:
    return sum(isinstance(s, ir.Update) and isinstance(s.value, ir.Guarded)
               for fn in module.functions.values() for s in walk(fn.body))


def seed_branches(module) -> int:
    return sum(seed_guards(s) is not None for fn in module.functions.values()
               for s in walk(fn.body))


def test_seed_branches_in_plain_loops_become_selects():
    module = gradient_pass("sumsq!", ("f64", VEC))
    assert (seed_branches(module), guarded_updates(module)) == (1, 0)
    new = selects_outside_gathers(module)
    # x[i]·x[i]: one update (Note [Elements read more than once], rlang/ad/adjoint_ir.py)
    assert (seed_branches(new), guarded_updates(new)) == (0, 1)


def test_seed_branches_in_gather_loops_stay_branches():
    module = gradient_pass("gathered!", ("f64", IVEC, VEC))
    assert seed_branches(module) == 1
    assert selects_outside_gathers(module) is module


NESTED = """
# the pass gathers y!·grad[idx[i]] around the loop over k (and, @inbounds, does
# not restore y!, which nobody reads)
function nested!(y!: f64[:], z!: f64[:, :], idx: i64[:], x: f64[:])
    @inbounds for i = 0:length(x) - 1
        y![idx[i]] += x[i] * x[i]
        for k = 0:size(z!, 1) - 1
            z![i, k] += x[i] * x[i]
        end
    end
end
"""


def pass_before_guards(source: str, name: str, types: tuple, path: str):
    """The gradient pass of `name` as the guard pass meets it (the restoration
    nobody reads left out, known zeros and dead code dropped)."""
    from rlang.ad.derivatives import complete
    from rlang.backends.llvm.backend import build_derivative
    from rlang.ir.passes import PASSES, run_passes

    unit = loads_unit(textwrap.dedent(source), path)
    check(unit)
    module, _ = build_derivative(unit, name, types, False, False, "grad")
    return run_passes(complete(module), tuple(p for p in PASSES[:2]))


def loop_branches(module, var_name: str) -> tuple:
    """(seed branches, guarded updates) in the bodies of the loops over `var_name`
    (not in loops nested in them)."""
    loops = [s for fn in module.functions.values() for s in walk(fn.body)
             if isinstance(s, ir.For) and s.var.name == var_name]
    assert loops
    flat = [s for loop in loops for s in loop.body if not isinstance(s, ir.For)]
    inner = [s for stmt in flat for s in walk((stmt,))]
    return (sum(seed_guards(s) is not None for s in inner),
            sum(isinstance(s, ir.Update) and isinstance(s.value, ir.Guarded) for s in inner))


def test_a_loop_that_gathers_alone_gets_selects():
    """The CSC pullback's inner loop reads y!·grad[rowval[p]] and writes no element
    at a loaded index (y! is not restored): LLVM vectorises it, so its seed branch
    becomes selects."""
    module = pass_before_guards(WORKLOADS.read_text(), "csc_matvec!",
                                (VEC, IVEC, IVEC, VEC, VEC), str(WORKLOADS))
    assert loop_branches(module, "p") == (1, 0)
    assert loop_branches(selects_outside_gathers(module), "p") == (0, 2)


def test_a_loop_that_gathers_around_a_loop_keeps_its_branch():
    module = pass_before_guards(NESTED, "nested!", (VEC, ir.ArrayType("f64", 2), IVEC, VEC),
                                "nested.rev")
    assert loop_branches(module, "i")[0] == 1
    assert loop_branches(selects_outside_gathers(module), "i") == (1, 0)
    # its inner loop, which neither gathers nor scatters, has selects
    assert loop_branches(selects_outside_gathers(module), "k") == (0, 1)


def test_seed_branches_in_loops_carried_through_elements_stay_branches():
    """Note [Seed branches in serial loops]: the recurrence's gradient pass restores
    y![i] from y![i - 1] and adds into y!·grad[i - 1] from y!·grad[i] (i going
    up, so its seeds are read before they are added to).  In the ancilla-array
    recurrence of benchmarks/llvm/workloads.rev the seed s·grad[i] is the element
    the pass before added to (i going down), and its branch becomes selects."""
    module = gradient_pass("recurrence!", (VEC, VEC))
    assert seed_branches(module) == 1
    assert selects_outside_gathers(module) is module
    logistic = gradient_pass("logistic!", ("f64", "f64", "f64", "i64"),
                             WORKLOADS.read_text(), str(WORKLOADS))
    symbol = logistic.entry
    down = [s for s in body_of(logistic, symbol) if isinstance(s, ir.For) and
            s.start != ir.Const(1, "i64")]          # the loop i = n:-1:1
    assert len(down) == 1 and seed_branches(module_of(function(down[0].body, []))) == 1
    new = [s for s in body_of(selects_outside_gathers(logistic), symbol)
           if isinstance(s, ir.For) and s.start == down[0].start]
    assert seed_branches(module_of(function(new[0].body, []))) == 0
    assert guarded_updates(module_of(function(new[0].body, []))) > 0
    apart = gradient_pass("apart!", (VEC, ir.ArrayType("f64", 2), VEC, VEC))
    assert seed_branches(apart) == 2
    new = selects_outside_gathers(apart)
    assert seed_branches(new) == 0 and guarded_updates(new) > 0


def _loop_of(body) -> ir.For:
    i = ir.Var("i", "i64")
    return ir.For(i, ir.Const(0, "i64"), ir.Const(1, "i64"), ir.Const(9, "i64"),
                  tuple(body(i)), None, 0)


def _at(i, k) -> ir.Binary:
    return ir.Binary("+", read(i), ir.Const(k, "i64"), "i64")


@pytest.mark.parametrize("written, read_at, carried", [
    (0, -1, True),      # writes a[i], reads a[i - 1]
    (0, 3, True),       # writes a[i], reads a[i + 3]
    (0, 0, False),      # the same element in each pass
    (2, 2, False),
])
def test_carried_elements_are_other_offsets_of_the_loop_index(written, read_at, carried):
    a = param("a", VEC)
    loop = _loop_of(lambda i: [ir.Update(ir.ElemPlace(a, (_at(i, written),), None), "+=",
                                         ir.Load(a, (_at(i, read_at),), None))])
    assert _carried_through_elements(loop) is carried


@pytest.mark.parametrize("seed_at, carried", [
    (0, True),          # the seed a[i] is read before the pass adds into a[i - 1]
    (-1, False),        # the seed a[i - 1]: what the pass before (i going up) added
    #                     into a[i]
    (None, False),      # the seed a[0]: one element every pass adds into
])
def test_a_seed_an_earlier_pass_wrote_keeps_the_selects(seed_at, carried):
    """The passes wait on each other through b (b[i] from b[i - 1]); the seed
    branch keeps its branch unless its seed is what an earlier pass wrote."""
    a, b, seed = param("a", VEC), param("b", VEC), ir.Var("seed", "f64")

    def body(i):
        index = ir.Const(0, "i64") if seed_at is None else _at(i, seed_at)
        target = ir.Const(0, "i64") if seed_at is None else _at(i, -1 - seed_at)
        return [ir.Update(ir.ElemPlace(b, (_at(i, 0),), None), "+=",
                          ir.Load(b, (_at(i, -1),), None)),
                ir.Alloc(seed, ir.Load(a, (index,), None)),
                *when_nonzero((read(seed),), [
                    ir.Update(ir.ElemPlace(a, (target,), None), "+=", read(seed))]),
                ir.Dealloc(seed, None, None)]
    assert _carried_through_elements(_loop_of(body)) is carried


def test_an_index_the_loop_writes_is_no_evidence_of_a_carried_element():
    a, j = param("a", VEC), ir.Var("j", "i64")
    loop = _loop_of(lambda i: [
        ir.Update(ir.ElemPlace(a, (_at(i, 0),), None), "+=", ir.Load(a, (read(j),), None)),
        ir.Update(ir.VarPlace(j), "+=", ir.Const(1, "i64"))])
    assert _carried_through_elements(loop) is False


# ------------------------------------------------------------ accumulate_only

OUTPUTS = """
function loss(err!, x: f64[:])
    for i = 0:length(x) - 1
        err! += x[i] * x[i]
    end
end

function outer(err!, x: f64[:])
    loss(err!, x)
end

function unused(err!, x, spare)
    err! -= x
end

function reads_only(x)
    t ← x
    t → x
end

function read_and_added(a!, b!)
    a! += b!
    b! += 1.0
end

function swapped(a!, b!)
    SWAP(a!, b!)
end

function loud(err!, x)
    err! += x
    @safe print("x", x)
end
"""


@pytest.mark.parametrize("name, types, expected", [
    ("loss", ("f64", VEC), frozenset({0})),
    ("outer", ("f64", VEC), frozenset({0})),            # through a call
    ("unused", ("f64", "f64", "f64"), frozenset({0})),
    ("reads_only", ("f64",), frozenset()),
    ("read_and_added", ("f64", "f64"), None),            # b! is read and added to
    ("swapped", ("f64", "f64"), None),
    ("loud", ("f64", "f64"), None),                     # output would be missing
])
def test_accumulate_only_finds_the_parameters_only_added_to(name, types, expected):
    unit = loads_unit(textwrap.dedent(OUTPUTS), "outputs.rev")
    check(unit)
    assert accumulate_only(lower(unit, name, types, False, False)) == expected
