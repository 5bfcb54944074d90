"""The IR passes (rlang/ir/zeros.py, rlang/ir/prune.py, rlang/ir/passes.py), on IR
built from the dataclasses of rlang/ir/nodes.py.

- `drop_zero_updates` (Note [Known zeros]) drops `+=`/`-=` of values known zero and
  seed branches whose seeds are known zero, keeps what can fail a check, and follows
  writes through loops and branches;
- `prune_module` (Note [Dead uncomputation]) drops quiet statements whose only effect
  is on ancillas freed unchecked, and keeps checks, output, loops that might not
  end, calls that are not quiet and whatever a parameter or `main`'s store sees;
- `run_passes` runs `PASSES` ("zeros", "prune", "guards", "invariant sums", "onto
  zeros", "first writes", "carried values") in that order, each on the previous
  one's result (the last three are tested in test_ir_onto_zeros.py,
  test_ir_first_writes.py and test_ir_carried_values.py).

A pass returns the module itself when it changes nothing.  The seed-guard pass and
the accumulate-only analysis are tested in test_ir_guards_and_outputs.py.
"""
from __future__ import annotations

import pytest

from rlang.ir import nodes as ir
from rlang.ir.carried_values import carry_recurrences
from rlang.ir.first_writes import mark_first_writes
from rlang.ir.guards import selects_outside_gathers, when_nonzero
from rlang.ir.invariant_sums import sum_invariant_updates
from rlang.ir.onto_zeros import mark_updates_onto_zeros
from rlang.ir.passes import PASSES, Pass, run_passes
from rlang.ir.prune import prune_module
from rlang.ir.unread_stores import skip_unread_stores
from rlang.ir.zeros import drop_zero_updates

from ir_builders import (IVEC, VEC, a_site, add, body_of, count, f64, function, module_of,
                         param, read, times)


# ---------------------------------------------------------------- known zeros

def test_adding_a_zero_constant_is_dropped():
    y = param("y·grad")
    keep = add(y, f64(1.5))
    module = module_of(function([add(y, f64(0.0)), add(y, ir.Unary("-", f64(0.0), "f64"), "-="),
                                 keep], [y]))
    assert body_of(drop_zero_updates(module)) == (keep,)


def test_a_zero_added_to_a_value_of_the_program_is_dropped_only_where_exact():
    """x + 0.0 is +0.0 for x = -0.0 (IEEE), so `y += 0.0` stays on the program's own
    values; `y -= 0.0` and `y += -0.0` leave every y as it was (a derivative's own
    variables, named with `·`, drop them all: only the sign of a zero gradient can
    differ)."""
    y = param("y")
    kept = add(y, f64(0.0))
    module = module_of(function([kept, add(y, f64(0.0), "-="), add(y, f64(-0.0))], [y]))
    assert body_of(drop_zero_updates(module)) == (kept,)


def test_nothing_known_zero_gives_back_the_same_module():
    y, x = param("y·grad"), param("x")
    module = module_of(function([add(y, read(x)), add(y, f64(2.0))], [y, x]))
    assert drop_zero_updates(module) is module


def test_only_changed_functions_are_rebuilt():
    y = param("y·grad")
    plain = function([add(y, f64(1.0))], [y], symbol="g")
    zeroed = function([add(y, f64(0.0))], [y], symbol="f")
    module = module_of(zeroed, plain)
    new = drop_zero_updates(module)
    assert new is not module and new.sites is module.sites and new.entry == "f"
    assert new.functions["g"] is plain and body_of(new) == ()
    assert module.functions["f"].body == zeroed.body        # the input is not changed


