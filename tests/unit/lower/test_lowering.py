"""Lowering, checked AST → typed reversible IR (rlang/lower/statements.py and the
modules it uses).

Small rev programs are loaded and checked as rlang/api.py does, one specialisation is
lowered with `lower(unit, name, types, inverse, invcheck)`, and the IR is inspected:
parameter types per argument types, the inverse's statements, which checks become
sites (and which invcheck turns off), loops, `@routine`, ancillas, calls, the
generated-code names (`symbol_of`) and the refusals (`BackendUnsupported`, with a
source position).  Number systems and complex numbers: test_lowering_number_systems.py.
"""
from __future__ import annotations

import textwrap

import pytest

from rlang.errors import RlangTypeError
from rlang.frontend.check import check
from rlang.frontend.loader import loads_unit
from rlang.ir import nodes as ir
from rlang.ir.nodes import symbol_of
from rlang.lower.statements import lower, lower_many
from lowering_helpers import checked_unit, entry_of, lowered
from rlang.types_rules import BackendUnsupported, CompiledTypeError

F64_VEC = ir.ArrayType("f64", 1, unit_stride=True)

SOURCE = """
function add(y!, x)
    y! += x
end

function twice(y!, a)
    y! += a
    y! -= 2.0 * a
end

function scaled(y!, x)
    y! += x * 2.0
end

function total(s!, x)
    for i = 0:length(x) - 1
        s! += x[i]
    end
end

function stepped(s!, n)
    for i = 1:2:n
        s! += i
    end
end

function distance(d!, x, y)
    @routine begin
        s ← 0.0
        s += x * x + y * y
    end
    d! += sqrt(s)
    ~@routine
end

function square_plus_one(out!, x)
    t ← 0.0
    t += x * x
    out! += t + 1.0
    t -= x * x
    t → 0.0
end

function buffer(y!, n)
    v ← zeros(f64, n)
    v[0] += 1.0
    y! += v[0]
    v[0] -= 1.0
    v → zeros(f64, n)
end

function relu(y!, x)
    if (x > 0.0, ~)
        y! += x
    end
end

function first(y!, x)
    @inbounds y! += x[0]
end

function quiet(y!, x)
    t ← x
    y! += t
    @invcheckoff t → x
end

function caller(y!)
    add(y!, 3.0)
    ~add(y!, 1.0)
end

function pushpop(x!)
    s ← stack(f64)
    PUSH(s, x!)
    POP(s, x!)
    s → stack(f64)
end

function declared(x: f64)
    x += 1.0
end
"""


@pytest.fixture(scope="module")
def unit():
    return checked_unit(SOURCE, "lowering.rev")


def lower_source(source: str, name: str, types, invcheck=True) -> ir.Module:
    unit = loads_unit(textwrap.dedent(source).lstrip("\n"), "refused.rev")
    check(unit)
    return lower(unit, name, tuple(types), False, invcheck)


def text(node) -> str:
    """An IR tree as text: variables by name and type (a `Var` compares by identity,
    so trees from two lowerings are compared this way)."""
    return repr(node)


def line_of(source_line: str) -> int:
    """The line number of a line of SOURCE."""
    return textwrap.dedent(SOURCE).splitlines().index(source_line) + 1


# ------------------------------------------------------------- types and names

@pytest.mark.parametrize("t", ["f64", "f32", "i64", "i32"])
def test_parameters_take_the_argument_types(unit, t):
    fn = entry_of(lowered(unit, "add", (t, t)))
    assert [(p.name, p.type, p.is_param) for p in fn.params] == \
        [("y!", t, True), ("x", t, True)]
    (update,) = fn.body
    assert update.target.type == t and update.value.type == t


def test_a_narrower_value_is_converted_to_the_target_type(unit):
    (update,) = entry_of(lowered(unit, "add", ("f64", "i64"))).body
    assert isinstance(update.value, ir.Convert)
    assert update.value.type == "f64" and update.value.operand.type == "i64"


def test_a_float_cannot_accumulate_into_an_integer(unit):
    with pytest.raises(CompiledTypeError) as raised:
        lowered(unit, "add", ("i64", "f64"))
    assert isinstance(raised.value, RlangTypeError)        # the interpreter's class too
    assert raised.value.span.line == line_of("    y! += x")


