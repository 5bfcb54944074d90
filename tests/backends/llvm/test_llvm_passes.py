"""The IR passes before code generation (issue #5): dead uncomputation
(rlang/ir/prune.py, with liveness through `for` loops) and updates by known zeros
(rlang/ir/zeros.py); the reassociable gradient sums of the gradient pass; and the
LLVM pipeline's scalar loop remainders.

Each pass is checked twice: on the IR (what it drops and what it must keep) and on
the compiled results, which must stay the interpreter's: forward, inverse, output,
errors and gradients.
"""
from __future__ import annotations

import io
import re
from contextlib import redirect_stdout

import numpy as np
import pytest

import rlang
from rlang.ir import nodes as ir
from rlang.ad.adjoint_ir import adjoint_module
from rlang.ir.prune import prune_module
from rlang.ir.walk import walk
from rlang.ir.zeros import drop_zero_updates
from rlang.lower.statements import lower, type_of_value

from gradient_agreement import assert_same_gradients

# The indexed statements carry `@inbounds`: a bounds check is made whatever invcheck
# says, and a statement that checks is never dropped (Note [Dead uncomputation]).
SOURCE = """
function norm2!(err!: f64, x: f64[:], m: f64[:])
    @routine begin
        n ← length(x)
        xc ← zeros(f64, n)
        @inbounds for j = 0:n - 1
            xc[j] += x[j] - m[j]
        end
    end
    @inbounds for j = 0:n - 1
        err! += xc[j] * xc[j]
    end
    ~@routine
end

# the uncomputation prints: it must still print (twice in all)
function loud!(err!: f64, x: f64[:])
    @routine begin
        t ← zeros(f64, 1)
        t[0] += x[0] * 2.0
        @safe print("t", t[0])
    end
    err! += t[0]
    ~@routine
end

# the uncomputation runs a `while` loop, which is kept
function counted!(err!: f64, k: i64)
    @routine begin
        c ← 0
        while (c < k, c > 0)
            c += 1
        end
    end
    err! += f64(c)
    ~@routine
end

function scaled!(s!: f64, x: f64[:])
    @inbounds for j = 0:length(x) - 1
        s! += x[j] * 3.0
    end
end

# the uncomputation calls two functions: one without array ancillas, and one that
# allocates an array whose extent is a size (Note [Allocations nobody reads]):
# both are dropped with it
function outer!(err!: f64, x: f64[:])
    @routine begin
        t ← zeros(f64, length(x))
        @inbounds scaled!(t[0], x)
        @inbounds norm2!(t[1], x, x)
        @inbounds t[0] += x[0]
    end
    @inbounds err! += t[0]
    ~@routine
end

# allocates an array whose extent may be negative (an error): its uncall is kept
function sized!(s!: f64, x: f64[:], k: i64)
    @routine begin
        t ← zeros(f64, k)
    end
    @inbounds s! += x[0]
    ~@routine
end

function outer_sized!(err!: f64, x: f64[:], k: i64)
    @routine begin
        t ← zeros(f64, 1)
        @inbounds sized!(t[0], x, k)
    end
    @inbounds err! += t[0]
    ~@routine
end

# the recomputation scales its zero gradients by constants: 2.0 for q's, 0.5 for
# the seed of the product q * q
function rows!(err!: f64, x: f64[:,:])
    @routine begin
        nk ← size(x, 0)
        q ← zeros(f64, nk, size(x, 1))
        s ← zeros(f64, nk)
        @inbounds for k = 0:nk - 1
            for j = 0:size(x, 1) - 1
                q[k, j] += 2.0 * x[k, j]
                s[k] -= 0.5 * (q[k, j] * q[k, j])
            end
        end
    end
    @inbounds for k = 0:nk - 1
        err! += s[k]
    end
    ~@routine
end

# in the gradient pass, the branch of ~@routine restores t and sends its gradient to x
function branchy!(err!: f64, x: f64[:])
    @routine begin
        t ← zeros(f64, 2)
        @inbounds if x[0] > 0.0
            t[0] += x[0] * x[1]
        else
            t[1] += x[1] * x[1]
        end
    end
    @inbounds err! += t[0] * t[1] + t[0]
    ~@routine
end

# t is read by the next pass before this pass changes it: its update must stay,
# although t is not read after the loop (its deallocation is unchecked)
function carried!(err!: f64, x: f64[:])
    t ← 0.0
    for i = 0:length(x) - 1
        err! += t * t
        @inbounds t += x[i]
    end
    t → 0.0
end

# q[k] is written by one pass and read by the next (q[k - 1]): not private
function shifted!(err!: f64, x: f64[:])
    q ← zeros(f64, length(x))
    @inbounds for k = 1:length(x) - 1
        err! += q[k - 1] * 2.0
        q[k] += x[k] + q[k - 1]
    end
    @inbounds for k = 1:length(x) - 1
        q[k] -= 2.0
    end
    q → zeros(f64, length(x))
end

# NiLang's recurrence in an ancilla array: the uncomputing loop writes s[i] and reads
# s[i - 1], below what any earlier pass of it wrote: dead (the computing loop, whose
# next pass reads what this one wrote, is kept)
function recurrence!(out!: f64, r: f64, s0: f64, n: i64)
    @routine begin
        s ← zeros(f64, n + 1)
        @inbounds s[0] += s0
        @inbounds for i = 1:n
            s[i] += r * s[i - 1] * (1.0 - s[i - 1])
        end
    end
    out! += s[n]
    ~@routine
end

# downward, reading above: pass i reads s[i + 1], which pass i + 1 wrote: kept
function downward!(out!: f64, x: f64[:])
    s ← zeros(f64, length(x) + 1)
    @inbounds for i = length(x) - 1:-1:0
        s[i] += x[i] + s[i + 1]
    end
    @inbounds out! += s[0]
    @inbounds for i = length(x) - 1:-1:0
        s[i] -= x[i] + s[i + 1]
    end
    s → zeros(f64, length(x) + 1)
end

# a step of 2 reading one below: no pass reads what an earlier one wrote
function strided!(out!: f64, x: f64[:])
    s ← zeros(f64, length(x) + 1)
    @inbounds for i = 1:2:length(x) - 1
        s[i] += x[i] * 2.0
        out! += s[i - 1] * s[i]
        s[i] -= x[i] * 2.0
    end
    s → zeros(f64, length(x) + 1)
end
"""