def test_reads_of_a_zero_ancilla_are_zero_until_it_is_written():
    y, x, g = param("y·grad"), param("x"), ir.Var("g", "f64")
    later = add(y, read(g))
    body = [ir.Alloc(g, f64(0.0)),
            add(y, read(g)),                    # dropped: g is 0
            add(y, times(read(g), f64(0.5))),   # a zero seed scaled by a constant
            add(y, ir.Unary("-", read(g), "f64"), "-="),
            add(g, read(x)),                    # now g is unknown
            later,
            ir.Dealloc(g, None, None)]
    new = body_of(drop_zero_updates(module_of(function(body, [y, x]))))
    assert new == (body[0], body[4], later, body[6])


def test_a_product_with_an_unknown_factor_is_not_zero():
    y, x, g = param("y·grad"), param("x"), ir.Var("g", "f64")
    kept = add(y, times(read(g), read(x)))      # x may be infinite: 0 * inf is nan
    body = [ir.Alloc(g, f64(0.0)), kept, ir.Dealloc(g, None, None)]
    module = module_of(function(body, [y, x]))
    assert drop_zero_updates(module) is module


def test_integer_zeros_are_not_dropped():
    n = param("n", "i64")
    module = module_of(function([add(n, ir.Const(0, "i64"))], [n]))
    assert drop_zero_updates(module) is module


def test_an_update_that_can_fail_a_check_is_kept():
    a, y = param("a", VEC), param("y·grad")
    module = module_of(function([], [a, y]))
    place = ir.ElemPlace(a, (ir.Const(7, "i64"),), a_site(module, "bounds"))
    module.functions["f"] = function([ir.Update(place, "+=", f64(0.0)),
                                      add(y, f64(0.0))], [a, y])
    assert body_of(drop_zero_updates(module)) == (ir.Update(place, "+=", f64(0.0)),)


def test_a_zeros_array_reads_zero_but_an_integer_one_does_not_count():
    y, n = param("y·grad"), param("n", "i64")
    z = ir.Var("z", VEC)
    k = ir.Var("k", IVEC)
    zero_elem = ir.Load(z, (ir.Const(0, "i64"),), None)
    body = [ir.Alloc(z, None, (read(n),)), ir.Alloc(k, None, (read(n),)),
            add(y, zero_elem),
            ir.Update(ir.ElemPlace(k, (ir.Const(0, "i64"),), None), "+=", ir.Const(0, "i64")),
            ir.Dealloc(k, None, None), ir.Dealloc(z, None, None)]
    new = body_of(drop_zero_updates(module_of(function(body, [y, n]))))
    assert [type(s).__name__ for s in new] == ["Alloc", "Alloc", "Update", "Dealloc", "Dealloc"]
    assert new[2].target.var is k


def test_guarded_products_and_seed_branches_of_zero_seeds_are_dropped():
    y, x, seed, other = param("y·grad"), param("x"), ir.Var("seed", "f64"), param("o")
    guarded = add(y, ir.Guarded((read(seed),), times(read(seed), read(x))))
    live_guard = add(y, ir.Guarded((read(other),), times(read(other), read(x))))
    (branch,) = when_nonzero((read(seed),), [add(x, times(read(seed), read(y)))])
    body = [ir.Alloc(seed, f64(0.0)), guarded, branch, live_guard, ir.Dealloc(seed, None, None)]
    new = body_of(drop_zero_updates(module_of(function(body, [y, x, other]))))
    assert new == (body[0], live_guard, body[4])


def test_a_loop_body_starts_from_what_every_pass_leaves_zero():
    """`y += g` runs before `g += x` in the body: zero on the first pass only."""
    y, x, g, i = param("y·grad"), param("x"), ir.Var("g", "f64"), ir.Var("i", "i64")
    loop = ir.For(i, ir.Const(0, "i64"), ir.Const(1, "i64"), ir.Const(3, "i64"),
                  (add(y, read(g)), add(g, read(x))), None, 0)
    after = add(y, read(g))
    module = module_of(function([ir.Alloc(g, f64(0.0)), loop, after], [y, x]))
    assert body_of(drop_zero_updates(module)) == body_of(module)
    quiet = ir.For(i, ir.Const(0, "i64"), ir.Const(1, "i64"), ir.Const(3, "i64"),
                   (add(y, read(g)),), None, 0)
    new = body_of(drop_zero_updates(module_of(function([ir.Alloc(g, f64(0.0)), quiet, after],
                                                       [y, x]))))
    assert new[1].body == () and new[2:] == ()


