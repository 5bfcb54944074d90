"""The interpreter over gradient-carrying values: the backward half of reverse AD.

`GradInterpreter` runs a function (in practice the inverse of the function being
differentiated) with every float scalar held as a `GVar` and every float array
paired with a gradient array.  It is the interpreter with the statements that move
values replaced by their adjoint versions; control flow, checks and errors are the
interpreter's own.

# Note [Adjoints of executed statements]
Running ~f executes exactly the statements f executed, in reverse order, each
inverted.  So every statement the backward run executes is the inverse of a forward
step, and its adjoint rule moves the value back *and* the gradient forward:

    executed `y -= e` (forward `y += e`):  y -= e;  g_v += g_y · ∂e/∂v  for v read by e
    executed `y += e` (forward `y -= e`):  y += e;  g_v -= g_y · ∂e/∂v
    SWAP:  values and gradients are exchanged
    NEG / CONJ:  value and gradient negated / conjugated
    ROT / IROT / HADAMARD:  the gradient pair is transformed as the value pair is
        (the forward step's transposed Jacobian), and ∂/∂θ is added to the angle
    executed `x → e` (forward `x ← e`):  g_v += g_x · ∂e/∂v, then x is dropped;
        for a copy of an array or a stack (`t ← s`), t's gradients are added to
        s's, item by item
    executed `x ← e` (forward `x → e`):  x is made with gradient zero (a freed
        ancilla's gradient was dropped, LANGUAGE.md §9), a copied stack's items too
    PUSH / POP:  the gradient travels with the value through the stack
    calls:  GVars are passed like values; an expression argument's gradient is
        sent on into the expression when the call returns.

Integer and bool updates carry no gradient.  Expressions are differentiated by
`gvar.backprop`, recomputing them, never by a tape.
"""
from __future__ import annotations

import numpy as np

from ..frontend import ast
from ..interp import ops
from ..errors import ReversibilityError, RlangRuntimeError, RlangTypeError
from ..frontend.ast import is_number_literal
from ..interp.calls import hold_temporaries
from ..interp.evaluate import ElemRef, FieldRef, VarRef, adapt_literal
from ..interp.limits import STACK_ITEM_BYTES
from ..interp.comparisons import check_dealloc
from ..dual import Dual, is_zero, refuse_tangent
from ..gvalue import GVar, value_of
from .gvar import Gradients, backprop, carries_gradient
from ..interp.interpreter import Interpreter
from ..numbers import ULog
from ..interp.instructions import PLAIN, apply_rule, same_kind
from ..primitives import INSTRUCTION_TABLE, UPDATE_TABLE
from ..values import Stack, conform, type_name, zero_of



def wrap(value, grad=0.0):
    """A value as the gradient run holds it: float, complex, fixed and ulog scalars
    become GVars (a ulog's gradient is ∂L/∂log, see gvar's Note [Gradients of ulog
    values])."""
    if type(value) is GVar:
        return value
    if carries_gradient(value):
        return GVar(value, grad)
    return value


def _plain(value):
    """A value without gradients: a GVar's value, a stack of GVars as a stack of
    their values (what the deallocation check compares)."""
    if isinstance(value, Stack):
        return Stack(value.elem, [value_of(item) for item in value.items])
    return value_of(value)