def test_a_literal_adopts_a_narrower_float_type(unit):
    fn = entry_of(lowered(unit, "scaled", ("f32", "f32")))
    (update,) = fn.body
    assert update.value == ir.Binary("*", ir.Read(fn.params[1]), ir.Const(2.0, "f32"), "f32")


@pytest.mark.parametrize("array", [F64_VEC, ir.ArrayType("f32", 1, unit_stride=False)])
def test_array_parameters_keep_their_array_type(unit, array):
    fn = entry_of(lowered(unit, "total", ("f64", array)))
    assert fn.params[1].type == array
    (loop,) = fn.body
    load = loop.body[0].value
    load = load.operand if isinstance(load, ir.Convert) else load
    assert isinstance(load, ir.Load) and load.var is fn.params[1]
    assert load.type == array.elem


def test_a_declared_parameter_type_must_match(unit):
    with pytest.raises(CompiledTypeError, match="must be an f64, got an i64") as raised:
        lowered(unit, "declared", ("i64",))
    assert raised.value.span.line == line_of("function declared(x: f64)")


def test_symbol_of_names_specialisations():
    assert symbol_of("main", (), False) == "rev_main"
    assert symbol_of("add", ("f64", "i64"), False) == "rev_add__f64_i64"
    assert symbol_of("scale!", ("f64", F64_VEC), True) == "rev_inv_scale___f64_f64a1u"
    assert symbol_of("g", (ir.ArrayType("i32", 2), ir.StackType("f32")), False) == \
        "rev_g__i32a2_f32s"
    # the layout fact is part of the specialisation (Note [Unit-stride arrays])
    assert symbol_of("t", (ir.ArrayType("f64", 1),), False) != symbol_of("t", (F64_VEC,), False)


def test_the_entry_is_the_requested_specialisation(unit):
    for inverse in (False, True):
        module = lowered(unit, "add", ("f64", "f64"), inverse)
        fn = entry_of(module)
        assert module.entry == symbol_of("add", ("f64", "f64"), inverse) == fn.symbol
        assert (fn.name, fn.inverse) == ("add", inverse)


def test_lower_many_holds_every_entry(unit):
    module = lower_many(unit, [("add", ("f64", "f64"), False), ("add", ("f64", "f64"), True),
                               ("total", ("f64", F64_VEC), False)], True)
    assert set(module.functions) == {"rev_add__f64_f64", "rev_inv_add__f64_f64",
                                     "rev_total__f64_f64a1u"}


# ---------------------------------------------------------------------- inverses

def test_the_inverse_of_an_addition_is_a_subtraction(unit):
    (forward,) = entry_of(lowered(unit, "add", ("f64", "f64"))).body
    (backward,) = entry_of(lowered(unit, "add", ("f64", "f64"), inverse=True)).body
    assert isinstance(forward, ir.Update) and isinstance(backward, ir.Update)
    assert (forward.op, backward.op) == ("+=", "-=")
    assert text(backward.value) == text(forward.value)
    assert text(backward.target) == text(forward.target)


def test_the_inverse_undoes_updates_in_reverse_order(unit):
    forward = entry_of(lowered(unit, "twice", ("f64", "f64"))).body
    backward = entry_of(lowered(unit, "twice", ("f64", "f64"), inverse=True)).body
    assert [s.op for s in forward] == ["+=", "-="]
    # `-= 2a` is undone first, by `+= 2a`; then `+= a` by `-= a`
    assert [(s.op, text(s.value)) for s in backward] == \
        [("+=", text(forward[1].value)), ("-=", text(forward[0].value))]
    assert isinstance(forward[1].value, ir.Binary) and forward[1].value.op == "*"


def test_the_inverse_of_a_for_loop_runs_backward(unit):
    (loop,) = entry_of(lowered(unit, "stepped", ("f64", "i64"))).body
    (back,) = entry_of(lowered(unit, "stepped", ("f64", "i64"), inverse=True)).body
    assert isinstance(loop, ir.For) and isinstance(back, ir.For)
    assert loop.var.type == "i64" and loop.var.name == "i"
    assert (loop.start, loop.step) == (ir.Const(1, "i64"), ir.Const(2, "i64"))
    assert back.step == ir.Const(-2, "i64") and back.stop == ir.Const(1, "i64")
    assert loop.body[0].op == "+=" and back.body[0].op == "-="
    assert isinstance(loop.body[0].value, ir.Convert)       # i64 index into an f64