def test_after_an_if_only_what_every_branch_leaves_zero_is_zero():
    y, x, g, c = param("y·grad"), param("x"), ir.Var("g", "f64"), param("c", "bool")

    def program(then):
        branch = ir.If((ir.Branch(read(c), None, tuple(then)),), (add(y, f64(1.0)),), None)
        return module_of(function([ir.Alloc(g, f64(0.0)), branch, add(y, read(g))],
                                  [y, x, c]))

    writes = program([add(g, read(x))])
    assert body_of(drop_zero_updates(writes)) == body_of(writes)
    reads = program([add(y, read(x))])
    assert len(body_of(drop_zero_updates(reads))) == 2


# ------------------------------------------------------------- dead code

def uncomputation(dealloc_site=None, uncompute_value=None):
    """t ← 0; t += x·x; y += t; t -= (x·x | uncompute_value); t → 0."""
    y, x, t = param("y"), param("x"), ir.Var("t", "f64")
    square = times(read(x), read(x))
    body = [ir.Alloc(t, f64(0.0)), add(t, square), add(y, read(t)),
            add(t, square if uncompute_value is None else uncompute_value, "-="),
            ir.Dealloc(t, f64(0.0), dealloc_site)]
    return body, [y, x]


def test_an_uncomputation_freed_unchecked_is_dropped():
    body, params = uncomputation()
    new = body_of(prune_module(module_of(function(body, params))))
    assert new == (body[0], body[1], body[2], body[4])


def test_a_scalar_allocated_for_nobody_keeps_nothing_alive():
    """`seed ← g · 2.0` freed unread is given a zero, so the updates of g (read by
    nothing else) go, and then seed itself (Note [Scalars nobody reads]); one whose
    value can fail a check keeps its value."""
    y, x = param("y"), param("x")
    g, seed = ir.Var("g·grad", "f64"), ir.Var("seed", "f64")
    body = [ir.Alloc(g, f64(0.0)), add(g, times(read(x), read(x))), add(y, read(x)),
            ir.Alloc(seed, times(read(g), f64(2.0))), ir.Dealloc(seed, None, None),
            ir.Dealloc(g, None, None)]
    new = body_of(prune_module(module_of(function(body, [y, x]))))
    assert new == (body[2],)       # then g and seed themselves (Note [Scalars nobody reads])
    a = param("a", VEC)
    checked = ir.Binary("+", read(g), ir.Load(a, (ir.Const(5, "i64"),), 0), "f64")
    body[3] = ir.Alloc(seed, checked)
    module = module_of(function(body, [y, x, a]), sites=[ir.Site("bounds", None, "f", False)])
    assert prune_module(module) is module


def test_scalars_nobody_reads_are_dropped_with_their_deallocation():
    """An Alloc of a constant (or of nothing) and its unchecked Dealloc go when
    nothing between them mentions the variable; a read, or a checked Dealloc, or a
    value that is not a constant keeps them (Note [Scalars nobody reads])."""
    y, x = param("y"), param("x")
    seed, other = ir.Var("seed", "f64"), ir.Var("other", "f64")
    pair = [ir.Alloc(seed, f64(0.0)), add(y, read(x)), ir.Dealloc(seed, None, None)]
    assert body_of(prune_module(module_of(function(pair, [y, x])))) == (pair[1],)
    nothing = [ir.Alloc(seed, None), ir.Alloc(other, f64(1.0)), ir.Dealloc(seed, None, None),
               add(y, read(other)), ir.Dealloc(other, None, None)]
    assert body_of(prune_module(module_of(function(nothing, [y, x])))) == \
        (nothing[1], nothing[3], nothing[4])
    read_between = [ir.Alloc(seed, f64(0.0)), add(y, read(seed)), ir.Dealloc(seed, None, None)]
    module = module_of(function(read_between, [y, x]))
    assert prune_module(module) is module
    checked = [ir.Alloc(seed, f64(0.0)), ir.Dealloc(seed, f64(0.0), 0)]
    module = module_of(function(checked, [y, x]), sites=[ir.Site("dealloc", None, "f", False)])
    assert prune_module(module) is module
    computed = [ir.Alloc(seed, times(read(x), read(x))), ir.Dealloc(seed, None, None)]
    # zeroed (Note [Dead uncomputation]), it is then a constant nobody reads
    assert body_of(prune_module(module_of(function(computed, [y, x])))) == ()


