"""The adjoint transform: compiled gradients by running inverses (LANGUAGE.md §9).

`adjoint_module(module)` takes the lowered IR of ~f (and of everything it calls) and
returns IR in which every float variable carries a gradient shadow (ad/shadow.py):
the IR form of `gradient_interpreter.GradInterpreter`.  The entry's parameters are those of ~f
followed by the gradients of its float parameters; called with f's outputs and the
loss's gradient seeded to 1, it restores the inputs and leaves ∂loss/∂input in the
gradient parameters.  Derived symbols are `rev_grad_…` (`rev_grad_inv_f__f64` is
the gradient pass of `f` for f64 arguments).

The statement rules are those of Note [Adjoints of executed statements] in
rlang/ad/gradient_interpreter.py, statement for statement, so compiled and interpreted gradients
agree.  An expression's chain rule is unrolled at compile time: its float nodes are
evaluated once into temporaries (`materialise`, as the interpreter records them),
then each operand receives `seed · ∂node/∂operand`, with the partial derivatives
traced from the primitive registry (rlang/ad/symbolic.py).  Where a seed is zero the
interpreter does not descend; here an update's chain rule runs in a branch where its
seed is nonzero, and the seeds inside it guard their products to zero
(`ir.Guarded`), so that an infinite partial derivative behind a zero seed gives 0,
not NaN, in both (Note [Zero seeds], rlang/ir/guards.py).

Note [Reassociable gradient sums]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A chain-rule update `g_v += seed · ∂e/∂v` only adds a term to a gradient; the
interpreter adds the terms in the order the backward run meets them.  In a loop
that order is a serial chain: the gradient pass of GMM's objective added
`xc·grad[k, c] += icf[k, off + r] · qx·grad[k, r]` over r one dependent add at a
time, half of its run time at d = 64.  These updates are marked `reassociable`, and
the llvm backend gives their additions the `reassoc` flag, so that LLVM may keep
several partial sums (and vectorise the loop).  Gradients then differ from the
interpreter's in rounding only, which LANGUAGE.md allows for floats (backends agree
to a tolerance; the tests compare within 1e-12 of the largest entry).  Values, and
with them every restored input, are still computed in the interpreter's order.

Note [Seeds of freed ancillas]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A gradient pass frees what the forward allocated (`k ← e` runs as `k → e`) and
sends k's gradient into e.  The interpreter does not descend where that gradient is
zero, and the pass now says so as it does for an update: the chain rule is a seed
branch (`when_nonzero`), whose products need no guard at the top; the guard pass
turns it into selects where the loop vectorises (Note [Zero seeds]).  Before, it was
guarded products alone, so a serial loop paid a compare, a select and a
read-modify-write of every gradient the ancilla's expression reads, in every pass,
seed or not.  GradBench's RK4 step (evals/ode.rev) frees six stages an element: the
seed of y's last element reaches 4 elements further down per step, so all but about
40 of the 10^4 elements have zero seeds, and the pass ran the stages' selects for
all of them: 1.10–1.20 ms, now 0.42 ms (JAX's gradient 0.69–0.76 ms).  A leaf (`k ←
x`) adds its seed unguarded, as before.

Note [Elements read more than once]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The interpreter sends a seed down an expression tree and adds one term to a view's
gradient for each read of it: `s[i] += r·s[i-1]·(1 - s[i-1])` gives s[i-1] the
terms seed·(1 - s)·r and −seed·(r·s).  An array element read more than once gets
one update here: g_v += seed · P, P being the sum over the reads of the product of the partial
derivatives on the path from the root (computed without the seed, guarded to 0
where a path's product so far is 0, as the interpreter stops where a seed is).  The
two differ in rounding only (the reassociation of Note [Reassociable gradient
sums], and a seed multiplied last rather than first, so also where a product
overflows or underflows midway).  It is what a hand-written adjoint does, and it
matters where a gradient decays: near the logistic map's fixed point s = 0.6 (r =
2.5), the terms are seed·1.0 and −seed·1.5, and once the seed is the smallest
subnormal d their sum d − 2d = −d never reaches zero, so every later pass of a
2·10^6-step recurrence multiplied subnormals (microcode assists on Intel cores: its
gradient took 205 ms, 57× Numba's forward); seed · (−0.5) rounds to zero, and the
pass takes 12 ms.  Reads of other views keep the seed sent down, and so do scalars
read more than once: with them too, GradBench's saddle (whose nested gradients
differentiate `x0 * x0 + …` and its gradient pass again) ran 20% slower (rr 1.8 →
2.2–2.3 ms), for no cause found yet; a chain of gradients through the elements of
an array, loop pass after loop pass, is the case the rule is for.
"""
from __future__ import annotations

