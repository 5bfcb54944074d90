"""The tangent transform: forward-mode derivatives of IR, for compiled Hessians.

`tangent_module(module)` returns IR in which every float variable carries a tangent
shadow (ad/shadow.py): running it computes the values as before and, in the
tangents, their derivatives along the direction the tangent arguments give — the
IR form of running the interpreter over dual numbers (rlang/dual.py).  Derived
symbols are `rev_tan_…`; the parameters are the function's, then the tangents of
its float parameters.

Hessians are forward over reverse (LANGUAGE.md §9): the tangent transform of f's IR
gives the outputs' tangents, and the tangent transform of the gradient pass
(rlang/ad/adjoint_ir.py) then gives, in the gradients' tangents, a Hessian column.

A tangent is Σ ∂e/∂operand · tangent(operand) over the expression tree, with the
partial derivatives traced from the primitive registry (rlang/ad/symbolic.py), so the
second derivatives come from the same rules as the first.  A `Select` takes the
tangent of the branch it takes; a `Guarded` product (a zero seed skipped by the
gradient pass) is zero only where its guards' tangents are zero too, as a dual
number is zero only when both its parts are (`dual.is_zero`).
"""
from __future__ import annotations

from ..ir import nodes as ir
from ..primitives import INSTRUCTION_TABLE, UPDATE_TABLE
from .ir_numbers import IR_VOCABULARY, IRDual, IRNumber
from .nested_ir import expansion, refuse_third
from .shadow import ShadowFunction, derive_module, place_value, zero
from .symbolic import FLOATS, as_f64, partials
from .symbols import TAN
from ..errors import RlangTypeError
from ..types_rules import BackendUnsupported


def tangent_module(module: ir.Module) -> ir.Module:
    """The tangent-carrying version of every function of `module`."""
    return derive_module(module, TangentFunction)


def _sum(terms: list):
    total = None
    for term in terms:
        total = term if total is None else ir.Binary("+", total, term, "f64")
    return total


# Note [Rotations of dual numbers]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The interpreter's Hessian runs ROT(a, b, θ) on dual numbers: a' = c·a − s·b and
# b' = s·a + c·b with c = cos θ and s = ±sin θ duals, so the new tangents are
#     ta' = (dc·a + c·ta) − (ds·b + s·tb),   tb' = (ds·a + s·ta) + (dc·b + c·tb)
# with dc = (−sin θ)·dθ and ds = ±(cos θ·dθ).  (The registry writes IROT as
# a' = c·a + s·b, b' = c·b − s·a with s = +sin θ: the same sums with the signs moved
# out, which IEEE arithmetic computes bit for bit alike.)  Rounding makes the grouping matter:
# where the exact second derivative is zero (a value the gradient pass restores by
# rotating back), the two backends' results are rounding noise, and a rearranged sum
# (rotate the tangents, then add dθ·(∓b', ±a')) gave noise of another size (1e-9
# against 4e-10 in a generated program).  The same sums in the same order agree.


def _rotated_tangents(name: str, theta, d_theta, values: list, tangents: list) -> tuple:
    """(ta', tb') of Note [Rotations of dual numbers]: the registry's rule of `name`
    run on dual IR expressions (ir_numbers.IRDual), whose tangents are the sums of
    rlang/dual.py's arithmetic."""
    def dual(value, tangent):
        return IRDual(IRNumber(value), IRNumber(tangent))

    operands = [dual(v, t) for v, t in zip(values, tangents)] + [dual(theta, d_theta)]
    new = INSTRUCTION_TABLE[name].apply(IR_VOCABULARY, *operands)
    return tuple(d.tangent.expr for d in new)


class HessianUnsupported(BackendUnsupported, RlangTypeError):
    """A compiled Hessian refused because a fixed or complex value is held: the
    interpreter refuses only where a tangent reaches one, so the default backend
    ("auto") asks it instead (a BackendUnsupported); a type error as before."""


