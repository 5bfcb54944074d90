"""The pass that sums a loop's conditional updates of one element in a scalar
(Note [Invariant sums in registers], rlang/ir/invariant_sums.py), on IR built from
the dataclasses of rlang/ir/nodes.py: what it sums (a chain-rule update under an
`if`, at an index the loop does not move, of an array the loop mentions nowhere
else), how (a zero scalar before the loop, its add after it only where it is not
zero), what it refuses and why, and loops that nest."""
from __future__ import annotations

from rlang.ir import nodes as ir
from rlang.ir.guards import seed_guards, when_nonzero
from rlang.ir.invariant_sums import sum_invariant_updates

from ir_builders import IVEC, VEC, f64, function, module_of, param, read, times

N, J = param("n", "i64"), param("j", "i64")
X, Y, IDX = param("x", VEC), param("y", VEC), param("idx", IVEC)
P = ir.Var("p", "i64")
SEED = ir.Var("seed", "f64")
GRAD = ir.Var("x·grad", VEC)


def elem(var, *indices, site=None):
    return ir.ElemPlace(var, tuple(indices), site)


def load(var, *indices):
    return ir.Load(var, tuple(indices), None)


def update(place, value, op="+=", reassociable=True):
    return ir.Update(place, op, value, reassociable=reassociable)


def loop(body, var=P, **fields):
    return ir.For(var, ir.Const(0, "i64"), ir.Const(1, "i64"),
                  ir.Binary("-", read(N), ir.Const(1, "i64"), "i64"), tuple(body), None, 0,
                  **fields)


def seeded(*stmts):
    """`seed ← y[idx[p]]`, the statements under `if seed ≠ 0`, `seed → …`."""
    return [ir.Alloc(SEED, load(Y, load(IDX, read(P))))] + \
        when_nonzero((read(SEED),), list(stmts)) + [ir.Dealloc(SEED, None, None)]


def term():
    return times(read(SEED), load(X, read(P)))


def run(body):
    module = module_of(function(body, (N, J, X, Y, IDX)))
    return sum_invariant_updates(module), module


def body_after(body) -> tuple:
    new, _ = run(body)
    return new.functions["f"].body


def unchanged(body) -> bool:
    new, old = run(body)
    return new is old


def test_a_conditional_update_of_one_element_is_summed_in_a_scalar():
    at_j = elem(GRAD, read(J))
    new = body_after([loop(seeded(update(at_j, term())))])
    alloc, summed, final, free = new
    t = alloc.var
    assert (t.type, alloc.value) == ("f64", f64(0.0)) and "·" in t.name
    inner = summed.body[1]                  # the seed branch, updating the scalar now
    assert seed_guards(inner) == (read(SEED),)
    assert inner.branches[0].body == (update(ir.VarPlace(t), term()),)
    # the sum reaches the element only where it is not zero (Nonzero: NaN too)
    assert final.branches[0].pre == ir.Nonzero((read(t),))
    assert final.branches[0].body == (update(at_j, read(t)),)
    assert isinstance(free, ir.Dealloc) and free.var is t


def test_subtractions_are_summed_too():
    new = body_after([loop(seeded(update(elem(GRAD, read(J)), term(), "-=")))])
    assert new[1].body[1].branches[0].body[0].op == "-="
    assert new[2].branches[0].body[0].op == "+="


def test_an_update_every_pass_runs_is_left_to_llvm():
    assert unchanged([loop([update(elem(GRAD, read(J)), load(X, read(P)))])])


def test_indices_the_loop_moves_or_loads_are_not_one_element():
    moved = ir.Var("k", "i64")
    assert unchanged([loop(seeded(update(elem(GRAD, read(P)), term())))])
    assert unchanged([loop(seeded(update(elem(GRAD, load(IDX, read(J))), term())))])
    assert unchanged([loop([ir.Alloc(moved, read(P))] +
                           seeded(update(elem(GRAD, read(moved)), term())) +
                           [ir.Dealloc(moved, read(P), None)])])


def test_an_array_mentioned_elsewhere_in_the_loop_is_left():
    at_j = elem(GRAD, read(J))
    read_too = update(elem(Y, read(P)), load(GRAD, read(J)))
    assert unchanged([loop(seeded(update(at_j, term()), read_too))])
    two_places = update(elem(GRAD, ir.Const(0, "i64")), term())
    assert unchanged([loop(seeded(update(at_j, term()), two_places))])
    in_order = update(at_j, f64(1.0), reassociable=False)
    assert unchanged([loop(seeded(update(at_j, term())) + [in_order])])


def test_unconditional_sums_of_the_same_element_join_the_scalar():
    at_j = elem(GRAD, read(J))
    new = body_after([loop(seeded(update(at_j, term())) + [update(at_j, f64(1.0))])])
    t = new[0].var
    assert new[1].body[-1] == update(ir.VarPlace(t), f64(1.0))


def test_an_update_reading_its_own_array_is_left():
    at_j = elem(GRAD, read(J))
    assert unchanged([loop(seeded(update(at_j, times(read(SEED), load(GRAD, read(J))))))])


def test_sums_the_program_asked_for_in_order_are_left():
    """Only chain-rule sums may be grouped differently (rounding)."""
    assert unchanged([loop(seeded(update(elem(GRAD, read(J)), term(),
                                         reassociable=False)))])


def test_checked_and_parallel_places_are_left():
    assert unchanged([loop(seeded(update(elem(GRAD, read(J), site=0), term())))])
    assert unchanged([loop(seeded(update(elem(GRAD, read(J)), term())), parallel=True)])


def test_only_the_summable_array_moves_to_a_scalar():
    new = body_after([loop(seeded(update(elem(GRAD, read(J)), term()),
                                  update(elem(Y, read(P)), term())))])
    branch = new[1].body[1].branches[0].body
    assert isinstance(branch[0].target, ir.VarPlace)
    assert branch[1].target == elem(Y, read(P))


def test_nested_loops_sum_at_each_level():
    """The inner loop's final add is a conditional update of the outer loop."""
    q = ir.Var("q", "i64")
    inner = loop(seeded(update(elem(GRAD, read(J)), term())))
    new = body_after([loop([inner], var=q)])
    outer_alloc, outer, outer_final, _ = new
    assert isinstance(outer_alloc, ir.Alloc) and isinstance(outer, ir.For)
    inner_alloc, _, inner_final, _ = outer.body
    assert inner_final.branches[0].body[0].target == ir.VarPlace(outer_alloc.var)
    assert outer_final.branches[0].body[0].target == elem(GRAD, read(J))
    assert inner_alloc.var is not outer_alloc.var


def test_an_index_written_by_an_outer_loop_is_invariant_in_the_inner_one():
    q = ir.Var("q", "i64")
    inner = loop(seeded(update(elem(GRAD, read(q)), term())))
    new = body_after([loop([inner], var=q)])
    assert len(new) == 1                    # q moves in the outer loop: summed once
    alloc, summed, final, free = new[0].body
    assert final.branches[0].body[0].target == elem(GRAD, read(q))