import math
from dataclasses import replace

from ..ir import nodes as ir
from ..ir.guards import when_nonzero
from ..primitives import INSTRUCTION_TABLE, UPDATE_TABLE
from .ir_numbers import IRNumber
from .nested_ir import hvp_body
from .shadow import ShadowFunction, derive_module, place_value, zero
from .symbolic import FLOATS, as_f64, is_one, partials
from .symbols import GRAD


def adjoint_module(module: ir.Module) -> ir.Module:
    """The gradient-carrying version of every function of `module` (the IR of ~f)."""
    return derive_module(module, AdjointFunction)


def scaled(seed, partial, guarded: bool = True):
    """seed · partial, zero wherever the seed is zero (`guarded`: also where the
    partial is not finite; not needed where the seed is known to be nonzero)."""
    if is_one(partial):
        return seed
    product = ir.Binary("*", seed, partial, "f64")
    if isinstance(partial, ir.Const) and math.isfinite(partial.value):
        if partial.value == -1.0:
            return ir.Unary("-", seed, "f64")
        return product
    return ir.Guarded((seed,), product) if guarded else product


def path_product(prefix, partial):
    """prefix · partial along a path from the root, 0 where the prefix is 0 (a
    constant prefix folded: 1 and −1 give the partial and its negation)."""
    if isinstance(prefix, ir.Const):
        if prefix.value == 0.0:
            return prefix
        if isinstance(partial, ir.Const):
            return ir.Const(prefix.value * partial.value, "f64")
        if prefix.value == 1.0:
            return partial
        if prefix.value == -1.0:
            return ir.Unary("-", partial, "f64")
    return scaled(prefix, partial)


def _subtree(node) -> list:
    """The nodes of an expression, parents before their operands, not looking into
    the indices of loads (a stack of its own: a 30,000-term sum is a deep tree)."""
    order, pending = [], [node]
    while pending:
        e = pending.pop()
        order.append(e)
        if not isinstance(e, (ir.Read, ir.Load)):
            pending.extend(reversed(ir.operands(e)))
    return order


def leaf_key(leaf):
    """What makes two reads reads of the same view: the leaf without its checks."""
    return ir.unchecked(leaf)


def repeated_leaves(node) -> frozenset:
    """The keys of the array elements `node` reads more than once (Note [Elements read
    more than once]: scalars keep a term a read)."""
    seen, repeated = set(), set()
    for leaf in _subtree(node):
        if isinstance(leaf, ir.Load) and leaf.type in FLOATS:
            key = leaf_key(leaf)
            (repeated if key in seen else seen).add(key)
    return frozenset(repeated)


def leaf_reach(node, shared: frozenset) -> dict:
    """id(n) → (whether n reads an element of `shared`, whether it reads another
    float view) for every node n of `node`, in one walk."""
    reach: dict = {}
    for e in reversed(_subtree(node)):          # operands before their parents
        if isinstance(e, (ir.Read, ir.Load)):
            inside = isinstance(e, ir.Load) and e.type in FLOATS and leaf_key(e) in shared
            reach[id(e)] = (inside, e.type in FLOATS and not inside)
        else:
            below = [reach[id(x)] for x in ir.operands(e)]
            reach[id(e)] = (any(b[0] for b in below), any(b[1] for b in below))
    return reach