class TangentFunction(ShadowFunction):
    kind = TAN

    def shadow(self, var: ir.Var):
        """As ShadowFunction.shadow; fixed and complex values carry no tangents, as in
        the interpreter's Hessians (`dual.refuse_tangent`), so they are refused.  A
        ulog's shadow is the f64 tangent of its logarithm (Note [Tangents of ulog
        values], rlang/numbers.py): the partials of the IR's log-domain formulas
        (ad/symbolic.py) carry it."""
        t = var.type if isinstance(var.type, str) else var.type.elem
        if t in ("fixed", "complex"):
            raise HessianUnsupported(f"Hessians through {t} values are not supported yet "
                                     "(gradients are)")
        return super().shadow(var)

    def derivative_body(self) -> tuple:
        """A derivative function's tangent: that of its body (nested_ir.py); of the
        adjoint of one, refused (a third derivative)."""
        refuse_third(self.fn)
        return self.body(self.fn.body or tuple(expansion(self.fn)))

    def tangent(self, expr):
        """The tangent of an expression as an f64 expression, or None where it is zero."""
        if expr.type not in FLOATS:
            return None
        if isinstance(expr, (ir.Read, ir.Load)):
            return self.shadow_value(expr)
        if isinstance(expr, ir.Select):
            then, otherwise = self.tangent(expr.then), self.tangent(expr.otherwise)
            if then is None and otherwise is None:
                return None
            return ir.Select(expr.cond, then or zero(), otherwise or zero(), "f64")
        if isinstance(expr, ir.Guarded):
            # zero only where the guards and their tangents are all zero (dual.is_zero)
            value = self.tangent(expr.value)
            tangents = tuple(t for t in map(self.tangent, expr.guards) if t is not None)
            return None if value is None else ir.Guarded(expr.guards + tangents, value)
        operands = ir.operands(expr)
        terms = []
        for k, partial in partials(expr):
            tangent = self.tangent(operands[k])
            if tangent is not None:
                terms.append(ir.Binary("*", partial, tangent, "f64"))
        return _sum(terms)

    # ------------------------------------------------------------ statements
    def _if(self, stmt: ir.If) -> list:
        """A seed branch of the gradient pass (Note [Zero seeds], ir/guards.py) also
        runs where a seed's tangent is nonzero, as a dual seed is zero only when both
        of its parts are; other branches test values only."""
        branches = []
        for b in stmt.branches:
            pre = b.pre
            if isinstance(pre, ir.Nonzero):
                tangents = tuple(t for t in map(self.tangent, pre.values) if t is not None)
                pre = ir.Nonzero(pre.values + tangents)
            branches.append(ir.Branch(pre, b.post, self.body(b.body)))
        return [ir.If(tuple(branches), self.body(stmt.orelse), stmt.site)]

    def _update(self, stmt: ir.Update) -> list:
        shadow = self.shadow_place(stmt.target)
        tangent = None if shadow is None or not UPDATE_TABLE[stmt.op].differentiable else \
            self.tangent(ir.unchecked(stmt.value))
        if tangent is None:
            return [stmt]
        return [stmt, ir.Update(shadow, stmt.op, tangent)]

    def rotation(self, stmt: ir.Instr, shadows: tuple) -> list:
        """ROT / IROT rotate the tangents too; with a tangent dθ of the angle, each new
        tangent is the interpreter's dual-number sum term for term (Note [Rotations of
        dual numbers]), computed from the values and tangents before the rotation."""
        angle, angle_alloc = self.temp(stmt.angle, "angle")
        rotate = ir.Instr(stmt.name, stmt.places, ir.Read(angle), stmt.alias_site)
        d_angle = self.tangent(ir.unchecked(stmt.angle))
        if d_angle is None:
            return [angle_alloc, rotate, ir.Instr(stmt.name, shadows, as_f64(ir.Read(angle))),
                    ir.Dealloc(angle, None, None)]
        d_theta, d_alloc = self.temp(d_angle, "d_angle")
        new_a, new_b = _rotated_tangents(
            stmt.name, as_f64(ir.Read(angle)), ir.Read(d_theta),
            [as_f64(place_value(p)) for p in stmt.places], [place_value(t) for t in shadows])
        (ta, ta_alloc), (tb, tb_alloc) = self.temp(new_a, "tangent"), self.temp(new_b, "tangent")
        return [angle_alloc, d_alloc, ta_alloc, tb_alloc, rotate,
                ir.Instr("SWAP", (shadows[0], ir.VarPlace(ta))),
                ir.Instr("SWAP", (shadows[1], ir.VarPlace(tb))),
                ir.Dealloc(tb, None, None), ir.Dealloc(ta, None, None),
                ir.Dealloc(d_theta, None, None), ir.Dealloc(angle, None, None)]

    def _alloc(self, stmt: ir.Alloc) -> list:
        if not isinstance(stmt.var.type, str):        # an array or a stack
            return [stmt] + self.shadow_array_alloc(stmt, copy_arrays=True)
        shadow = self.shadow(stmt.var)
        if shadow is None:
            return [stmt]
        return [stmt, ir.Alloc(shadow, self.tangent(ir.unchecked(stmt.value)) or zero())]

    def _dealloc(self, stmt: ir.Dealloc) -> list:
        return [stmt] + self.shadow_dealloc(stmt.var)

