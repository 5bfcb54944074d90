"""Compiled gradients (and Hessians): the one AD driver of both compiled backends.

`compiled_gradient(functions, name, args, loss, inverse)` is `rlang.gradient` for a
module loaded with a compiled backend.  `functions` is the backend's
`CompiledFunctions` object (the interface of rlang/backends/functions.py): this
module never imports a backend.  It mirrors the interpreter's driver
(rlang/ad/drivers.py) step for step: run f forward (compiled), seed the loss's gradient
with 1, run the gradient pass — the adjoint of ~f's IR (rlang/ad/adjoint_ir.py), compiled —
which restores the inputs (arrays in place) and leaves the gradients in its
gradient arguments.  Results have the interpreter's form: a float per float scalar,
an f64 array per float array, None for integers and bools.  `compiled_hessian` is
`rlang.hessian`, forward over reverse with the tangent transform (ad/tangent_ir.py).
"""
from __future__ import annotations

import functools
import math

import numpy as np

from ..errors import RlangError, RlangTypeError
from ..frontend import ast
from ..ir import nodes as ir
from ..lower.argument_types import signature_of, type_of_value
from ..ir.nodes import symbol_of
from ..numbers import ULog, ULogArray
from ..values import Stack, is_device_array, read_element
from .loss import loss_location, resolve_loss
from .symbols import (GRAD, TAN, derived_symbol, lane_count, laned_symbol, shadow_type,
                      unwanted_positions, without_gradients)


def compiled_gradient(functions, name: str, args: list, loss, inverse: bool,
                      on_outputs=None) -> tuple:
    """The gradients (see the module docstring).  Device arrays (cuda backend) get
    device arrays of gradients, which stay on the device.  `on_outputs(outputs)`, if
    given, sees the forward run's outputs before the gradient pass changes them back
    (the forward run is then always made)."""
    signature = signature_of(args)
    key = plan_key(name, signature, loss, inverse)
    plan = functions.plans.get(key) if key is not None else None
    if plan is not None and plan.added is not None and on_outputs is None:
        result = _without_forward(functions, plan, name, args, inverse, signature)
        if result is not None:
            return result
    if plan is None:        # compile both passes before anything runs: a refusal
        resolve_loss(functions.unit.functions[name], loss)  # the interpreter's errors first
        values = functions.bind(name, args)                             # leaves the
        types = functions.types_of(values)                              # arguments
        if on_outputs is None:                                          # untouched
            plan = _first_plan_without_forward(functions, key, name, args, values, types,
                                               loss, inverse, signature)
            if plan is not None:
                result = _without_forward(functions, plan, name, args, inverse, signature)
                if result is not None:
                    return result
        functions.native(name, types, inverse)
        functions.native(name, types, inverse, derivative="grad")
    if on_outputs is None and not any(isinstance(a, (ULog, ULogArray)) for a in args):
        with functions.resident():      # the driver reads no values until the end
            outputs = functions.call(name, args, inverse)
            plan = cached_plan(functions, key, plan, name, outputs, loss, inverse)
            return _gradient_pass(functions, plan, outputs)
    outputs = functions.call(name, args, inverse)
    if on_outputs is not None:
        on_outputs(outputs)
    plan = cached_plan(functions, key, plan, name, outputs, loss, inverse)
    return _gradient_pass(functions, plan, outputs)


def cached_plan(functions, key, plan, name: str, outputs: list, loss, inverse: bool):
    """`plan` (the one cached under `key`, or None) where it fits `outputs`, else a
    new GradientPlan, cached under `key` (None: not cached) where its loss is a
    constant element."""
    if plan is None or not plan.fits(outputs):
        plan = GradientPlan(functions, name, outputs, loss, inverse)
        if key is not None and plan.constant_loss:      # (plain arguments only)
            functions.plans[key] = plan
    return plan


def _gradient_pass(functions, plan, outputs: list) -> tuple:
    """Seed the loss, run the gradient pass from `outputs`, return the gradients."""
    return _run_pass(functions, plan, outputs, seeded_gradients(plan, outputs))