class AdjointFunction(ShadowFunction):
    kind = GRAD

    def accumulates(self, k: int) -> bool:
        return k not in self.fn.written      # a read-only view's gradient is added to

    def derivative_body(self) -> tuple:
        """A derivative function's adjoint: a Hessian-vector product (nested_ir.py)."""
        return tuple(hvp_body(self))

    def derived_derivative(self):
        d = self.fn.derivative
        return None if d is None else replace(d, hvp=True)

    # ------------------------------------------------------------ chain rule
    def backprop(self, node, seed, values: dict, guarded: bool = True) -> list:
        """Statements adding seed · ∂node/∂leaf to the gradient of every view `node`
        reads; `values` holds the nodes' values (from `materialise`).  Without
        `guarded`, the caller runs them only where the seed is nonzero (Note [Zero
        seeds], rlang/ir/guards.py).  An array element read more than once gets one
        update, seed · (the sum of its paths' partials) (Note [Elements read more
        than once])."""
        if isinstance(node, (ir.Read, ir.Load)):
            place = self.leaf_place(node)
            return [] if place is None else [ir.Update(place, "+=", seed, reassociable=True)]
        shared = repeated_leaves(node)
        if not shared:
            return self.push_seed(node, seed, values, guarded, None)
        reach = leaf_reach(node, shared)
        return self.push_seed(node, seed, values, guarded, reach) + \
            self.shared_updates(node, seed, values, guarded, reach)

    def push_seed(self, node, seed, values: dict, guarded: bool, reach: dict | None) -> list:
        """The chain rule from the top: each operand of `node` receives seed ·
        ∂node/∂operand, a temporary where it is not a leaf; with `reach`
        (`leaf_reach`), only operands that read a view other than the shared ones."""
        operands = ir.operands(node)
        shallow = ir.with_operands(node, tuple(values[id(x)] for x in operands))
        out = []
        for k, partial in partials(shallow):
            child = operands[k]
            if reach is not None and not reach[id(child)][1]:
                continue
            child_seed = scaled(seed, partial, guarded)
            if isinstance(child, (ir.Read, ir.Load)):
                out += self.backprop(child, child_seed, values)
                continue
            var, alloc = self.temp(child_seed, "seed")
            out += [alloc] + self.push_seed(child, ir.Read(var), values, True, reach) + \
                [ir.Dealloc(var, None, None)]
        return out

    def shared_updates(self, node, seed, values: dict, guarded: bool, reach: dict) -> list:
        """One update for each element `node` reads more than once: g_v += seed · Σ
        (the product of the partial derivatives on each path from `node` to a read
        of v)."""
        found: dict = {}
        allocs, temps = [], []
        self.path_partials(node, None, values, reach, found, allocs, temps)
        updates = []
        for leaf, paths in found.values():
            place = self.leaf_place(leaf)
            if place is not None:
                total = paths[0]
                for path in paths[1:]:
                    total = ir.Binary("+", total, path, "f64")
                updates.append(ir.Update(place, "+=", scaled(seed, total, guarded),
                                         reassociable=True))
        return allocs + updates + [ir.Dealloc(v, None, None) for v in reversed(temps)]

    def path_partials(self, node, prefix, values: dict, reach: dict, found: dict,
                      allocs: list, temps: list) -> None:
        """Add to `found` (key → (leaf, [path partials])) the partial derivative of
        every read of a shared element under `node` (`reach`: `leaf_reach`),
        `prefix` being ∂root/∂node (None: 1), guarded to 0 where a prefix is 0 as
        the interpreter stops where a seed is."""
        operands = ir.operands(node)
        shallow = ir.with_operands(node, tuple(values[id(x)] for x in operands))
        for k, partial in partials(shallow):
            child = operands[k]
            path = partial if prefix is None else path_product(prefix, partial)
            if not reach[id(child)][0]:
                continue
            if isinstance(child, ir.Load):
                found.setdefault(leaf_key(child), (child, []))[1].append(path)
                continue
            if not isinstance(path, (ir.Const, ir.Read)):
                var, alloc = self.temp(path, "partial")
                allocs.append(alloc)
                temps.append(var)
                path = ir.Read(var)
            self.path_partials(child, path, values, reach, found, allocs, temps)

    def leaf_place(self, leaf):
        """The gradient place of a view an expression reads (None: no gradient)."""
        if isinstance(leaf, ir.Read):
            return self.shadow_place(ir.VarPlace(leaf.var, leaf.field))
        return self.shadow_place(ir.ElemPlace(leaf.var, leaf.indices, None, leaf.field))

    def gradient_into(self, expr, seed) -> list:
        """Statements sending `seed` into `expr` (evaluated again, unchecked), in a
        branch where the seed is nonzero when the chain rule forms products
        (Note [Seeds of freed ancillas])."""
        expr = ir.unchecked(expr)
        allocs, temps, values = [], [], {}
        self.materialise(expr, allocs, temps, values)
        if isinstance(expr, (ir.Read, ir.Load)):
            chain = self.backprop(expr, seed, values)
        else:
            chain = when_nonzero((seed,), self.backprop(expr, seed, values, guarded=False))
        return allocs + chain + self.free_temps(temps)

    # ------------------------------------------------------------ statements
    def _update(self, stmt: ir.Update) -> list:
        """Executed `y -= e` (forward `y += e`): y -= e; g_v += g_y · ∂e/∂v.
        Executed `y += e`: the same with -g_y."""
        gradient = self.shadow_place(stmt.target)
        rule = UPDATE_TABLE[stmt.op]
        if gradient is None or not rule.differentiable:
            return [stmt]
        allocs, temps, values = [], [], {}
        value = self.materialise(stmt.value, allocs, temps, values)
        g = place_value(gradient)
        seed, seed_alloc = self.temp(g if rule.seed_sign > 0 else ir.Unary("-", g, "f64"),
                                     "seed")
        chain = self.backprop(stmt.value, ir.Read(seed), values, guarded=False)
        return allocs + [ir.Update(stmt.target, stmt.op, value, stmt.alias_checks),
                         seed_alloc] + when_nonzero((ir.Read(seed),), chain) + \
            [ir.Dealloc(seed, None, None)] + self.free_temps(temps)

    def rotation(self, stmt: ir.Instr, shadows: tuple) -> list:
        """ROT / IROT rotate the gradients too and send the registry's
        `read_gradient`, ±(g_a·b − g_b·a), into the angle (values and gradients from
        before)."""
        angle, angle_alloc = self.temp(stmt.angle, "angle")
        values = [IRNumber(as_f64(place_value(p, checked=True))) for p in stmt.places]
        gradients = [IRNumber(place_value(s)) for s in shadows]
        torque = INSTRUCTION_TABLE[stmt.name].read_gradient(values, gradients).expr
        d_angle, d_alloc = self.temp(torque, "d_angle")
        return [angle_alloc, d_alloc,
                ir.Instr(stmt.name, stmt.places, ir.Read(angle), stmt.alias_site),
                ir.Instr(stmt.name, shadows, as_f64(ir.Read(angle)))] + \
            self.gradient_into(stmt.angle, ir.Read(d_angle)) + \
            [ir.Dealloc(d_angle, None, None), ir.Dealloc(angle, None, None)]

    def _alloc(self, stmt: ir.Alloc) -> list:
        """Executed `x ← e` (forward `x → e`): x starts with gradient zero (a copy of
        a stack: as many zero gradients as it has items)."""
        if isinstance(stmt.var.type, ir.StackType):
            return [stmt] + self.zero_stack_shadow(stmt)
        if not isinstance(stmt.var.type, str):        # an array
            return [stmt] + self.shadow_array_alloc(stmt, copy_arrays=False)
        shadow = self.shadow(stmt.var)
        return [stmt] + ([] if shadow is None else [ir.Alloc(shadow, zero(shadow.type))])

    def _dealloc(self, stmt: ir.Dealloc) -> list:
        """Executed `x → e` (forward `x ← e`): g_v += g_x · ∂e/∂v, then x's gradient
        is dropped; an array copied from another array gives its gradient back."""
        shadow = self.shadow(stmt.var)
        if shadow is None:
            return [stmt]
        out = [stmt]
        if isinstance(stmt.var.type, ir.StackType):
            if isinstance(stmt.value, ir.Read) and self.shadow(stmt.value.var) is not None:
                out = self.add_stack(self.shadow(stmt.value.var), shadow) + out
        elif isinstance(stmt.var.type, ir.ArrayType):
            if isinstance(stmt.value, ir.Read) and self.shadow(stmt.value.var) is not None:
                out += self.add_array(self.shadow(stmt.value.var), shadow)
        elif isinstance(stmt.value, ir.ComplexValue):
            out += self.gradient_into(stmt.value.re, ir.Read(shadow, 0)) + \
                self.gradient_into(stmt.value.im, ir.Read(shadow, 1))
        elif stmt.value is not None:
            out += self.gradient_into(stmt.value, ir.Read(shadow))
        return out + [ir.Dealloc(shadow, None, None)]

    def zero_stack_shadow(self, stmt: ir.Alloc) -> list:
        """The shadow of a new stack: empty, or for a copy of a stack (`t ← s`, here
        the inverse of the forward's `t → s`) a zero gradient per item."""
        shadow = self.shadow(stmt.var)
        if shadow is None:
            return []
        out = [ir.Alloc(shadow)]
        if stmt.value is None:
            return out
        zero_item, alloc = self.temp(zero(shadow.type.elem), "zero")
        i = self.fresh_var("i", "i64")
        push = ir.Push(shadow, ir.VarPlace(zero_item), self.memory_site(shadow))
        return out + [alloc, ir.For(i, ir.Const(1, "i64"), ir.Const(1, "i64"),
                                    ir.Dim(stmt.var, None), (push,), None, None),
                      ir.Dealloc(zero_item, None, None)]

    def add_stack(self, target: ir.Var, source: ir.Var) -> list:
        """Add the shadow stack `source`'s items to `target`'s, item by item, leaving
        `source` empty: the executed `t → s` of a stack copied by the forward's
        `t ← s` gives t's gradients back to s (the interpreter's rule,
        rlang/ad/gradient_interpreter.py).  Only where the two have the same length,
        which the deallocation check makes sure of with invcheck on; else t's
        gradients are dropped."""
        elem = target.type.elem
        n, n_alloc = self.temp(ir.Dim(source, None), "n")
        sums = self.fresh_var("sums", ir.ArrayType(elem, 1))
        item, item_alloc = self.temp(zero(elem), "item")
        i = self.fresh_var("i", "i64")
        place = ir.ElemPlace(sums, (ir.Read(i),), None)
        last = ir.Binary("-", ir.Read(n), ir.Const(1, "i64"), "i64")
        down = (last, ir.Const(-1, "i64"), ir.Const(0, "i64"))
        fields = (0, 1) if elem == "complex" else (None,)
        add = tuple(ir.Update(ir.ElemPlace(sums, (ir.Read(i),), None, f), "+=",
                              ir.Read(item, f)) for f in fields)
        body = (ir.Alloc(sums, None, (ir.Read(n),)),
                ir.For(i, *down, (ir.Pop(target, place, None),), None, None),
                ir.For(i, *down, (ir.Pop(source, ir.VarPlace(item), None),) + add, None, None),
                ir.For(i, ir.Const(0, "i64"), ir.Const(1, "i64"), last,
                       (ir.Push(target, place, self.memory_site(target)),), None, None),
                ir.Dealloc(sums, None, None))
        same = ir.Compare("==", ir.Dim(target, None), ir.Read(n))
        return [n_alloc, item_alloc, ir.If((ir.Branch(same, None, body),), (), None),
                ir.Dealloc(item, None, None), ir.Dealloc(n, None, None)]

    def add_array(self, target: ir.Var, source: ir.Var) -> list:
        """`target[i…] += source[i…]` over the common extents (loops over each axis)."""
        indices = [self.fresh_var("i", "i64") for _ in range(target.type.ndim)]
        reads = tuple(ir.Read(i) for i in indices)
        fields = (0, 1) if target.type.elem == "complex" else (None,)
        body = tuple(ir.Update(ir.ElemPlace(target, reads, None, f), "+=",
                               ir.Load(source, reads, None, f)) for f in fields)
        for axis in reversed(range(target.type.ndim)):
            a, b = ir.Dim(target, axis), ir.Dim(source, axis)
            extent = ir.Select(ir.Compare("<", a, b), a, b, "i64")
            last = ir.Binary("-", extent, ir.Const(1, "i64"), "i64")
            body = (ir.For(indices[axis], ir.Const(0, "i64"), ir.Const(1, "i64"), last, body,
                           None, None),)
        return list(body)