def test_an_uncomputation_freed_checked_is_kept():
    body, params = uncomputation(dealloc_site=0)
    module = module_of(function(body, params), sites=[ir.Site("dealloc", None, "f", False)])
    assert prune_module(module) is module


def test_an_uncomputation_that_can_fail_a_bounds_check_is_kept():
    a = param("a", VEC)
    checked = ir.Load(a, (ir.Const(5, "i64"),), 0)
    body, params = uncomputation(uncompute_value=checked)
    module = module_of(function(body, params + [a]), sites=[ir.Site("bounds", None, "f", False)])
    assert prune_module(module) is module
    body, params = uncomputation(uncompute_value=ir.Load(a, (ir.Const(5, "i64"),), None))
    assert len(body_of(prune_module(module_of(function(body, params + [a]))))) == 4


def test_writes_to_parameters_and_to_mains_store_are_live():
    x, t = param("x"), ir.Var("t", "f64")
    body = [ir.Alloc(t, f64(0.0)), add(t, read(x)), add(x, f64(1.0))]
    store = module_of(function(body, [x], results=[t]))
    assert prune_module(store) is store
    lost = body_of(prune_module(module_of(function(body, [x]))))
    assert lost == (body[0], body[2])           # t is never seen again


def test_calls_are_dropped_only_when_the_callee_is_quiet():
    y, x, t = param("y"), param("x"), ir.Var("t", "f64")
    inner_v = param("v")
    quiet = function([add(inner_v, f64(1.0))], [inner_v], symbol="bump", written=[0])
    loud = function([add(inner_v, f64(1.0)),
                     ir.Print("print", (("v", read(inner_v)),), 1)],
                    [inner_v], symbol="shout", written=[0])
    sites = [ir.Site("call", None, "f", False), ir.Site("print", None, "shout", False)]

    def caller(callee):
        return function([ir.Alloc(t, f64(0.0)), add(y, read(x)),
                         ir.Call(callee, (ir.VarPlace(t),), 0),
                         ir.Dealloc(t, f64(0.0), None)], [y, x])

    dropped = prune_module(module_of(caller("bump"), quiet, loud, sites=sites))
    # (the scalar the call updated goes with it: Note [Scalars nobody reads])
    assert [type(s).__name__ for s in body_of(dropped)] == ["Update"]
    kept = module_of(caller("shout"), quiet, loud, sites=sites)
    assert prune_module(kept) is kept


def test_loops_that_might_not_end_are_kept():
    y, x, t = param("y"), param("x"), ir.Var("t", "f64")
    spin = ir.While(ir.Compare("<", read(t), f64(1.0)), ir.Compare(">", read(t), f64(0.0)),
                    (add(t, read(x)),), None)
    body = [ir.Alloc(t, f64(0.0)), add(y, read(x)), spin, ir.Dealloc(t, f64(0.0), None)]
    module = module_of(function(body, [y, x]))
    assert prune_module(module) is module