def seeded_gradients(plan, outputs: list) -> list:
    """The zero gradients of `outputs` (a pass's inputs; for a plan with no ulog
    loss, f's arguments will do: arrays of the same shapes), the loss's seeded."""
    gradients = plan.zero_gradients(outputs)
    position, index = plan.position, plan.index
    seed = 1j if plan.part == "im" else _seed(outputs[position], index)
    _set(gradients, position, index,
         complex(seed) if isinstance(gradients[position], complex) else seed)
    return gradients


def _run_pass(functions, plan, outputs: list, gradients: list) -> tuple:
    """Run the gradient pass from `outputs` with the seeded `gradients`; the
    gradients it returns, those of ulog inputs in value space."""
    if plan.on_device:
        moved = functions.to_device([g if device else None
                                     for g, device in zip(gradients, plan.on_device)])
        gradients = [m if device and g is not None else g
                     for g, m, device in zip(gradients, moved, plan.on_device)]
    functions.prepare_gradients([g for g in gradients if type(g) is np.ndarray])
    new = functions.run(plan.native, plan.symbol,
                        outputs + [g for g in gradients if g is not None])
    returned = _returned(gradients, new[len(outputs):])
    for k in plan.log_space:
        returned[k] = _in_value_space(returned[k], new[k])
    return tuple(returned)


def compiled_vjp_pass(functions, name: str, outputs: list, cotangents: list,
                      inverse: bool) -> tuple:
    """The gradient pass of `rlang.vjp` from `outputs`, which are left as they are
    (the pass runs on copies of the arrays and stacks it may write), seeded with
    `cotangents` (one per output, checked; None for none): ulog cotangents go into
    log space (∂L/∂ℓ = x · ∂L/∂x), the gradients of ulog inputs come back in value
    space."""
    key = vjp_plan_key(name, inverse, signature_of(outputs))
    plan = functions.plans.get(key) if key is not None else None
    if plan is None:
        plan = GradientPlan(functions, name, outputs, None, inverse)
        if key is not None:
            functions.plans[key] = plan
    written = functions.arrays_written(plan.native)     # None: any of them
    outputs = [v.copy() if isinstance(v, Stack) or isinstance(v, np.ndarray) and (
        written is None or k in written) else v for k, v in enumerate(outputs)]
    gradients = plan.zero_gradients(outputs)
    for k, cotangent in enumerate(cotangents):
        if cotangent is None or gradients[k] is None or isinstance(gradients[k], Stack):
            continue
        if isinstance(outputs[k], ULogArray):
            cotangent = cotangent * np.exp(np.asarray(outputs[k], dtype=np.float64))
        elif isinstance(outputs[k], ULog):
            cotangent = cotangent * float(outputs[k])
        if isinstance(gradients[k], np.ndarray):
            gradients[k][...] = cotangent
        else:
            gradients[k] = type(gradients[k])(cotangent)
    return _run_pass(functions, plan, outputs, gradients)


def _first_plan_without_forward(functions, key, name: str, args: list, values: list,
                                types: tuple, loss, inverse: bool, signature):
    """The plan of a gradient's first call whose pass can start from the arguments
    (Note [Gradients without the forward run], rlang/ir/outputs.py): the forward
    module is then neither compiled nor run (a cold GMM gradient compiled both, 40 %
    of its time in the forward's); None where the first call runs the forward (the
    arguments are converted, ulog, or f does more than add to them)."""
    if not functions.forward_free_gradients or functions.invcheck or key is None or \
            any(v is not a for v, a in zip(values, args)) or \
            any(isinstance(a, (ULog, ULogArray)) for a in args) or \
            functions.forward_adds(name, types, inverse) is None:
        return None
    functions.note_as_is(name, signature, inverse, types)
    plan = cached_plan(functions, key, None, name, list(args), loss, inverse)
    return plan if plan.added is not None else None


def _without_forward(functions, plan, name: str, args: list, inverse: bool, signature):
    """The gradients by the pass alone, started from the inputs, with the arrays the
    function adds to copied (Note [Gradients without the forward run],
    rlang/ir/outputs.py); None where the arguments (of `signature_of` `signature`)
    do not conform as they are or the pass fails (the caller then runs the forward
    run and the pass)."""
    if not functions.conforms(name, signature, inverse) or not plan.fits(args):
        return None
    outputs = [value.copy() if k in plan.added and isinstance(value, np.ndarray) else value
               for k, value in enumerate(args)]
    try:
        return _gradient_pass(functions, plan, outputs)
    except RlangError:
        return None


