"""A compiled gradient's short route: the second and later calls of a gradient with
arguments of kinds seen before (Note [The gradient's short route]).

`quick_gradient(function, args, loss)` is `drivers.gradient(function, args, loss)`
(with `value=True`, `drivers.value_and_gradient`) for such a call, or None where
the call must take the general route (the first call of its kind, a loss that is
not a constant element, an argument to convert, ulog, fixed, complex parts,
stacks, device arrays …).  It never raises where the general route would not, and
raises the general route's errors.

Note [The gradient's short route]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`rlang.grad(f, loss, argnums=1)` on the 10-vertex graph embedding took 42–65 µs a
call for about 9 µs of native work (a 2.3 µs forward, a 6 µs gradient pass): the
rest was the layers a call crossed, each sound on its own: the transform, the
driver (binding, the caller's arrays kept), the backend's refusal guard, the
compiled driver (the plan's key, the loss found again), the backend's call (the
signature again, the aliasing check) and its run.  Everything those layers decide
depends only on the function, the loss and the argument kinds, which the compiled
driver already keys its GradientPlan by (ad/compiled.py), so the plan keeps a
`GradientRoute` with those decisions made: which arguments the function writes
(the read-only check, the arrays kept for the caller, the aliasing rule), and the
forward's entry point.  A call whose arguments have a plan's signature then does
only what cannot be decided ahead: the checks on these arrays (writable, not
sharing memory, the loss element inside them), the copies of the written arrays,
the forward run, the seeded gradient pass (`_gradient_pass`, the general route's
own) and the written arrays put back.  Anything unusual (a read-only array, an
error in a run) leaves the route before anything is changed, or after the
caller's arrays are put back, and the general route then makes the call from the
start, with its errors.  Where the backend has it, the forward and the pass (or
the pass alone) run on one packed buffer (Note [Two entry points on one buffer],
rlang/backends/llvm/paired.py).  Once a call by the route has succeeded on final
code, the backend may give the route a builtin making its whole call
(`GradientRoute.call`, Note [Gradient calls without Python],
rlang/backends/llvm/call_builtins.py), which the route and `rlang.grad` try first.
"""
from __future__ import annotations

import numpy as np

from ..errors import RlangError, RlangTypeError
from ..lower.argument_types import signature_of
from .native_calls import NativeCall, gradient_holders, input_kinds, results_of
from .callers_arrays import put_back, saved_arrays
from .compiled import _gradient_pass, _returned, _without_forward, plan_key, \
    seeded_gradients


def quick_gradient(function, args, loss, value: bool = False):
    """The gradients of a call by its plan's route, or None (see the module
    docstring).  `function` is an `api.Function`, `args` a list or tuple.  With
    `value`, (the loss's final value, the gradients), as `value_and_gradient`."""
    functions = getattr(getattr(function, "module", None), "compiled", None)
    if functions is None or not isinstance(args, (list, tuple)):
        return None
    signature = signature_of(args)
    key = plan_key(function.name, signature, loss, function.inverse)
    plan = functions.plans.get(key) if key is not None else None
    if plan is None:
        return None
    route = plan.route
    if route is None:
        route = plan.route = GradientRoute.of(functions, function, plan, signature)
        if route is None:
            plan.route = False          # (decided once: this plan has no route)
            return None
    return route(list(args), value) if route else None


def route_of(function, args, loss):
    """The route a gradient call of `function` with these arguments and loss took
    (for its builtin, `GradientRoute.call`), or None where it took none."""
    functions = getattr(getattr(function, "module", None), "compiled", None)
    if functions is None or not isinstance(args, (list, tuple)):
        return None
    key = plan_key(function.name, signature_of(args), loss, function.inverse)
    plan = functions.plans.get(key) if key is not None else None
    return (plan.route or None) if plan is not None else None