X = np.array([0.5, -1.25, 2.0])
M = np.array([0.25, 0.75, -1.0])


def _module(name: str, args: list, inverse=False, invcheck=False):
    unit = rlang.loads(SOURCE).unit
    return lower(unit, name, tuple(type_of_value(a) for a in args), inverse, invcheck)


def _updates(module) -> int:
    return sum(isinstance(s, ir.Update) for fn in module.functions.values()
               for s in walk(fn.body))


def test_dead_uncomputation_is_dropped_with_invcheck_off():
    module = _module("norm2!", [0.0, X, M])
    assert _updates(module) == 3
    assert _updates(prune_module(module)) == 2      # the ~@routine's update is gone


def test_uncomputation_that_checks_bounds_is_kept_with_invcheck_off():
    """Without `@inbounds` the uncomputation's indexing is checked (Note [Checks
    invcheck does not turn off]), and a statement that checks is not dropped."""
    unit = rlang.loads(SOURCE.replace("@inbounds ", "")).unit
    module = lower(unit, "norm2!", tuple(type_of_value(a) for a in (0.0, X, M)), False, False)
    assert _updates(prune_module(module)) == _updates(module) == 3


def test_nothing_is_dropped_when_the_deallocation_checks():
    module = _module("norm2!", [0.0, X, M], invcheck=True)
    assert prune_module(module) is module


def test_printing_and_while_loops_are_kept():
    for name, args in (("loud!", [0.0, X]), ("counted!", [0.0, 3])):
        module = _module(name, args)
        assert sum(isinstance(s, (ir.Print, ir.While)) for fn in module.functions.values()
                   for s in walk(fn.body)) == \
            sum(isinstance(s, (ir.Print, ir.While)) for fn in prune_module(module)
                .functions.values() for s in walk(fn.body))


def test_quiet_calls_in_dead_uncomputation_are_dropped():
    module = _module("outer!", [0.0, X])
    outer = next(fn for fn in module.functions.values() if fn.name == "outer!")
    pruned = next(fn for fn in prune_module(module).functions.values()
                  if fn.name == "outer!")
    calls = [sum(isinstance(s, ir.Call) for s in walk(f.body)) for f in (outer, pruned)]
    assert calls == [4, 2]


