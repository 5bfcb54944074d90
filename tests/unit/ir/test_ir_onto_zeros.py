"""The pass that marks updates onto known zeros (Note [Updates onto zeros],
rlang/ir/onto_zeros.py), on IR built from the dataclasses of rlang/ir/nodes.py:
a derivative's zero scalar until its first write, a zero array's elements until
each is written (indices a constant apart), a loop writing one fresh element a
pass on the far side of what was written before it; nothing of a program's own
values, nothing after a write the pass cannot follow."""
from __future__ import annotations

from rlang.ir import nodes as ir
from rlang.ir.onto_zeros import mark_updates_onto_zeros
from rlang.ir.walk import walk

from ir_builders import VEC, add, f64, function, module_of, param, read

N = param("n", "i64")
X = param("x")


def marks(body, params=(N, X)) -> list:
    """The onto_zero flags of the body's updates, in order, after the pass."""
    module = mark_updates_onto_zeros(module_of(function(body, params)))
    return [s.onto_zero for s in walk(module.functions["f"].body) if isinstance(s, ir.Update)]


def index(var, offset=0):
    e = ir.Read(var)
    if offset:
        e = ir.Binary("+" if offset > 0 else "-", e, ir.Const(abs(offset), "i64"), "i64")
    return e


def elem(var, *indices):
    return ir.ElemPlace(var, tuple(indices), None)


def update(place, value, op="+="):
    return ir.Update(place, op, value, reassociable=True)


def zeros(var, n=N):
    return ir.Alloc(var, None, (ir.Read(n),))


def loop(i, start, step, stop, body, **fields):
    return ir.For(i, start, ir.Const(step, "i64"), stop, tuple(body), None, 0, **fields)


def test_a_zero_scalar_of_a_derivative_is_written_once_onto_zero():
    g = ir.Var("g·grad", "f64")
    assert marks([ir.Alloc(g, f64(0.0)), add(g, read(X)), add(g, read(X)),
                  ir.Dealloc(g, None, None)]) == [True, False]


def test_the_programs_own_values_keep_their_adds():
    """0.0 + v is +0.0 for v = -0.0: only a derivative's variables may differ so."""
    g, a = ir.Var("g", "f64"), ir.Var("a", VEC)
    assert marks([ir.Alloc(g, f64(0.0)), add(g, read(X)), zeros(a),
                  update(elem(a, index(N)), read(X))]) == [False, False]


def test_an_ancilla_allocated_with_a_value_is_not_zero():
    g = ir.Var("g·grad", "f64")
    assert marks([ir.Alloc(g, f64(1.0)), add(g, read(X))]) == [False]


def test_array_elements_a_constant_apart_are_each_written_onto_zero_once():
    """a[n] and a[n - 1] differ; a[0] may be a[n] (n = 0), so it is not known zero."""
    a = ir.Var("a·grad", VEC)
    assert marks([zeros(a),
                  update(elem(a, index(N)), read(X)),
                  update(elem(a, index(N, -1)), read(X), "-="),
                  update(elem(a, ir.Const(0, "i64")), read(X)),
                  update(elem(a, index(N)), read(X))]) == [True, True, False, False]
    assert marks([zeros(a),
                  update(elem(a, ir.Const(2, "i64")), read(X)),
                  update(elem(a, ir.Const(0, "i64")), read(X)),
                  update(elem(a, ir.Const(2, "i64")), read(X))]) == [True, True, False]


def test_an_index_of_a_written_variable_ends_what_is_known():
    a, k = ir.Var("a·grad", VEC), ir.Var("k", "i64")
    assert marks([zeros(a), ir.Alloc(k, ir.Const(2, "i64")),
                  update(elem(a, index(k)), read(X)),
                  update(elem(a, index(N)), read(X)),
                  ir.Update(ir.VarPlace(k), "+=", ir.Const(1, "i64"))]) == \
        [False, False, False]


def test_a_reverse_loop_writes_one_fresh_element_each_pass():
    """`a[n] += …` before `for i = n:-1:1 … a[i - 1] += …`: the first update of each
    pass is onto a zero, the second adds to what the first wrote."""
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    body = [zeros(a), update(elem(a, index(N)), read(X)),
            loop(i, ir.Read(N), -1, ir.Const(1, "i64"), [
                update(elem(a, index(i, -1)), read(X)),
                update(elem(a, index(i, -1)), read(X))])]
    assert marks(body) == [True, True, False]