def test_a_routine_is_computed_used_and_uncomputed(unit):
    for inverse in (False, True):
        body = entry_of(lowered(unit, "distance", ("f64",) * 3, inverse)).body
        assert [type(s).__name__ for s in body] == \
            ["Alloc", "Update", "Update", "Update", "Dealloc"]
        s = body[0].var
        assert body[0].value == ir.Const(0.0, "f64") and body[4].var is s
        assert [u.op for u in body[1:4]] == ["+=", "+=" if not inverse else "-=", "-="]
        assert body[1].target.var is s and body[3].target.var is s
        assert body[1].value == body[3].value             # the same value, uncomputed
        assert body[2].value == ir.Builtin("sqrt", (ir.Read(s),), "f64")


def test_the_uncomputation_of_a_routine_reports_its_direction(unit):
    module = lowered(unit, "distance", ("f64",) * 3)
    dealloc = entry_of(module).body[-1]
    site = module.sites[dealloc.site]
    assert site.kind == "dealloc" and site.function == "distance" and not site.inverse
    assert "`~@routine`" in site.note and "backward" in site.note


# ------------------------------------------------------------------ ancillas

def test_a_scalar_ancilla_is_allocated_and_checked_when_freed(unit):
    module = lowered(unit, "square_plus_one", ("f64", "f64"))
    body = entry_of(module).body
    alloc, dealloc = body[0], body[-1]
    assert isinstance(alloc, ir.Alloc) and isinstance(dealloc, ir.Dealloc)
    assert alloc.var is dealloc.var and alloc.var.name == "t" and not alloc.var.is_param
    assert alloc.value == dealloc.value == ir.Const(0.0, "f64")
    assert module.sites[dealloc.site].kind == "dealloc"
    assert module.sites[dealloc.site].detail == ("t", "f64")


def test_an_array_ancilla_has_extents_and_allocation_sites(unit):
    module = lowered(unit, "buffer", ("f64", "i64"))
    fn = entry_of(module)
    alloc, dealloc = fn.body[0], fn.body[-1]
    # an array ancilla is made C-ordered (Note [Unit-stride arrays])
    assert alloc.var.type == ir.ArrayType("f64", 1, unit_stride=True)
    assert alloc.value is None and alloc.dims == (ir.Read(fn.params[1]),)
    assert [module.sites[k].kind for k in alloc.sites] == ["zeros_memory", "zeros"]
    assert dealloc.var is alloc.var and dealloc.value is None      # all zero
    assert module.sites[dealloc.site].kind == "dealloc_array"
    assert len(dealloc.shape) == 1


def test_a_stack_is_allocated_empty_and_freed_checked(unit):
    module = lowered(unit, "pushpop", ("f64",))
    alloc, push, pop, dealloc = entry_of(module).body
    assert alloc.var.type == ir.StackType("f64") and alloc.value is None
    assert isinstance(push, ir.Push) and isinstance(pop, ir.Pop)
    assert push.stack is pop.stack is alloc.var
    assert module.sites[push.memory_site].kind == "stack_memory"
    assert (module.sites[pop.empty_site].kind, module.sites[pop.zero_site].kind) == \
        ("pop_empty", "pop_zero")
    assert module.sites[dealloc.site].kind == "dealloc_stack"
    unchecked = entry_of(lowered(unit, "pushpop", ("f64",), invcheck=False)).body
    assert unchecked[2].empty_site is not None          # an empty pop is always an error
    assert unchecked[2].zero_site is None and unchecked[3].site is None


# ------------------------------------------------------------------- checks

def test_invcheck_off_removes_the_reversibility_checks(unit):
    on = entry_of(lowered(unit, "square_plus_one", ("f64", "f64"), invcheck=True))
    off = lowered(unit, "square_plus_one", ("f64", "f64"), invcheck=False)
    assert on.body[-1].site is not None
    assert entry_of(off).body[-1].site is None
    assert off.sites == []
    # the deallocated value is kept: gradients flow into it
    assert entry_of(off).body[-1].value == ir.Const(0.0, "f64")