class GradientRoute:
    """What a gradient call of one plan decides ahead (see the Note)."""

    def __init__(self, functions, function, plan, forward, written: list, signature):
        self.functions, self.plan, self.forward = functions, plan, forward
        self.fn = functions.unit.functions[function.name]
        self.inverse, self.signature = function.inverse, signature
        self.written = written                  # the positions f writes
        self.aliasing = functions.invcheck      # the interpreter's rule (§5)
        self.interpreter = functions.interpreter
        self.n = len(signature)
        # the arrays a pass without the forward run works on copies of
        self.copied = [] if plan.added is None else sorted(
            k for k in plan.added if isinstance(signature[k], tuple))
        # the forward and the pass, or the pass alone, as one packed call (Note [Two
        # entry points on one buffer], backends/llvm/paired.py): made when first
        # needed, False where the backend has none
        self.pass_alone = self.both = None
        # the builtins making the whole call (Note [Gradient calls without Python]),
        # of the gradients and of the value with them: asked for after a call
        # succeeded, False where the backend has none
        self.call = self.value_call = None

    @classmethod
    def of(cls, functions, function, plan, signature):
        """The route of `plan` (made by a call with arguments of `signature`), or
        None where its calls take the general route."""
        if not functions.conforms(function.name, signature, function.inverse) or \
                not plan.constant_loss or not plan.plain or plan.part or plan.log_space \
                or plan.on_device:
            return None
        written = sorted(functions.interpreter.written.get(function.name, ()))
        return cls(functions, function, plan, None, written, signature)

    def __call__(self, args: list, value: bool = False):
        """The gradients (with `value`: the loss's value and the gradients), or None
        (take the general route)."""
        plan, functions = self.plan, self.functions
        call = self.value_call if value else self.call
        if call:
            result = call(*args)
            if result:
                return result
            self.forget_frames()
        if plan.index is not None and not plan.fits(args):
            return None
        for k in self.written:
            if type(args[k]) is np.ndarray and not args[k].flags.writeable:
                return None                 # the general route's error
        if plan.added is not None and not value:    # Note [Gradients without the forward
            result = self._pass_alone(args)          # run]
            if result is not None:
                return result
        if self.forward is None:    # (compiled when first needed: Note [Gradients
            self.forward = functions.conformed(self.fn.name, self.signature,  # without
                                               self.inverse)        # the forward run])
        if self.both is None:
            self.both = functions.paired(self.forward, (plan.native, plan.symbol)) or False
        kept = saved_arrays(args, self.written)
        if self.aliasing:
            self.interpreter.check_argument_aliasing(self.fn, args)
        try:
            if self.both:
                gradients = seeded_gradients(self.plan, args)
                seen = []
                try:
                    new = self.both(args + [g for g in gradients if g is not None],
                                    (lambda outputs: seen.append(self._loss(outputs)))
                                    if value else None)
                except RlangTypeError:      # (a read-only array the entry point found)
                    return None             # the general route's error, with the name
                gradients = tuple(_returned(gradients, new[self.n:]))
                if call is None:
                    self._ask_for_call(self.forward, value)
                return (seen[0], gradients) if value else gradients
            try:
                outputs = functions.run(*self.forward, args)
            except RlangTypeError:
                return None
            if not value:
                return _gradient_pass(functions, plan, outputs)
            return self._loss(outputs), _gradient_pass(functions, plan, outputs)
        finally:
            put_back(kept)

    def _loss(self, outputs: list):
        """The loss's value among the forward run's `outputs` (a Python scalar)."""
        plan = self.plan
        loss = outputs[plan.position] if plan.index is None else \
            outputs[plan.position][plan.index]
        return loss.item() if isinstance(loss, np.generic) else loss

    def _pass_alone(self, args: list):
        """The gradients by the pass alone, on copies of the arrays f adds to, or None
        where it fails (the forward run then goes first: `_without_forward`)."""
        if self.pass_alone is None:
            plan = self.plan
            self.pass_alone = self.functions.paired(None, (plan.native, plan.symbol)) or False
        if not self.pass_alone:
            return _without_forward(self.functions, self.plan, self.fn.name, args,
                                    self.inverse, self.signature)
        outputs = list(args)
        for k in self.copied:
            outputs[k] = outputs[k].copy()
        gradients = seeded_gradients(self.plan, outputs)
        try:
            new = self.pass_alone(outputs + [g for g in gradients if g is not None])
        except RlangError:
            return None
        if self.call is None:
            self._ask_for_call(None, False)
        return tuple(_returned(gradients, new[self.n:]))

    def forget_frames(self) -> None:
        """Drop the frame reports of a failed run of the builtin (the route's run
        comes next, and its error must show its own)."""
        self.plan.native.forget_frames()
        if self.forward:
            self.forward[0].forget_frames()

    def _ask_for_call(self, forward, value: bool) -> None:
        """Ask the backend for the builtin of this route's calls (with `value`, of
        those giving the loss's value too), running `forward` ((native, symbol), or
        None for the pass alone) and the pass."""
        program = self._program(forward is None, value)
        entries = ([forward] if forward else []) + [(self.plan.native, self.plan.symbol)]
        call = None if program is None else self.functions.native_call(entries, program)
        if call is not False:           # (False: not yet, asked again next time)
            setattr(self, "value_call" if value else "call", call or False)

    def _program(self, alone: bool, value: bool = False):
        """The NativeCall of this route's calls (the pass alone, or with the forward
        run; with `value`, giving (the loss's value after the forward run, the
        gradients)), or None where a builtin cannot make them: the pass's holders are
        f's arguments (copies of those the pass alone adds to), then the gradients."""
        plan, n = self.plan, self.n
        inputs = input_kinds(self.signature, plan.types)
        gradients = gradient_holders(plan.zeros, plan.position, plan.index)
        if inputs is None or gradients is None or plan.zeros[plan.position] is None:
            return None
        copied = self.copied if alone else ()
        holders = tuple(("copy", k) if k in copied else ("input", k) for k in range(n)) \
            + gradients
        arrays = [k for k, kind in enumerate(self.signature) if isinstance(kind, tuple)]
        written = [k for k in self.written if k in arrays]
        results = results_of(plan.zeros, holders, n)
        return NativeCall(
            inputs=inputs, holders=holders,
            runs=((tuple(range(len(holders))),) if alone else
                  (tuple(range(n)), tuple(range(len(holders))))),
            results=(("read", 0), results) if value else results,
            reads=((0, plan.position, plan.index),) if value else (),
            writable=tuple(written), saved=() if alone else tuple(written),
            apart=tuple(written) if self.aliasing and not alone else (),
            inside=() if plan.index is None else ((plan.position, plan.index),))