def test_updates_inside_a_loops_seed_branches_count_as_its_body():
    """Loops whose passes wait on each other keep their seed branches (Note [Seed
    branches in serial loops]): the first update of the pass's fresh element is
    onto a zero whether or not a branch holds it; a branch that is not a seed
    branch still ends what is known."""
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    seed = ir.Var("seed", "f64")
    def pass_body(branch):
        inner = (update(elem(a, index(i, -1)), read(X)), update(elem(a, index(i, -1)), read(X)))
        return [ir.Alloc(seed, read(X)),
                ir.If((ir.Branch(branch(read(seed)), None, inner),), (), None),
                ir.Dealloc(seed, None, None)]
    seeded = loop(i, ir.Read(N), -1, ir.Const(1, "i64"),
                  pass_body(lambda s: ir.Nonzero((s,))))
    assert marks([zeros(a), update(elem(a, index(N)), read(X)), seeded]) == \
        [True, True, False]
    other = loop(i, ir.Read(N), -1, ir.Const(1, "i64"),
                 pass_body(lambda s: ir.Compare(">", s, f64(0.0), "bool")))
    assert marks([zeros(a), update(elem(a, index(N)), read(X)), other]) == \
        [True, False, False]


def test_a_loop_starting_where_an_element_was_written_is_left_alone():
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    written_before = update(elem(a, index(N)), read(X))
    ascending = loop(i, ir.Const(1, "i64"), 1, ir.Read(N), [update(elem(a, index(i)), read(X))])
    assert marks([zeros(a), written_before, ascending]) == [True, False]
    descending_onto_it = loop(i, ir.Read(N), -1, ir.Const(1, "i64"),
                              [update(elem(a, index(i)), read(X))])
    assert marks([zeros(a), written_before, descending_onto_it]) == [True, False]
    written_first = update(elem(a, ir.Const(0, "i64")), read(X))
    assert marks([zeros(a), written_first, ascending]) == [True, True]


def test_an_all_zero_array_needs_only_fresh_elements():
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    strided = loop(i, ir.Const(0, "i64"), 3, ir.Read(N), [update(elem(a, index(i, 2)), read(X))])
    assert marks([zeros(a), strided]) == [True]


def test_loops_that_may_write_an_element_twice_are_left_alone():
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    two_indices = loop(i, ir.Const(1, "i64"), 1, ir.Read(N), [
        update(elem(a, index(i)), read(X)), update(elem(a, index(i, -1)), read(X))])
    fixed_index = loop(i, ir.Const(1, "i64"), 1, ir.Read(N),
                       [update(elem(a, index(N)), read(X))])
    parallel = loop(i, ir.Const(1, "i64"), 1, ir.Read(N), [update(elem(a, index(i)), read(X))],
                    parallel=True)
    nested = loop(i, ir.Const(1, "i64"), 1, ir.Read(N), [
        ir.If((ir.Branch(ir.Const(True, "bool"), None,
                         (update(elem(a, index(i)), read(X)),)),), (), None)])
    for case in (two_indices, fixed_index, parallel, nested):
        assert not any(marks([zeros(a), case]))


def test_a_second_loop_finds_nothing_known():
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    first = loop(i, ir.Const(0, "i64"), 1, ir.Read(N), [update(elem(a, index(i)), read(X))])
    assert marks([zeros(a), first, first]) == [True, False]


def test_a_call_or_instruction_on_the_array_ends_what_is_known():
    a, g = ir.Var("a·grad", VEC), ir.Var("g·grad", "f64")
    call = ir.Call("f", (ir.Read(a),), 0)
    assert marks([zeros(a), call, update(elem(a, index(N)), read(X))]) == [False]
    swap = ir.Instr("NEG", (ir.VarPlace(g),))
    assert marks([ir.Alloc(g, f64(0.0)), swap, add(g, read(X))]) == [False]


def test_an_inverted_loop_starts_from_the_end_of_its_range():
    """`reverse_of = (1, 1, n)` visits 1:n backward, from n."""
    a, i = ir.Var("a·grad", VEC), ir.Var("i", "i64")
    after = update(elem(a, index(N, 1)), read(X))
    inverted = loop(i, ir.Read(N), 1, ir.Const(1, "i64"), [update(elem(a, index(i)), read(X))],
                    reverse_of=(ir.Const(1, "i64"), ir.Const(1, "i64"), ir.Read(N)))
    assert marks([zeros(a), after, inverted]) == [True, True]
    at_n = update(elem(a, index(N)), read(X))
    assert marks([zeros(a), at_n, inverted]) == [True, False]


def test_ancillas_of_a_loop_body_are_followed_inside_it():
    i, t = ir.Var("i", "i64"), ir.Var("t·grad", "f64")
    body = [loop(i, ir.Const(0, "i64"), 1, ir.Read(N), [
        ir.Alloc(t, f64(0.0)), add(t, read(X)), add(t, read(X)), ir.Dealloc(t, None, None)])]
    assert marks(body) == [True, False]


def test_nothing_to_mark_gives_back_the_same_module():
    g = ir.Var("g", "f64")
    module = module_of(function([ir.Alloc(g, f64(0.0)), add(g, read(X))], (N, X)))
    assert mark_updates_onto_zeros(module) is module