def test_if_checks_its_postcondition_only_with_invcheck(unit):
    (checked,) = entry_of(lowered(unit, "relu", ("f64", "f64"))).body
    (plain,) = entry_of(lowered(unit, "relu", ("f64", "f64"), invcheck=False)).body
    assert checked.site is not None and checked.branches[0].post == checked.branches[0].pre
    assert plain.site is None and plain.branches[0].post is None
    assert text(plain.branches[0].pre) == text(checked.branches[0].pre)


def test_for_loops_keep_the_zero_step_check_without_invcheck(unit):
    module = lowered(unit, "total", ("f64", F64_VEC))
    (loop,) = entry_of(module).body
    assert module.sites[loop.site].kind == "for"
    assert [module.sites[loop.site + k].kind for k in (1, 2, 3)] == ["for_bound"] * 3
    assert module.sites[loop.step_site].kind == "for_zero_step"
    off = lowered(unit, "total", ("f64", F64_VEC), invcheck=False)
    (loop,) = entry_of(off).body
    assert loop.site is None
    assert off.sites[loop.step_site].kind == "for_zero_step"
    # a bounds check is no reversibility check (Note [Checks invcheck does not turn off])
    assert off.sites[loop.body[0].value.site].kind == "bounds"


def test_inbounds_removes_the_bounds_check(unit):
    module = lowered(unit, "first", ("f64", F64_VEC))
    (update,) = entry_of(module).body
    assert isinstance(update.value, ir.Load) and update.value.site is None
    assert "bounds" not in [site.kind for site in module.sites]


def test_invcheckoff_turns_off_one_statement(unit):
    module = lowered(unit, "quiet", ("f64", "f64"))
    dealloc = entry_of(module).body[-1]
    assert isinstance(dealloc, ir.Dealloc) and dealloc.site is None


def test_calls_name_their_callee_and_pass_temporaries(unit):
    module = lowered(unit, "caller", ("f64",))
    assert set(module.functions) == {"rev_caller__f64", "rev_add__f64_f64",
                                     "rev_inv_add__f64_f64"}
    body = entry_of(module).body
    assert [type(s).__name__ for s in body] == ["Alloc", "Call", "Dealloc"] * 2
    assert [s.callee for s in body if isinstance(s, ir.Call)] == \
        ["rev_add__f64_f64", "rev_inv_add__f64_f64"]
    call, temp = body[1], body[0].var
    assert call.args == (ir.VarPlace(entry_of(module).params[0]), ir.VarPlace(temp))
    assert module.sites[call.site].kind == "call"
    assert module.sites[body[2].site].kind == "argument"     # 3.0 must come back 3.0
    assert body[0].value == body[2].value == ir.Const(3.0, "f64")


# ----------------------------------------------------------------- refusals

def test_swapping_three_dimensional_arrays_is_unsupported():
    cube = ir.ArrayType("f64", 3, unit_stride=True)
    with pytest.raises(BackendUnsupported, match="up to two dimensions") as raised:
        lower_source("function s(a: f64[:,:,:], b: f64[:,:,:])\n    SWAP(a, b)\nend\n",
                     "s", (cube, cube))
    assert not isinstance(raised.value, CompiledTypeError)
    assert (raised.value.span.file, raised.value.span.line, raised.value.span.col) == \
        ("refused.rev", 2, 5)


def test_two_functions_with_one_compiled_name_are_refused():
    source = """
    function g!(x)
        x += 1.0
    end
    function g_(x)
        x += 2.0
    end
    function both(x)
        g!(x)
        g_(x)
    end
    """
    with pytest.raises(BackendUnsupported, match="same name in compiled code") as raised:
        lower_source(source, "both", ("f64",))
    assert raised.value.span.line == 4                  # the second definition


def test_a_type_error_anywhere_in_the_function_is_a_compiled_type_error():
    source = """
    function t(y!, x)
        if (true || x, ~)
            y! += 1.0
        end
    end
    """
    with pytest.raises(CompiledTypeError, match="condition must be a bool") as raised:
        lower_source(source, "t", ("f64", "f64"))
    assert isinstance(raised.value, BackendUnsupported)
    assert raised.value.span.line == 2