def vjp_plan_key(name: str, inverse: bool, signature):
    """The key of `rlang.vjp`'s plans (one no gradient plan has: see plan_key), or
    None where outputs of `signature` are converted on every call."""
    return None if signature is None else ("vjp", name, inverse, signature)


def plan_key(name: str, signature, loss, inverse: bool):
    """What a gradient plan depends on, or None where it cannot be reused (arguments
    that are converted on every call: `signature` None, a loss that is not a plain
    key)."""
    if signature is None or not isinstance(loss, (str, int, tuple)):
        return None
    try:
        hash(loss)
    except TypeError:
        return None
    return (name, inverse, signature, loss)


class GradientPlan:
    """What a gradient call needs that depends only on the function, its argument
    types and the loss: the types, the compiled gradient pass and its symbol, the
    loss's position and element, and how to make each zero gradient.  Building one
    checks the loss against `outputs` (with the interpreter's errors).  A plan is
    reused for later calls with arguments of the same kinds when the loss names a
    constant element (`constant_loss`) that `fits` the arrays of the call."""

    def __init__(self, functions, name: str, outputs: list, loss, inverse: bool,
                 derivative: str = "grad"):
        fn = functions.unit.functions[name]
        host = [_stand_in(v) for v in outputs]
        self.part = self.position = self.index = None       # no loss: a vjp's plan
        self.constant_loss = False
        if loss is not None:
            self._locate(fn, loss, outputs, host)
        # device arrays (cuda): their gradients are made on the host, then moved
        self.on_device = tuple(_is_device(v) for v in outputs)
        self.on_device = self.on_device if any(self.on_device) else None
        outputs = host
        self.types = tuple(type_of_value(v) for v in outputs)
        self.native = functions.native(name, self.types, inverse, derivative=derivative)
        self.symbol = derived_symbol(GRAD, symbol_of(name, self.types, not inverse))
        if lane_count(derivative):          # a pass with lanes (Note [Gradient lanes])
            self.symbol = laned_symbol(self.symbol, lane_count(derivative))
        # plain: every gradient is a float or complex scalar or a NumPy array (no
        # stacks, no ulog or fixed arrays), made by `zeros[k]` (a dtype or a type)
        shadows = [shadow_type(t) for t in self.types]
        self.plain = not any(isinstance(s, ir.StackType) for s in shadows) and \
            all(type(v) is np.ndarray or not isinstance(v, np.ndarray) for v in outputs)
        self.zeros = [None if s is None else _zero_kind(s, v) for s, v in zip(shadows, outputs)]
        # the ulog arguments, whose gradients come back in log space (_in_value_space)
        self.log_space = [k for k, t in enumerate(self.types)
                          if "ulog" in (t, getattr(t, "elem", None))]
        # the parameters f only adds to, where the pass needs no forward run
        self.added = None
        self.route = None       # its calls' short route (ad/gradient_route.py), once made
        if functions.forward_free_gradients and not functions.invcheck and self.plain \
                and loss is not None and not isinstance(outputs[self.position], ULog):
            self.added = functions.forward_adds(name, self.types, inverse)

    def _locate(self, fn, loss, outputs: list, host: list) -> None:
        """The loss's part, position and element, checked (the interpreter's errors)."""
        view = resolve_loss(fn, loss)
        self.part = view.name if isinstance(view, ast.Field) else None
        base = view.base if self.part else view
        if self.part:       # `.re` / `.im` of a real value: the interpreter's type error
            loss_location(fn, host, view)
        try:
            self.position, self.index = loss_location(fn, host, base)
        except RlangTypeError:      # say it with the values themselves
            loss_location(fn, [_stand_in(v, copy=True) for v in outputs], base)
            raise
        self.constant_loss = not isinstance(base, ast.Index) or all(
            isinstance(i, ast.IntLit) for i in base.indices)

    def zero_gradients(self, outputs: list) -> list:
        """A zero gradient per argument (None for integers and bools)."""
        if not self.plain:
            return [_zero_gradient(v, t) for v, t in zip(outputs, self.types)]
        return [None if kind is None else np.zeros(tuple(v.shape), dtype=kind)
                if kind in (np.float64, np.complex128) else kind()
                for v, kind in zip(outputs, self.zeros)]

    def fits(self, outputs: list) -> bool:
        """Whether the loss element is inside the arrays of this call."""
        if self.index is None:
            return True
        shape = outputs[self.position].shape
        return all(0 <= i < n for i, n in zip(self.index, shape))