def test_a_dead_for_loop_with_a_constant_step_is_dropped_whole():
    y, x, t, i, n = param("y"), param("x"), ir.Var("t", "f64"), ir.Var("i", "i64"), \
        param("n", "i64")

    def program(step):
        loop = ir.For(i, ir.Const(0, "i64"), step, read(n), (add(t, read(x)),), None, 0)
        return module_of(function([ir.Alloc(t, f64(0.0)), add(y, read(x)), loop,
                                   ir.Dealloc(t, f64(0.0), None)], [y, x, n]))

    assert count(prune_module(program(ir.Const(1, "i64"))), ir.For) == 0
    variable = body_of(prune_module(program(read(n))))   # a zero step is an error
    assert isinstance(variable[1], ir.For) and variable[1].body == ()   # kept, emptied
    assert len(variable) == 2       # t, read by nobody now, goes (Note [Scalars nobody reads])


def records_kept_on_a_stack(zero_site):
    """A record pushed on a stack, the value used, the record popped back and the
    ancilla uncomputed: the shape of evals/lse.rev's maximum (Note [Stacks nobody
    reads])."""
    y, x, t, s = param("y"), param("x"), ir.Var("t", "f64"), ir.Var("s", ir.StackType("f64"))
    return [ir.Alloc(s, None), ir.Alloc(t, f64(0.0)), add(t, read(x)),
            ir.Push(s, ir.VarPlace(t), 0), add(y, read(x)),
            ir.Pop(s, ir.VarPlace(t), 0, zero_site), add(t, read(x), "-="),
            ir.Dealloc(t, f64(0.0), None), ir.Dealloc(s, None, None)], [y, x]


def test_pushes_and_unchecked_pops_nobody_reads_are_dropped():
    body, params = records_kept_on_a_stack(zero_site=None)
    sites = [ir.Site("stack_memory", None, "f", False)]
    new = body_of(prune_module(module_of(function(body, params), sites=sites)))
    assert new == (body[0], body[4], body[8])     # and t (Note [Scalars nobody reads])


def test_a_checked_pop_and_the_push_it_reads_are_kept():
    body, params = records_kept_on_a_stack(zero_site=1)
    sites = [ir.Site("stack_memory", None, "f", False), ir.Site("pop_zero", None, "f", False)]
    new = body_of(prune_module(module_of(function(body, params), sites=sites)))
    assert new == tuple(body[:6]) + (body[7], body[8])   # only `t -= x` goes


def test_a_push_onto_a_stack_nobody_reads_only_zeroes_its_place():
    """Records of a loop's passes on one stack, each popped back in its pass: with the
    pops dead, a push leaves only its zero (Note [Stacks nobody reads]), and the
    stack is never pushed, so it does not grow."""
    y, x, t, i = param("y"), param("x"), ir.Var("t", "f64"), ir.Var("i", "i64")
    s = ir.Var("s", ir.StackType("f64"))
    inner = (ir.Alloc(t, f64(0.0)), add(t, read(x)), ir.Push(s, ir.VarPlace(t), 0),
             add(t, read(x)), add(y, read(t)),
             add(t, read(x), "-="), ir.Pop(s, ir.VarPlace(t), 0, None), add(t, read(x), "-="),
             ir.Dealloc(t, f64(0.0), None))
    loop = ir.For(i, ir.Const(0, "i64"), ir.Const(1, "i64"), ir.Const(9, "i64"), inner,
                  None, None)
    body = [ir.Alloc(s, None), loop, ir.Dealloc(s, None, None)]
    sites = [ir.Site("stack_memory", None, "f", False)]
    pruned = prune_module(module_of(function(body, [y, x]), sites=sites))
    assert count(pruned, ir.Push) == count(pruned, ir.Pop) == 0
    new_inner = body_of(pruned)[1].body
    assert [type(stmt).__name__ for stmt in new_inner] == \
        ["Alloc", "Update", "Alloc", "Instr", "Dealloc", "Update", "Update", "Dealloc"]
    zero, swap = new_inner[2], new_inner[3]
    assert zero.value == f64(0.0) and swap.name == "SWAP" and \
        swap.places == (ir.VarPlace(t), ir.VarPlace(zero.var))