def test_uncalls_that_allocate_what_may_be_negative_are_kept():
    """Note [Allocations nobody reads]: `zeros(f64, k)` of a parameter k can fail."""
    module = _module("outer_sized!", [0.0, X, 2])
    outer = next(fn for fn in module.functions.values() if fn.name == "outer_sized!")
    pruned = next(fn for fn in prune_module(module).functions.values()
                  if fn.name == "outer_sized!")
    calls = [sum(isinstance(s, ir.Call) for s in walk(f.body)) for f in (outer, pruned)]
    assert calls == [2, 2]
    for backend in ("interp", "llvm"):
        m = rlang.loads(SOURCE, backend=backend, invcheck=False)
        assert m.outer_sized_(0.0, X, 2)[0] == X[0]
        with pytest.raises(rlang.RlangError, match="negative|size|extent"):
            m.outer_sized_(0.0, X, -1)


def test_zero_gradient_updates_are_dropped():
    """In the gradient pass the recomputation adds xc's zero gradient to x's and m's."""
    module = adjoint_module(_module("norm2!", [0.0, X, M], inverse=True))
    assert _updates(module) - _updates(drop_zero_updates(module)) == 2


def test_zero_seeds_scaled_by_constants_are_zero():
    """x's gradient from `q += 2.0 x` and q's from the product `q * q` (one update,
    q being read twice: Note [Elements read more than once]; its seed is a temporary,
    0.5 times s's zero gradient) add nothing in the recomputation; in a loop, each
    of them kept would make the others unknown on the next pass."""
    rows = np.arange(6.0).reshape(2, 3)
    module = adjoint_module(_module("rows!", [0.0, rows], inverse=True))
    pruned = drop_zero_updates(module)
    assert _updates(module) - _updates(pruned) == 2


def test_a_zero_seed_times_an_infinite_constant_is_not_known_zero():
    zero, inf = ir.Var("g", "f64"), ir.Const(float("inf"), "f64")
    body = (ir.Alloc(zero, ir.Const(0.0, "f64")),
            ir.Update(ir.VarPlace(ir.Var("y·grad", "f64")), "+=",
                      ir.Binary("*", ir.Read(zero), inf, "f64")),
            ir.Update(ir.VarPlace(ir.Var("y·grad", "f64")), "+=",
                      ir.Binary("*", ir.Const(2.0, "f64"), ir.Read(zero), "f64")))
    fn = ir.Function("f", "f", False, (), body)
    module = drop_zero_updates(ir.Module("f", {"f": fn}, []))
    assert [type(s).__name__ for s in module.functions["f"].body] == ["Alloc", "Update"]


def _targets(module, symbol_part: str) -> list:
    """The names of the variables the updates of one function change, in order."""
    fn = next(f for symbol, f in module.functions.items() if symbol_part in symbol)
    return [s.target.var.name for s in walk(fn.body) if isinstance(s, ir.Update)]


def test_uncomputation_of_private_slices_is_dropped_in_the_gradient_pass():
    """In the adjoint of ~@routine each pass over k reads q[k, ·] for the chain rule
    of `s[k] -= 0.5 q q`; the updates that restore q[k, j] and s[k] are dead, as no
    later pass reads slice k (Note [Liveness in for loops])."""
    rows = np.arange(6.0).reshape(2, 3)
    module = drop_zero_updates(adjoint_module(_module("rows!", [0.0, rows], inverse=True)))
    before = _targets(module, "rows")
    after = _targets(prune_module(module), "rows")
    assert before.count("q") == 2 and before.count("s") == 2       # compute, restore
    assert after.count("q") == 1 and after.count("s") == 1         # compute only
    assert after.count("x·grad") == before.count("x·grad") == 1


def test_dead_updates_in_branches_are_dropped():
    module = drop_zero_updates(adjoint_module(_module("branchy!", [0.0, X], inverse=True)))
    before, after = _targets(module, "branchy"), _targets(prune_module(module), "branchy")
    assert before.count("t") == 4 and after.count("t") == 2        # compute, restore
    # x[0]·x[1] gives two updates, x[1]·x[1] one (Note [Elements read more than once])
    assert before.count("x·grad") == after.count("x·grad") == 3


def test_updates_read_by_the_next_pass_are_kept():
    module = _module("carried!", [0.0, X])
    assert _targets(prune_module(module), "carried") == ["err!", "t"]
    module = _module("shifted!", [0.0, X])      # the second loop's `q[k] -= 2.0` is dead
    assert _targets(module, "shifted") == ["err!", "q", "q"]
    assert _targets(prune_module(module), "shifted") == ["err!", "q"]