def _zero_kind(shadow, value):
    """How to make the zero gradient of `value`: a NumPy dtype for an array, the
    Python type (called with no argument) for a scalar."""
    complex_ = shadow == "complex" or getattr(shadow, "elem", None) == "complex"
    if isinstance(value, np.ndarray):
        return np.complex128 if complex_ else np.float64
    return complex if complex_ else float


#: Types of values that are never device arrays (checked first: most calls).
_HOST_TYPES = (np.ndarray, float, int, complex, bool, type(None))


def _is_device(value) -> bool:
    return not isinstance(value, _HOST_TYPES) and is_device_array(value)


def _stand_in(value, copy: bool = False):
    """A device array as the host sees it to find the loss: zeros of its shape and
    dtype (the loss view's place and type need no values), or with `copy` its values;
    other values as they are."""
    if not _is_device(value):
        return value
    return value.copy_to_host() if copy else np.zeros(tuple(value.shape), dtype=value.dtype)


def _seed(loss_value, index) -> float:
    """The gradient a loss starts with: 1, or for a ulog loss x = e^ℓ, since ulog
    gradients are kept in log space (Note [Gradients of ulog values], ad/gvar.py)."""
    if isinstance(loss_value, ULog):
        return float(loss_value)
    if isinstance(loss_value, ULogArray):
        return float(read_element(loss_value, index))
    return 1.0


def _in_value_space(gradient, value):
    """A log-space gradient of a ulog input as ∂L/∂x = ∂L/∂ℓ · e^(−ℓ) (as rlang/ad/drivers.py
    reports it); other gradients unchanged."""
    if isinstance(value, ULog):
        return gradient * math.exp(-value.log) if value.log > -math.inf else math.nan
    if isinstance(value, ULogArray):
        with np.errstate(over="ignore", invalid="ignore"):
            return gradient * np.exp(-np.asarray(value, dtype=np.float64))
    return gradient


def _zero_kinds(types: tuple, values: list):
    """How to make each argument's zero gradient where all are plain (NumPy arrays
    or scalars of float or complex gradients: `_zero_kind`, None for integers and
    bools), once per argument kinds; None where some are not (stacks)."""
    shadows = [shadow_type(t) for t in types]
    if any(isinstance(s, ir.StackType) for s in shadows) or \
            any(isinstance(v, np.ndarray) and type(v) is not np.ndarray for v in values):
        return None
    return [None if s is None else _zero_kind(s, v) for s, v in zip(shadows, values)]


def _zero_gradient(value, t):
    """The zero gradient of a float argument (None for integers and bools); for a
    stack of floats, a stack of as many zeros (its items carry no gradient in, as
    the interpreter's plain items do not)."""
    shadow = shadow_type(t)
    if shadow is None:
        return None
    if isinstance(shadow, ir.StackType):
        return Stack(shadow.elem, [0j if shadow.elem == "complex" else 0.0] * len(value.items))
    kind = _zero_kind(shadow, value)
    return np.zeros(value.shape, dtype=kind) if isinstance(value, np.ndarray) else kind()


def compiled_hessian(functions, name: str, args: list, loss, inverse: bool,
                     chosen=None) -> np.ndarray:
    """`rlang.hessian` on a compiled backend: for each float input k (of the
    arguments at the positions `chosen`; None: all), the tangent transform of f
    (tangent e_k) gives the outputs and their tangents, and the tangent transform of
    the gradient pass gives column k in the gradients' tangents.  The caller's
    arguments are not touched."""
    from .hessian_lanes import laned_hessian      # W columns a pass (Note [Hessians in lanes])

    found = laned_hessian(functions, name, args, loss, inverse, chosen)
    if found is not None:
        return found
    run = _ForwardOverReverse(functions, name, args, loss, inverse, "hessian")
    inputs = [i for i in run.inputs if chosen is None or i[0] in chosen]
    if not inputs:      # no column to run: the call and the loss still have to be right,
        run.column(run.zero_tangents())     # as on the interpreter
    columns = []
    for k in range(len(inputs)):
        tangents = run.zero_tangents()
        _set(tangents, *inputs[k])
        by_position = run.column(tangents)
        columns.append([by_position[p] if i is None else by_position[p][i]
                        for p, i in inputs])
    n = len(inputs)
    return np.array(columns, dtype=np.float64).T.reshape(n, n)