def test_a_push_onto_a_stack_read_later_is_kept():
    y, x, t = param("y"), param("x"), ir.Var("t", "f64")
    s = ir.Var("s", ir.StackType("f64"))
    body = [ir.Alloc(t, f64(0.0)), add(t, read(x)), ir.Push(s, ir.VarPlace(t), 0),
            add(t, read(x)), add(y, read(t)), ir.Dealloc(t, f64(0.0), None)]
    module = module_of(function(body, [y, x, s]),         # the caller sees its stack
                       sites=[ir.Site("stack_memory", None, "f", False)])
    assert prune_module(module) is module


@pytest.mark.parametrize("construct", ["for", "if"])
def test_known_zeros_gives_back_a_module_with_loops_unchanged(construct):
    y, x, i, c = param("y"), param("x"), ir.Var("i", "i64"), param("c", "bool")
    inner = (add(y, read(x)),)
    stmt = ir.For(i, ir.Const(0, "i64"), ir.Const(1, "i64"), ir.Const(3, "i64"), inner,
                  None, 0) if construct == "for" else \
        ir.If((ir.Branch(read(c), None, inner),), (), None)
    module = module_of(function([stmt], [y, x, c]))
    assert drop_zero_updates(module) is module


# -------------------------------------------------------------- the pass list

def test_the_passes_run_in_the_documented_order():
    assert [p.name for p in PASSES] == ["zeros", "prune", "guards", "invariant sums",
                                        "onto zeros", "first writes", "carried values",
                                        "unread stores"]
    assert [p.run for p in PASSES] == [drop_zero_updates, prune_module,
                                       selects_outside_gathers, sum_invariant_updates,
                                       mark_updates_onto_zeros, mark_first_writes,
                                       carry_recurrences, skip_unread_stores]
    for step, file in zip(PASSES, ("zeros.py", "prune.py", "guards.py",
                                   "invariant_sums.py", "onto_zeros.py",
                                   "first_writes.py", "carried_values.py",
                                   "unread_stores.py")):
        assert step.note.startswith("Note [") and step.note.endswith("rlang/ir/" + file)


def test_run_passes_feeds_each_pass_the_previous_result():
    seen = []

    def step(name):
        def run(module):
            seen.append((name, module.entry))
            return ir.Module(module.entry + name, module.functions, module.sites)
        return Pass(name, run, "")

    result = run_passes(module_of(function([], [])), (step("a"), step("b")))
    assert seen == [("a", "f"), ("b", "fa")] and result.entry == "fab"


def test_a_clean_module_passes_through_unchanged():
    y, x = param("y·grad"), param("x")
    module = module_of(function([add(y, times(read(x), read(x)))], [y, x]))
    assert run_passes(module) is module
    assert run_passes(module, ()) is module


def test_zeros_before_prune_leaves_more_dead_code():
    """A guarded product of a zero seed is all that reads t: once it is gone, so is
    the computation of t; in the other order t is still live when prune runs."""
    y, x = param("y·grad"), param("x")
    g, t = ir.Var("g", "f64"), ir.Var("t", "f64")
    body = [ir.Alloc(g, f64(0.0)), ir.Alloc(t, f64(0.0)), add(t, times(read(x), read(x))),
            add(y, ir.Guarded((read(g),), times(read(g), read(t)))),
            ir.Dealloc(t, None, None), ir.Dealloc(g, None, None)]
    module = module_of(function(body, [y, x]))
    ran = body_of(run_passes(module))
    assert ran == ()            # g and t go too (Note [Scalars nobody reads])
    backward = body_of(drop_zero_updates(prune_module(module)))
    assert backward == (body[0], body[1], body[2], body[4], body[5])
    by_hand = module
    for step in PASSES:
        by_hand = step.run(by_hand)
    assert body_of(by_hand) == ran