def test_uncomputation_that_reads_only_below_what_earlier_passes_wrote_is_dropped():
    module = _module("recurrence!", [0.0, 2.5, 0.3, 50])
    assert _targets(module, "recurrence") == ["s", "s", "out!", "s", "s"]
    assert _targets(prune_module(module), "recurrence") == ["s", "s", "out!"]


def test_which_shifted_slices_are_private():
    """downward!: pass i reads s[i + 1], which the pass before wrote, so s is not
    private (its uncomputation is still dropped: what it reads only feeds dead
    updates); strided!: a step of 2 never reads what an earlier pass wrote."""
    from rlang.ir.prune import _private_arrays

    def private(module) -> set:
        loop = next(s for s in module.functions[module.entry].body if isinstance(s, ir.For))
        return {v.name for v in _private_arrays(loop)}

    downward = _module("downward!", [0.0, X])
    assert private(downward) == {"x"}
    assert _targets(prune_module(downward), "downward") == ["s", "out!"]
    assert private(_module("strided!", [0.0, X])) == {"s", "x"}
    assert private(_module("shifted!", [0.0, X])) == {"x"}


@pytest.mark.parametrize("name,args", [("recurrence!", (0.0, 2.5, 0.3, 40)),
                                       ("downward!", (0.0, X)), ("strided!", (0.0, X))])
def test_pruned_recurrences_agree_with_the_interpreter(name, args):
    compiled = rlang.loads(SOURCE, backend="llvm", invcheck=False)
    interpreted = rlang.loads(SOURCE, backend="interp", invcheck=False)
    function = name.replace("!", "_")
    ours = getattr(compiled, function)(*[a.copy() if isinstance(a, np.ndarray) else a
                                         for a in args])
    theirs = getattr(interpreted, function)(*[a.copy() if isinstance(a, np.ndarray) else a
                                              for a in args])
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-14)
    grads = rlang.gradient(getattr(compiled, function), args, "out!")
    expected = rlang.gradient(getattr(interpreted, function), args, "out!")
    for a, b in zip(grads, expected):
        if b is not None:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-300)


def test_gradient_sums_are_reassociable_and_nothing_else():
    from rlang.backends.llvm.backend import build_derivative

    unit = rlang.loads(SOURCE).unit
    types = (type_of_value(0.0), type_of_value(X), type_of_value(M))
    grad_ir, grad_llvm = build_derivative(unit, "norm2!", types, False, False, "grad")
    updates = [s for fn in grad_ir.functions.values() for s in walk(fn.body)
               if isinstance(s, ir.Update)]
    assert {s.target.var.name for s in updates if s.reassociable} == \
        {"x·grad", "m·grad", "xc·grad"}
    assert not any(s.reassociable and not s.target.var.name.endswith("·grad")
                   for s in updates)
    assert "fadd reassoc" in str(grad_llvm)
    forward = lower(unit, "norm2!", types, False, False)
    assert not any(getattr(s, "reassociable", False) for fn in forward.functions.values()
                   for s in walk(fn.body))


@pytest.mark.parametrize("invcheck", [True, False])
def test_results_are_the_interpreters(invcheck):
    interp = rlang.loads(SOURCE, invcheck=invcheck)
    llvm = rlang.loads(SOURCE, backend="llvm", invcheck=invcheck)
    cases = [("norm2!", [0.0, X, M]), ("counted!", [0.0, 4]), ("outer!", [0.0, X]),
             ("rows!", [0.0, np.arange(6.0).reshape(2, 3) - 2.5]),
             ("branchy!", [0.0, X]), ("branchy!", [0.0, -X]),
             ("carried!", [0.0, X]), ("shifted!", [0.0, X])]
    for name, args in cases:
        if invcheck and name in ("carried!", "shifted!"):
            continue                    # their deallocations fail (checked elsewhere)
        want = getattr(interp, name)(*args)
        got = getattr(llvm, name)(*args)
        assert got[0] == pytest.approx(want[0], rel=1e-12)
        if name in ("carried!", "shifted!"):
            continue                    # not reversible: they free nonzero ancillas
        back = (~getattr(llvm, name))(*got)
        assert back[0] == pytest.approx(0.0, abs=1e-12)
        if name != "counted!":
            assert_same_gradients(rlang.gradient(getattr(llvm, name), args, loss="err!"),
                                  rlang.gradient(getattr(interp, name), args, loss="err!"),
                                  name)
    for module in (interp, llvm):
        out = io.StringIO()
        with redirect_stdout(out):
            getattr(module, "loud!")(0.0, X)
        assert out.getvalue() == "t 1.0\nt 1.0\n"