def compiled_gradient_and_hvp(functions, name: str, args: list, vector: list, loss,
                              inverse: bool, ran=None, wanted=None) -> tuple:
    """`drivers.gradient_and_hvp` on a compiled backend: (the loss's gradient, its
    tangent along `vector`), from one forward-over-reverse run (`vector`: one entry
    per argument, None for those without a tangent).  `ran(run)`, if given, sees the
    `_ForwardOverReverse` of a run whose arguments bound as they are (for its
    builtin: rlang/ad/hvp_call.py).  `wanted`: the positions the caller reads (None:
    all); the others' entries are None, as the builtin gives them (Note [Gradients
    nobody reads], ad/derivatives.py)."""
    run = _ForwardOverReverse(functions, name, args, loss, inverse, "hvp", wanted=wanted)
    gradient, moved = run.loss_seeded_run(run.tangents_along(vector))
    if run.known and ran is not None:
        ran(run)
    # ulog arguments: no tangent in, none reported (drivers.py); unwanted: not computed
    left = run.held_constant | ({k for k in range(len(gradient)) if k not in wanted}
                                if wanted is not None else set())
    return (tuple(None if k in left else g for k, g in enumerate(gradient)),
            tuple(None if k in left else m for k, m in enumerate(moved)))


def compiled_vjp_tangent(functions, name: str, args: list, cotangents: list, vector: list,
                         inverse: bool) -> tuple:
    """`drivers.vjp_tangent` on a compiled backend: one forward-over-reverse run whose
    gradient pass is seeded with `cotangents` and whose tangent is `vector` (both one
    entry per argument, None for none)."""
    run = _ForwardOverReverse(functions, name, args, None, inverse, "vjp", backward=True)

    def seed(outputs, output_tangents, gradients, gradient_tangents):
        for k, cotangent in enumerate(cotangents):
            if cotangent is None or gradients[k] is None:
                continue
            if isinstance(gradients[k], np.ndarray):
                gradients[k][...] = cotangent
            else:
                gradients[k] = float(cotangent)

    pulled, moved = run.seeded_run(run.tangents_along(vector), seed)
    return tuple(pulled), tuple(moved)


def compiled_jvp(functions, name: str, args: list, tangents: list, inverse: bool,
                 ran=None) -> tuple:
    """`rlang.jvp` on a compiled backend: the tangent transform of f run on copies of
    the arguments with `tangents` (one per argument, None for those without one).
    `ran(run)`, if given, sees the `_ForwardOverReverse` that ran (for its builtin:
    rlang/ad/jvp_call.py)."""
    run = _ForwardOverReverse(functions, name, args, None, inverse, "jvp")
    outputs, output_tangents = run.forward_run(run.tangents_along(tangents))
    if ran is not None:
        ran(run)
    return tuple(outputs), tuple(None if isinstance(t, Stack) else _value_tangent(t, v)
                                 for t, v in zip(output_tangents, outputs))


def _value_tangent(tangent, value):
    """The tangent of an output as `rlang.jvp` reports it: a ulog's log-space tangent
    dℓ as dx = x·dℓ (x = e^ℓ), as ulog gradients are reported in value space; others
    unchanged."""
    if isinstance(value, ULog):
        return value.value_tangent(tangent)
    if isinstance(value, ULogArray):
        with np.errstate(over="ignore", invalid="ignore"):
            x = np.exp(np.asarray(value, dtype=np.float64))
            return np.where(tangent != 0.0, x * tangent, 0.0)
    return tangent