class GradInterpreter(Interpreter):
    """Runs functions over GVar values; see Note [Adjoints of executed statements]."""

    def __init__(self, unit, invcheck: bool = True, sandbox=None):
        super().__init__(unit, invcheck=invcheck, sandbox=sandbox)
        self.grads = Gradients()
        self._stmt.update({
            ast.Update: self._update_adjoint, ast.Instr: self._instr_adjoint,
            ast.Alloc: self._alloc_adjoint, ast.Dealloc: self._dealloc_adjoint,
            ast.Zeros: self._zeros_adjoint, ast.CallStmt: self._call_adjoint,
        })

    def run(self, name: str, values: list, backward: bool) -> list:
        """Run `name` (its inverse when `backward`) on already wrapped values."""
        fn = self.functions[name]
        env = dict(zip((p.name for p in fn.params), values))
        self.run_function(fn, env, backward, call_site=None)
        return [env[p.name] for p in fn.params]

    # ------------------------------------------------------------ refs
    def grad_of(self, ref):
        """The gradient of a view (0.0 for views without one)."""
        if isinstance(ref, VarRef):
            value = ref.env[ref.name]
            if isinstance(value, np.ndarray):
                return self.grads.of(value)
            return value.g if type(value) is GVar else 0.0
        if isinstance(ref, ElemRef):
            grad = self.grads.of(ref.array)
            return 0.0 if grad is None else grad[ref.index]
        base = self.grad_of(ref.base)
        return complex(base).real if ref.field == "re" else complex(base).imag

    def set_grad(self, ref, grad) -> None:
        if isinstance(ref, VarRef):
            value = ref.env[ref.name]
            if type(value) is GVar:
                ref.env[ref.name] = GVar(value.x, grad)
        elif isinstance(ref, ElemRef):
            array_grad = self.grads.of(ref.array)
            if array_grad is not None:
                array_grad[ref.index] = grad
        else:
            base = complex(self.grad_of(ref.base))
            part = grad.real if isinstance(grad, complex) else grad
            self.set_grad(ref.base, complex(part, base.imag) if ref.field == "re"
                          else complex(base.real, part))

    def add_gradient(self, ref, amount) -> None:
        """Add `amount` to the gradient of a view (nothing for integer views)."""
        if isinstance(ref, VarRef) and isinstance(ref.env[ref.name], np.ndarray):
            return          # whole arrays are read only through their elements
        current = self.grad_of(ref)
        if current is None:
            return
        if isinstance(amount, complex) and not isinstance(self.value(ref), complex):
            amount = amount.real        # a real view: ∂L/∂x is the real part
        self.set_grad(ref, current + amount)

    def value(self, ref):
        if isinstance(ref, FieldRef):
            whole = value_of(self.value(ref.base))
            return whole.real if ref.field == "re" else whole.imag
        return value_of(ref.get())

    def set_value(self, ref, new) -> None:
        """Store a new value in a view, keeping its gradient."""
        if isinstance(ref, VarRef):
            current = ref.env[ref.name]
            ref.env[ref.name] = GVar(new, current.g) if type(current) is GVar else wrap(new)
        elif isinstance(ref, ElemRef):
            ref.set(new)
        else:
            refuse_tangent(new, "complex")
            whole = value_of(self.value(ref.base))
            self.set_value(ref.base, complex(new, whole.imag) if ref.field == "re"
                           else complex(whole.real, new))

    # ------------------------------------------------------------ updates
    def _update_adjoint(self, stmt: ast.Update, env):
        ev = self.evaluator
        ref = ev.ref(stmt.target, env)
        old = self.value(ref)
        memo = {}
        rhs = self.update_value(stmt, ref, old, env, memo)
        self.set_value(ref, ops.accumulate(stmt.op, old, rhs, stmt.span, ref))
        rule = UPDATE_TABLE[stmt.op]
        if not rule.differentiable:
            return
        grad = self.grad_of(ref)
        if is_zero(grad):
            return
        if rule.log_space and type(rhs) is not ULog:
            grad = grad / (rhs if type(rhs) is Dual else float(rhs))   # ℓ ± log r: 1/r
        backprop(ev, stmt.value, env, rule.seed_sign * grad, self, memo)

    # ------------------------------------------------------------ instructions
    def _instr_adjoint(self, stmt: ast.Instr, env):
        info = INSTRUCTION_TABLE[stmt.name]
        ev = self.evaluator
        refs = [ev.ref(stmt.args[i], env) for i in info.written]
        if self.invcheck and len(refs) == 2 and refs[0].overlaps(refs[1]):
            raise ReversibilityError(f"{stmt.name} operands `{refs[0].text}` and "
                                     f"`{refs[1].text}` are the same memory", stmt.span)
        ADJOINT_HANDLERS[stmt.name](self, stmt, env, refs)

    def _adjoint_swap(self, stmt, env, refs):
        a, b = refs
        # a field (`z.re`) is never a whole array; its `get` would read a GVar's part
        va, vb = (None if isinstance(r, FieldRef) else r.get() for r in refs)
        if isinstance(va, np.ndarray) and isinstance(vb, np.ndarray):
            ga, gb = self.grads.of(va), self.grads.of(vb)
            saved = va.copy()
            va[...] = vb
            vb[...] = saved
            if ga is not None and gb is not None:
                saved_grad = ga.copy()
                ga[...] = gb
                gb[...] = saved_grad
            return
        x, y = self.value(a), self.value(b)
        if type_name(x) != type_name(y):
            raise RlangTypeError("SWAP needs two values of one type", stmt.span)
        self._run_rule(stmt, env, refs, [x, y])

    def _adjoint_flip(self, stmt, env, refs):
        x = self.value(refs[0])
        if not isinstance(x, bool):
            raise RlangTypeError("FLIP needs a bool", stmt.span)
        self._run_rule(stmt, env, refs, [x])

    def _adjoint_conj(self, stmt, env, refs):
        x = self.value(refs[0])
        if isinstance(x, complex):
            self._run_rule(stmt, env, refs, [x])

    def _adjoint_rule(self, stmt, env, refs):
        """NEG, INC, DEC, ROT, IROT and HADAMARD: the registry's rule alone."""
        self._run_rule(stmt, env, refs, [self.value(r) for r in refs])

    def _run_rule(self, stmt, env, refs, values: list) -> None:
        """Run instruction `stmt` in the gradient pass by its registry entry (Note
        [Instruction rules], rlang/primitives.py): the values by its forward rule; the
        gradients by the same rule where it is "linear"; the read operand (the angle)
        receives `read_gradient`, from the values and gradients before."""
        rule = INSTRUCTION_TABLE[stmt.name]
        read = [self.evaluator.eval(arg, env) for k, arg in enumerate(stmt.args)
                if k not in rule.written]
        new_values = apply_rule(stmt.name, values + read, stmt.span)
        for ref, old, new in zip(refs, values, new_values):
            self.set_value(ref, same_kind(old, new) if rule.in_f64 else new)
        if rule.gradient != "linear":
            return
        grads = [self.grad_of(r) for r in refs]
        new_grads = rule.apply(PLAIN, *grads, *read)
        for ref, grad in zip(refs, new_grads):
            self.set_grad(ref, grad)
        if rule.read_gradient is not None:
            backprop(self.evaluator, stmt.args[rule.arity - 1], env,
                     rule.read_gradient(values, grads), self)

    def _adjoint_push(self, stmt, env, refs):
        stack = refs[0].get()
        if not isinstance(stack, Stack):
            raise RlangTypeError("PUSH needs a stack as its first operand", stmt.span)
        if self.budget is not None:
            self.budget.reserve(STACK_ITEM_BYTES, stmt.span, "a PUSH")
        stack.items.append(GVar(self.value(refs[1]), self.grad_of(refs[1])))
        self.set_value(refs[1], zero_of(stack.elem))
        self.set_grad(refs[1], 0.0)

    def _adjoint_pop(self, stmt, env, refs):
        stack = refs[0].get()
        if not isinstance(stack, Stack):
            raise RlangTypeError("POP needs a stack as its first operand", stmt.span)
        if not stack.items:         # as the plain interpreter (rlang/interp/instructions.py)
            kind = ReversibilityError if self.invcheck else RlangRuntimeError
            raise kind(f"POP from the empty stack `{refs[0].text}`", stmt.span)
        if self.invcheck and self.value(refs[1]) != zero_of(stack.elem):
            raise ReversibilityError(f"POP into `{refs[1].text}`, which must be zero",
                                     stmt.span)
        item = stack.items.pop()
        if self.budget is not None:
            self.budget.release(STACK_ITEM_BYTES)
        self.set_value(refs[1], value_of(item))
        self.set_grad(refs[1], item.g if type(item) is GVar else 0.0)

    # ------------------------------------------------------------ ancillas
    def _alloc_adjoint(self, stmt: ast.Alloc, env):
        super()._alloc(stmt, env)
        value = env[stmt.name]
        if isinstance(value, Stack):        # a copy of a stack: its items' gradients are 0
            env[stmt.name] = Stack(value.elem, [wrap(value_of(item)) for item in value.items])
        else:
            env[stmt.name] = wrap(value)

    def _dealloc_adjoint(self, stmt: ast.Dealloc, env):
        if stmt.name not in env:
            raise ReversibilityError(f"`{stmt.name}` is not allocated", stmt.span)
        current = env[stmt.name]
        if self.invcheck:
            expected = self.expected_value(stmt, env, _plain(current))
            if is_number_literal(stmt.value):
                expected = adapt_literal(expected, value_of(current), stmt.value)
            check_dealloc(stmt.name, _plain(current), _plain(expected), stmt.span)
        if type(current) is GVar and not is_zero(current.g):
            backprop(self.evaluator, stmt.value, env, current.g, self)
        elif isinstance(current, np.ndarray):
            self._backprop_array_copy(current, stmt.value, env)
            self.grads.forget(current)
        elif isinstance(current, Stack):
            self._backprop_stack_copy(current, stmt.value, env)
        self.free(stmt.name, env)

    def _backprop_stack_copy(self, copy: Stack, expr, env):
        """`t ← s` copied a stack: the gradient of each item of t is added to that of
        the item of s at the same height.  Only where the two have the same length
        (the check makes them equal with invcheck on); else t's gradients drop, as in
        compiled code (`AdjointFunction.add_stack`, rlang/ad/adjoint_ir.py)."""
        source = env.get(expr.id) if isinstance(expr, ast.Name) else None
        if not isinstance(source, Stack) or len(source.items) != len(copy.items):
            return
        for k, item in enumerate(copy.items):
            if type(item) is GVar and not is_zero(item.g):
                mine = source.items[k]
                grad = mine.g + item.g if type(mine) is GVar else item.g
                source.items[k] = GVar(value_of(mine), grad)

    def _backprop_array_copy(self, array, expr, env):
        """`a ← b` copied an array, `a ← [x, y]` built one: the gradient flows back."""
        grad = self.grads.of(array)
        if grad is None:
            return
        if isinstance(expr, ast.ArrayLit):
            self._backprop_array_literal(expr, grad, env)
            return
        self._backprop_named_array(expr, grad, env)

    def _backprop_named_array(self, expr, grad, env) -> bool:
        """Add `grad` to the gradient of the array `expr` names; False when `expr`
        names no array."""
        source = env.get(expr.id) if isinstance(expr, ast.Name) else None
        if not isinstance(source, np.ndarray):
            return False
        source_grad = self.grads.of(source)
        if source_grad is not None:
            source_grad += grad
        return True

    def _backprop_array_literal(self, literal: ast.ArrayLit, grad, env):
        for i, item in enumerate(literal.items):
            if isinstance(item, ast.ArrayLit):
                self._backprop_array_literal(item, grad[i], env)
            elif self._backprop_named_array(item, grad[i], env):
                continue                    # an array as a row of the literal
            else:               # an element: a NumPy scalar, or a Dual in a Hessian run
                seed = grad[i]
                backprop(self.evaluator, item, env,
                         seed.item() if isinstance(seed, np.generic) else seed, self)

    def _zeros_adjoint(self, stmt: ast.Zeros, env):
        if stmt.inverse:
            for name in stmt.names:
                if name in env:
                    env[name] = value_of(env[name])     # a freed ancilla's gradient drops
        super()._zeros(stmt, env)
        if not stmt.inverse:
            for name in stmt.names:
                env[name] = wrap(env[name])

    # ------------------------------------------------------------ calls
    def _call_adjoint(self, stmt: ast.CallStmt, env):
        fn = self.functions[stmt.func]
        ev = self.evaluator
        refs, values = [], []
        for arg in stmt.args:
            root = ast.view_root(arg)
            ref = ev.ref(arg, env) if root is not None and root.id in env else None
            refs.append(ref)
            if ref is None:
                values.append(wrap(ev.eval(arg, env)))
            elif isinstance(ref, VarRef):
                values.append(ref.get())
            else:
                values.append(wrap(self.value(ref), self.grad_of(ref)))
        held = 0 if self.budget is None else hold_temporaries(self, refs, values, stmt.span)
        callee_env = {}
        for param, value in zip(fn.params, values):
            if conform(value_of(value), param.type, False) is None:
                self.bind_argument(fn, param, value_of(value), False, stmt.span)   # raises
            callee_env[param.name] = value
        self.run_function(fn, callee_env, stmt.inverse, call_site=stmt.span)
        if held:
            self.budget.release(held)
        written = self.written.get(fn.name, frozenset())
        for position, (param, ref, arg, old) in enumerate(zip(fn.params, refs, stmt.args,
                                                              values)):
            new = callee_env[param.name]
            if isinstance(new, (np.ndarray, Stack)):
                if ref is None and isinstance(new, np.ndarray):     # an array literal's
                    self._backprop_array_copy(new, arg, env)       # elements get theirs
                continue                        # shared by reference
            if ref is None:
                if type(new) is GVar and not is_zero(new.g):
                    backprop(ev, arg, env, new.g, self)
            elif position in written:           # written views may not alias: set
                self.set_value(ref, value_of(new))
                self.set_grad(ref, new.g if type(new) is GVar else 0.0)
            elif type(new) is GVar:             # read-only views may repeat: add
                self.add_gradient(ref, new.g - (old.g if type(old) is GVar else 0.0))


#: The gradient interpreter's handler of each instruction of the registry.
ADJOINT_HANDLERS = {
    "SWAP": GradInterpreter._adjoint_swap, "NEG": GradInterpreter._adjoint_rule,
    "INC": GradInterpreter._adjoint_rule, "DEC": GradInterpreter._adjoint_rule,
    "FLIP": GradInterpreter._adjoint_flip, "CONJ": GradInterpreter._adjoint_conj,
    "ROT": GradInterpreter._adjoint_rule, "IROT": GradInterpreter._adjoint_rule,
    "HADAMARD": GradInterpreter._adjoint_rule, "PUSH": GradInterpreter._adjoint_push,
    "POP": GradInterpreter._adjoint_pop,
}