LOOP_IR = """
define void @add(ptr noalias %a, ptr noalias %b, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %pa = getelementptr double, ptr %a, i64 %i
  %pb = getelementptr double, ptr %b, i64 %i
  %x = load double, ptr %pa
  %y = load double, ptr %pb
  %s = fadd double %x, %y
  store double %s, ptr %pa
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""


def test_loop_remainders_are_not_vectorised_and_llvm_is_left_as_it_was():
    """Note [Scalar loop remainders] (backends/llvm/jit.py): our pipeline vectorises
    the loop but not its remainder; a pipeline run afterwards (Numba's, in the same
    process) gets LLVM's default back."""
    import llvmlite.binding as llvm

    from rlang.backends.llvm import jit as llvm_jit

    machine = llvm_jit.target_machine()
    ours = str(llvm_jit.optimise(LOOP_IR, machine))
    assert "vector.body" in ours and "vec.epilog" not in ours
    module = llvm.parse_assembly(LOOP_IR)
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    assert "vector.body" in str(module) and "vec.epilog" in str(module)


ZERO_LOOP_IR = """
define void @clear(ptr %a, i64 %n) {
entry:
  %empty = icmp sle i64 %n, 0
  br i1 %empty, label %exit, label %loop
loop:
  %i = phi i64 [0, %entry], [%next, %loop]
  %p = getelementptr i64, ptr %a, i64 %i
  store i64 0, ptr %p
  %next = add i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret void
}
"""

SMALL_ANCILLA = """
function prefix!(out!: f64, v: f64[:])
    @routine begin
        ms ← zeros(f64, length(v))
        ms[0] += v[0]
        for k = 1:length(v) - 1
            ms[k] += max(ms[k - 1], v[k])
        end
    end
    out! += ms[length(v) - 1]
    ~@routine
end
"""


def test_stack_ancillas_are_zeroed_without_memset_and_llvm_is_left_as_it_was():
    """Note [Zeroing without memset] (backends/llvm/ancillas.py): a small ancilla is
    zeroed by 8-byte stores that loads can be forwarded from, in a loop our
    pipeline neither vectorises nor turns into a memset call; a pipeline run
    afterwards (Numba's) still makes the memset."""
    import llvmlite.binding as llvm

    from rlang.backends.llvm import jit as llvm_jit
    from rlang.backends.llvm.emit import emit_module
    from rlang.ir.nodes import ArrayType
    from rlang.lower.statements import lower

    machine = llvm_jit.target_machine()
    unit = rlang.loads(SMALL_ANCILLA).unit
    for invcheck in (False, True):
        module = emit_module(lower(unit, "prefix!", ("f64", ArrayType("f64", 1, True)),
                                   False, invcheck))
        # (memsets of a constant size become plain stores: no call); the zeroing
        # loop is not vectorised either (its wide stores can fail to forward too)
        # (the heap's kept blocks are zeroed with memset in rev_block_take alone:
        # Note [Large ancillas kept between calls], backends/llvm/kept_blocks.py)
        optimised = llvm_jit.optimise(str(module), machine)
        assembly = machine.emit_assembly(optimised)
        take = re.search(r"^rev_block_take:.*?^\.Lfunc_end\d+:", assembly, re.S | re.M)
        if take:
            assembly = assembly[:take.start()] + assembly[take.end():]
        assert "memset" not in assembly
        assert not re.search(r"store <\d+ x i64> zeroinitializer", str(optimised))
    assert "memset" not in str(llvm_jit.optimise(ZERO_LOOP_IR, machine))
    module = llvm.parse_assembly(ZERO_LOOP_IR)
    builder = llvm.create_pass_builder(machine, llvm.create_pipeline_tuning_options(
        speed_level=3))
    builder.getModulePassManager().run(module, builder)
    assert "memset" in str(module)
    m = rlang.loads(SMALL_ANCILLA, backend="llvm")
    assert m["prefix!"](0.0, np.array([1.0, 3.0, 2.0]))[0] == 3.0