class _ForwardOverReverse:
    """The compiled tangent runs of one function, argument types and loss: `column(
    tangents)` gives the tangents of the loss's gradient (per argument; None where
    there is none) in the direction `tangents`."""

    def __init__(self, functions, name: str, args: list, loss, inverse: bool, driver: str,
                 backward: bool | None = None, wanted=None):
        """`loss` None: the forward run alone (`forward_run`; jvp), unless `backward`
        asks for the gradient pass too (seeded by the caller: `seeded_run`).
        `wanted`: the positions whose gradients (and their tangents) the caller reads
        (None: all); the pass leaves the others zero (Note [Gradients nobody reads],
        ad/derivatives.py)."""
        fn = functions.unit.functions[name]
        self.fn, self.functions = fn, functions
        backward = loss is not None if backward is None else backward
        key = plan_key(name, signature_of(args), loss, inverse)
        key = key and ("tangent runs", backward, key, wanted)
        known = functions.plans.get(key) if key else None
        self.known = known is not None      # arguments of these kinds bind as they are
        if known is not None:
            self.values = list(args)
            (self.view, self.types, self.forward, self.forward_symbol, self.backward,
             self.backward_symbol, self.kinds) = known
            return
        self.view = None
        if loss is not None:        # the interpreter's errors, before compiling
            self.view = resolve_loss(fn, loss)
        if any(_is_device(a) for a in args):
            raise RlangTypeError(f"rlang.{driver} takes NumPy arrays, not device arrays "
                                 "(copy them to the host with copy_to_host())")
        self.values = values = functions.bind(name, args)
        self.types = types = tuple(type_of_value(v) for v in values)
        self.forward = functions.native(name, types, inverse, derivative="tan")
        self.forward_symbol = derived_symbol(TAN, symbol_of(name, types, inverse))
        self.backward = self.backward_symbol = None
        self.kinds = _zero_kinds(types, values)
        if backward:
            # (no kinds, for stack arguments: every gradient is computed)
            unwanted = () if self.kinds is None else unwanted_positions(
                [k for k, kind in enumerate(self.kinds) if kind is not None], wanted)
            self.backward = functions.native(name, types, inverse,
                                             derivative=without_gradients("tan_grad", unwanted))
            self.backward_symbol = derived_symbol(TAN, derived_symbol(
                GRAD, symbol_of(name, types, not inverse)))
        if key and all(v is a for v, a in zip(values, args)):
            functions.plans[key] = (self.view, types, self.forward, self.forward_symbol,
                                    self.backward, self.backward_symbol, self.kinds)

    @functools.cached_property
    def inputs(self) -> list:
        """(position, index or None) of every float scalar input, in argument order:
        `rlang.hessian`'s columns.  Listed on first use only, since a product
        (`hvp`, `jvp`) needs no list of the elements."""
        values, types = self.values, self.types
        # stacks are not inputs (their items carry no tangent in, as the interpreter's
        # plain items do not) but carry shadow stacks through both runs
        return [(p, i) for p, v in enumerate(values)
                if shadow_type(types[p]) is not None and not isinstance(v, Stack)
                and p not in self.held_constant
                for i in (np.ndindex(v.shape) if isinstance(v, np.ndarray) else [None])]

    @functools.cached_property
    def held_constant(self) -> set:
        """The positions of the ulog arguments: as on the interpreter, second
        derivatives are taken with respect to float inputs, and ulog ones are held
        constant (docs/ad.md); their values still carry tangents inside f."""
        return {p for p, t in enumerate(self.types) if "ulog" in (t, getattr(t, "elem", None))}

    def zero_tangents(self) -> list:
        return self.zeros_like(self.values)

    def zeros_like(self, values: list) -> list:
        """A zero gradient (or tangent) per argument of `values` (of the plan's kinds;
        None for integers and bools), stacks' included."""
        if self.kinds is None:
            return [_zero_gradient(v, t) for v, t in zip(values, self.types)]
        return [None if kind is None else np.zeros(v.shape, dtype=kind)
                if kind is np.float64 or kind is np.complex128 else kind()
                for v, kind in zip(values, self.kinds)]

    def tangents_along(self, directions: list) -> list:
        """The tangents of the arguments (zero tangents, stacks' included) with
        `directions` (one per argument; None: zero) put in."""
        tangents = self.zero_tangents()
        for k, (tangent, direction) in enumerate(zip(tangents, directions)):
            if tangent is None or direction is None or isinstance(tangent, Stack) or \
                    k in self.held_constant:
                continue
            if isinstance(tangent, np.ndarray):
                tangent[...] = direction
            else:
                tangents[k] = float(direction)
        return tangents

    def forward_run(self, tangents: list) -> tuple:
        """(outputs, output tangents) of f on copies of the arguments."""
        values = self.values
        copies = [v.copy() if isinstance(v, (np.ndarray, Stack)) else v for v in values]
        shadows = [t for t in tangents if t is not None]
        new = self.functions.run(self.forward, self.forward_symbol, copies + shadows)
        return new[:len(values)], _returned(tangents, new[len(values):], stacks=True)

    def column(self, tangents: list) -> list:
        """The tangents of the loss's gradient along `tangents` (a Hessian column)."""
        return self.loss_seeded_run(tangents)[1]

    def loss_seeded_run(self, tangents: list) -> tuple:
        """(the loss's gradient, its tangents along `tangents`): `seeded_run` seeded
        with 1 at the loss, or for a ulog loss with x = e^ℓ, whose tangent x·dℓ is
        its gradient's tangent seed (Note [Gradients of ulog values], ad/gvar.py)."""
        def seed(outputs, output_tangents, gradients, gradient_tangents):
            position, index = loss_location(self.fn, outputs, self.view)
            first = _seed(outputs[position], index)
            _set(gradients, position, index, first)
            if isinstance(outputs[position], (ULog, ULogArray)):
                tangent = output_tangents[position]
                _set(gradient_tangents, position, index,
                     first * (tangent if index is None else tangent[index]))

        return self.seeded_run(tangents, seed)

    def seeded_run(self, tangents: list, seed) -> tuple:
        """(gradients, their tangents along `tangents`), each a list with one entry
        per argument (None for those without a gradient): f's tangent run, then the
        tangent run of the gradient pass from its outputs, whose gradients and their
        tangents start as `seed(outputs, output_tangents, gradients, gradient_tangents)`
        leaves the zeros it is given."""
        functions = self.functions
        outputs, output_tangents = self.forward_run(tangents)
        gradients = self.zeros_like(outputs)
        gradient_tangents = [None if g is None else
                             _zero_gradient(g, type_of_value(g)) if isinstance(g, Stack) else
                             np.zeros_like(g) if isinstance(g, np.ndarray) else 0.0
                             for g in gradients]
        seed(outputs, output_tangents, gradients, gradient_tangents)
        grads = [g for g in gradients if g is not None]
        zeros = [t for t in gradient_tangents if t is not None]
        new = functions.run(self.backward, self.backward_symbol,
                            outputs + grads + [t for t in output_tangents if t is not None]
                            + zeros)
        n = len(outputs)
        first = iter(_returned(grads, new[n:n + len(grads)]))
        second = iter(_returned(zeros, new[-len(zeros):]) if zeros else [])
        return ([None if g is None else next(first) for g in gradients],
                [None if g is None else next(second) for g in gradients])


def _set(shadows: list, position: int, index, value: float = 1.0) -> None:
    """Put `value` into a shadow: a scalar, or one element of an array."""
    if index is None:
        shadows[position] = value
    else:
        shadows[position][index] = value


def _returned(shadows: list, new: list, stacks: bool = False) -> list:
    """The shadows after a call: arrays were updated in place, scalars come back;
    a shadow stack comes back with `stacks` (as the tangents a later run takes),
    else as None (no gradient is reported for a stack)."""
    values = iter(new)
    out = []
    for shadow in shadows:
        if shadow is None:
            out.append(None)
            continue
        value = next(values)
        kind = type(shadow)
        if kind is np.ndarray:
            out.append(shadow)
        elif kind is float or kind is complex:
            out.append(kind(value))
        elif isinstance(shadow, Stack):
            out.append(value if stacks else None)
        else:
            out.append(shadow if isinstance(shadow, np.ndarray) or _is_device(shadow) else
                       complex(value) if isinstance(shadow, complex) else float(value))
    return out
