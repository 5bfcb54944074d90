"""Reverse-mode AD by running inverses (LANGUAGE.md §9): the drivers.

    rlang.gradient(m.f, args, loss="y!")     # one entry per argument
    rlang.check_grad(m.f, args, loss="y!")   # against central finite differences

The driver is short, as the design asks: run f forward; wrap every float in a GVar
with gradient zero; set the loss view's gradient to 1; run ~f over the GVars
(`gradient_interpreter.GradInterpreter`).  The backward run restores the inputs (arrays in
place); the caller's arrays are then put back bit for bit (Note [The caller's arrays]).

A loss is a parameter name (`"y!"`), a position (`0`), `(name, index)` for an
array element, or the text of a view (`"y[2]"`, `"z.re"`).  Gradients are reported
for float, fixed, complex and ulog parameters (complex as ∂/∂re + i·∂/∂im; the
CLI prints `[∂/∂re, ∂/∂im]`); integers and bools get None.
"""
from __future__ import annotations

import math

import numpy as np

from .callers_arrays import callers_arrays_kept
from .dual_runs import (along, dual_arguments, dual_gradient, flat_float_inputs,
                        float_positions, hvp_entry, primal, pulled_entry, tangent_of,
                        tangent_part)
from .gradient_interpreter import GradInterpreter, wrap
from .loss import check_loss_value, loss_location, resolve_loss
from ..deep import run_deep
from ..interp.interpreter import Interpreter
from ..errors import RlangError, RlangTypeError
from ..gvalue import GVar, value_of
from ..numbers import Fixed, FixedArray, ULog, ULogArray
from ..lower.argument_types import signature_of
from ..values import Stack, read_element, write_element


def called_with(function, args, driver: str) -> list:
    """The arguments of a driver call as the values the function's parameters take
    (`Interpreter.bind_arguments`: the same conversions and refusals as a call, on
    every backend).  A function that is not one of a loaded program, arguments that
    are not a sequence, or an argument the parameter cannot take, are the caller's
    error.  Arrays that need no conversion are the caller's own objects."""
    if not (hasattr(function, "module") and hasattr(function, "inverse")):
        raise RlangTypeError(f"rlang.{driver} takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(function).__name__}")
    if not isinstance(args, (str, bytes, dict)):
        try:
            args = list(args)
        except TypeError:
            pass
        else:
            compiled = function.module.compiled
            interpreter = function.module.interpreter
            if compiled is not None:
                if any(compiled.passes_as_is(a) for a in args):
                    return args     # device arrays: the backend binds them where they are
                if compiled.conforms(function.name, signature_of(args), function.inverse):
                    # arguments of these kinds bound as they are before: they still do
                    interpreter.check_writable(interpreter.functions[function.name], args)
                    return args
            values = interpreter.bind_arguments(function.name, args)
            interpreter.check_writable(interpreter.functions[function.name], values)
            return values
    raise RlangTypeError(f"rlang.{driver} takes the arguments as a list or a tuple, "
                         f"got {type(args).__name__}")


_LAZY: dict = {}


def _module(name: str):
    """The module `name` of this package, imported at its first use: ad/compiled.py
    and ad/gradient_route.py bring the IR and the compiled driver, which an
    interpreter's derivative does not need.  (Kept here: an `import` in the body of a
    call cost 2.2 µs of every call, of 18.)"""
    module = _LAZY.get(name)
    if module is None:
        from . import compiled, gradient_route, hvp_call, jvp_call, vjp_call

        _LAZY.update(compiled=compiled, gradient_route=gradient_route, hvp_call=hvp_call,
                     jvp_call=jvp_call, vjp_call=vjp_call)
        module = _LAZY[name]
    return module


def _short_route():
    """ad/gradient_route.py's `quick_gradient`."""
    return _module("gradient_route").quick_gradient


def _compiled():
    """The module ad/compiled.py."""
    return _module("compiled")


def gradient(function, args, loss) -> tuple:
    """The gradient of the final value of `loss` with respect to the initial value of
    every argument of `function` (an `api.Function`); the caller's arrays are left
    as they were, bit for bit."""
    quick = _short_route()(function, args, loss)    # Note [The gradient's short route]
    if quick is not None:
        return quick
    args = called_with(function, args, "gradient")
    with callers_arrays_kept(args, function):
        return _gradient(function, args, loss)


def value_and_gradient(function, args, loss) -> tuple:
    """(the final value of `loss`, `gradient(function, args, loss)`), from one forward
    and one gradient run; the value as a call returns it (a float, complex, fixed or
    ulog scalar)."""
    quick = _short_route()(function, args, loss, value=True)
    if quick is not None:
        return quick
    args = called_with(function, args, "value_and_grad")
    view = resolve_loss(function.module.unit.functions[function.name], loss)
    seen = []
    with callers_arrays_kept(args, function):
        gradients = _gradient(function, args, loss,
                              lambda outputs: seen.append(_view_value(function, outputs,
                                                                      view)))
    return seen[-1], gradients


def loss_value(function, args, loss):
    """The final value of `loss` after `function(*args)`, as a call returns it (no
    gradient run); the caller's arrays are left as they were."""
    args = called_with(function, args, "value")
    view = resolve_loss(function.module.unit.functions[function.name], loss)
    with callers_arrays_kept(args, function):
        return _view_value(function, list(function(*args)), view)


def _view_value(function, outputs, view):
    """The value of the view `view` of `function`'s parameters holding `outputs`."""
    from ..interp.evaluate import Evaluator

    fn = function.module.unit.functions[function.name]
    value = Evaluator({}).eval(view, dict(zip((p.name for p in fn.params), outputs)))
    return value.item() if isinstance(value, np.generic) else value


def _gradient(function, args, loss, on_outputs=None) -> tuple:
    """The gradients; `on_outputs(outputs)`, if given, sees the forward run's outputs
    before the gradient run changes them back."""
    module = function.module
    fn = module.unit.functions[function.name]
    if module.compiled is not None:
        result = module.compiled_or_none(_compiled().compiled_gradient, function.name,
                                         list(args), loss, function.inverse, on_outputs)
        if result is not None:
            return result
    outputs = list(function(*args))
    if on_outputs is not None:
        on_outputs(outputs)
    target = resolve_loss(fn, loss)
    engine = GradInterpreter(module.unit, invcheck=module.invcheck, sandbox=module.sandbox)
    values = [wrap(value) for value in outputs]
    _seed(engine, fn, values, target)
    final = run_deep(engine.run, function.name, values, not function.inverse)
    for value in final:
        if isinstance(value, Stack):    # give the caller's stacks back their plain values
            value.items[:] = [value_of(item) for item in value.items]
    return tuple(_gradient_of(engine, value) for value in final)


def _seed(engine: GradInterpreter, fn, values: list, view) -> None:
    env = dict(zip((p.name for p in fn.params), values))
    ref = engine.evaluator.ref(view, env)
    value = engine.value(ref)
    check_loss_value(view, value)
    engine.set_grad(ref, value.value() if isinstance(value, ULog) else 1.0)   # ∂L/∂ℓ = x
    for i, param in enumerate(fn.params):
        values[i] = env[param.name]


def _gradient_of(engine: GradInterpreter, value):
    if type(value) is GVar:
        if isinstance(value.x, complex):
            return complex(value.g)
        grad = float(value.g.real if isinstance(value.g, complex) else value.g)
        if isinstance(value.x, ULog):           # ∂L/∂x = ∂L/∂ℓ · e^(−ℓ)
            return grad * math.exp(-value.x.log) if value.x.log > -math.inf else math.nan
        return grad
    if isinstance(value, np.ndarray):
        grad = engine.grads.of(value)
        if grad is not None and isinstance(value, ULogArray):
            with np.errstate(over="ignore", invalid="ignore"):
                return grad * np.exp(-np.asarray(value, dtype=np.float64))
        return None if grad is None else grad.copy()
    return None


def check_grad(function, args, loss, step: float = 1e-6, rtol: float = 1e-4,
               atol: float = 1e-6) -> bool:
    """Compare `gradient` with central finite differences of the loss, for every float
    input (array elements one by one).  The state is restored between evaluations by
    running the inverse, not by copying.  Returns True when they agree; raises an
    RlangError naming the first input where they do not."""
    args = called_with(function, args, "check_grad")
    with callers_arrays_kept(args):
        return _check_grad(function, args, loss, step, rtol, atol)


def _check_grad(function, args, loss, step, rtol, atol) -> bool:
    # the finite differences shift elements in place: a read-only array (one the
    # function only reads) is shifted in a copy
    args = [a.copy() if isinstance(a, np.ndarray) and not a.flags.writeable else a
            for a in args]
    grads = gradient(function, args, loss)
    fn = function.module.unit.functions[function.name]
    view = resolve_loss(fn, loss)
    for position, (arg, grad) in enumerate(zip(args, grads)):
        if grad is None:
            continue
        for index in (np.ndindex(np.shape(arg)) if isinstance(arg, np.ndarray) else [None]):
            numeric = _central_difference(function, args, view, position, index, step)
            analytic = grad[index] if index is not None else grad
            if isinstance(analytic, complex):
                analytic = analytic.real
            both_nan = numeric != numeric and analytic != analytic
            if not (abs(numeric - analytic) <= atol + rtol * abs(numeric) or both_nan):
                where = fn.params[position].name + ("" if index is None else str(list(index)))
                raise RlangError(f"gradient check failed at `{where}`: analytic "
                                 f"{analytic!r}, finite difference {numeric!r}")
    return True


def _central_difference(function, args, view, position, index, step) -> float:
    """The finite difference of the loss in one input: central, or one-sided where
    the input is at the edge of its number system (a ulog at 0 cannot go below it,
    a fixed at the end of its range beyond it)."""
    point = args[position] if index is None else read_element(args[position], index)
    shifts = [d for d in (step, 0.0, -step) if _shifted(point, d) is not None]
    if shifts[0] == shifts[-1]:
        where = "" if index is None else str(list(index))
        raise RlangError(f"check_grad cannot take a finite difference of argument "
                         f"{position + 1}{where} at {point!r}: {point!r} ± {step} is "
                         f"outside its number system")
    values = {}
    for delta in (shifts[0], shifts[-1]):
        shifted = list(args)
        if index is None:
            shifted[position] = _shifted(point, delta)
        else:
            array = args[position]
            saved = np.ndarray.__getitem__(array, index)
            write_element(array, index, _shifted(point, delta))
        outputs = function(*shifted)
        values[delta] = _loss_value(function, outputs, view)
        (~function)(*outputs)                   # restore the state by running backward
        if index is not None:
            np.ndarray.__setitem__(array, index, saved)     # the element, bit for bit
    return (values[shifts[0]] - values[shifts[-1]]) / (shifts[0] - shifts[-1])


def _shifted(value, delta):
    """value + delta in the value's own number system, or None where that system
    cannot hold it."""
    if isinstance(value, (Fixed, ULog)):
        try:
            return type(value).from_value(float(value) + delta)
        except ValueError:
            return None
    return value + delta


def _loss_value(function, outputs, view) -> float:
    value = _view_value(function, outputs, view)
    return float(value.real if isinstance(value, complex) else value)


def jacobian(function, args, inputs=None, outputs=None, argnums=None) -> np.ndarray:
    """∂(outputs)/∂(inputs) at `args` as a matrix: one row per output scalar, one column
    per input scalar, arrays flattened in C order.  `inputs` and `outputs` are
    parameter names (or positions); by default every float parameter.  `argnums`
    (an int or a tuple of ints, as `rlang.grad`'s) chooses the inputs by position
    instead.  Each row is one gradient run (reverse mode: one backward pass per
    output); on a compiled backend, one forward run and then a backward pass per
    LANES rows (rlang/ad/jacobian_rows.py)."""
    args = called_with(function, args, "jacobian")
    fn = function.module.unit.functions[function.name]
    if argnums is not None:
        if inputs is not None:
            raise RlangTypeError("rlang.jacobian takes `inputs` or `argnums`, not both")
        inputs = argnum_positions(argnums, len(fn.params), fn.name, "jacobian")
    names = [p.name for p in fn.params]
    float_params = [n for n, value in zip(names, args) if _differentiable(value)]
    inputs = _param_names(fn, inputs, float_params)
    outputs = _param_names(fn, outputs, float_params)
    module = function.module
    if module.compiled is not None and outputs and inputs:
        from .jacobian_rows import compiled_jacobian   # rows W at a time (Note [Gradient lanes])

        found = module.compiled_or_none(compiled_jacobian, function.name, args,
                                        function.inverse, [names.index(i) for i in inputs],
                                        [names.index(o) for o in outputs])
        if found is not None:
            return found
    rows = []
    for name in outputs:
        position = names.index(name)
        shape = np.shape(args[position])
        for index in (np.ndindex(shape) if shape else [None]):
            loss = name if index is None else (name, index)
            grads = gradient(function, args, loss)
            rows.append(np.concatenate([
                np.ravel(np.real(grads[names.index(i)])) if grads[names.index(i)] is not None
                else np.zeros(np.size(args[names.index(i)])) for i in inputs]))
    return np.array(rows)


def jacobians(function, args, output) -> tuple:
    """∂(output)/∂(each argument) at `args`: per parameter, an array shaped as the
    output's final value followed by the argument's shape (as JAX's `jacrev`), or
    None for integers and bools; float when both are scalars.  `output` is a
    parameter name or position.  One `jacobian` (its rows W at a time on a compiled
    backend), its columns split by argument."""
    args = called_with(function, args, "jacrev")
    names = [p.name for p in function.module.unit.functions[function.name].params]
    output = names[parameter_position(function, output)]
    inputs = [n for n, value in zip(names, args) if _differentiable(value)]
    if not inputs:
        return (None,) * len(names)
    matrix = jacobian(function, args, inputs=inputs, outputs=[output])
    return split_columns(matrix, np.shape(args[names.index(output)]),
                         [np.shape(a) if n in inputs else None for n, a in zip(names, args)])


def parameter_position(function, parameter) -> int:
    """The position of `parameter` (a name or a position) among `function`'s
    parameters; RlangError where it is not one."""
    fn = function.module.unit.functions[function.name]
    if not isinstance(parameter, (str, int)) or isinstance(parameter, bool):
        raise RlangTypeError(f"rlang.jacrev: the output is a parameter of `{fn.name}`, by "
                             f"name or position, got {parameter!r}")
    name, = _param_names(fn, parameter, ())
    return [p.name for p in fn.params].index(name)


def split_columns(matrix: np.ndarray, output_shape: tuple, shapes: list) -> tuple:
    """A Jacobian matrix (rows: the output's scalars; columns: the inputs' scalars,
    input after input, `shapes[k]` None where argument k is not an input; any leading
    axes are a batch's) as one array per argument shaped output_shape + shapes[k]."""
    batch, at, parts = matrix.shape[:-2], 0, []
    for shape in shapes:
        if shape is None:
            parts.append(None)
            continue
        size = int(np.prod(shape))
        part = matrix[..., at:at + size].reshape(batch + output_shape + shape)
        parts.append(float(part) if part.ndim == 0 else part)
        at += size
    return tuple(parts)


def _differentiable(value) -> bool:
    """Whether a parameter value has a gradient: floats, fixed and complex numbers
    and arrays of them."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc" or isinstance(value, FixedArray)
    if isinstance(value, (list, tuple)):
        return _differentiable(np.asarray(value))
    return isinstance(value, (float, complex, Fixed)) and not isinstance(value, bool)


def _param_names(fn, chosen, default) -> list:
    names = [p.name for p in fn.params]
    if chosen is None:
        return list(default)
    chosen = [chosen] if isinstance(chosen, (str, int)) else list(chosen)
    result = []
    for item in chosen:
        name = names[item] if isinstance(item, int) and 0 <= item < len(names) else item
        if name not in names:
            raise RlangError(f"`{item}` is not a parameter of `{fn.name}`")
        result.append(name)
    return result


def _as_tuple(argnums) -> tuple:
    return tuple(argnums) if isinstance(argnums, (tuple, list)) else (argnums,)


def argnum_positions(argnums, count: int, name: str, driver: str) -> list:
    """The parameter positions `argnums` (an int or a tuple of ints; negative ones
    count from the end) names, in its order."""
    chosen = _as_tuple(argnums)
    if not all(isinstance(k, (int, np.integer)) and not isinstance(k, bool) for k in chosen):
        raise RlangTypeError(f"rlang.{driver}: argnums must be an int or a tuple of ints, "
                             f"got {argnums!r}")
    for k in chosen:
        if not -count <= k < count:
            raise RlangTypeError(f"rlang.{driver}: argnums {k} is not a parameter of "
                                 f"`{name}`, which has {count}")
    return [int(k) % count for k in chosen]


def hessian(function, args, loss, argnums=None) -> np.ndarray:
    """The Hessian of the final value of `loss` with respect to the initial values of
    the float inputs (scalars and array elements, flattened in argument order; C
    order within an array), by forward over reverse: for each input direction k the
    function runs forward on dual numbers whose tangent is e_k, then ~f runs over
    GVars of dual numbers; the tangent parts of the gradients are column k.  With
    `argnums` (an int or a tuple of ints, as `rlang.grad`'s), only the inputs of those
    arguments, in argument order: one run per such input.  The caller's arguments are
    left as they were, bit for bit."""
    args = called_with(function, args, "hessian")
    chosen = None if argnums is None else set(argnum_positions(
        argnums, len(args), function.name, "hessian"))
    with callers_arrays_kept(args, function):
        return _hessian(function, args, loss, chosen)


def _hessian(function, args, loss, chosen=None) -> np.ndarray:
    """The Hessian over the float inputs of the arguments at the positions `chosen`
    (None: all)."""
    module = function.module
    fn = module.unit.functions[function.name]
    if module.compiled is not None:
        result = module.compiled_or_none(_compiled().compiled_hessian, function.name,
                                         list(args), loss, function.inverse, chosen)
        if result is not None:
            return result
    target = resolve_loss(fn, loss)
    inputs = [i for i in flat_float_inputs(args) if chosen is None or i[0] in chosen]
    if not inputs:      # no column to run: the call and the loss still have to be right
        _check_apart(function, args)
        outputs = function(*[_copied(a) for a in args])
        loss_location(fn, list(outputs), target)
    columns = []
    for k in range(len(inputs)):
        final, engine = _dual_run(function, args, _loss_seed(fn, target),
                                  lambda position, index: 1.0 if (position, index) == inputs[k]
                                  else 0.0)
        columns.append([tangent_part(dual_gradient(engine, final[position], index))
                        for position, index in inputs])
    return np.array(columns, dtype=np.float64).T.reshape(len(inputs), len(inputs))


def _loss_seed(fn, view):
    """The seeding of `_dual_run` from the loss `view` of `fn`."""
    return lambda engine, values: _seed(engine, fn, values, view)


def _dual_run(function, args, seed, tangent):
    """f forward on dual numbers (the tangent of input (position, index) is
    `tangent(position, index)`), then ~f over GVars of them, whose gradients
    `seed(engine, values)` sets: (the final values, the gradient engine)."""
    module = function.module
    forward = _dual_interpreter(function, args)
    outputs = run_deep(forward.call, function.name, dual_arguments(args, tangent),
                       function.inverse)
    engine = GradInterpreter(module.unit, invcheck=module.invcheck, sandbox=module.sandbox)
    engine.evaluator.dual_mode = True
    values = [wrap(value) for value in outputs]
    seed(engine, values)
    return run_deep(engine.run, function.name, values, not function.inverse), engine


def _dual_interpreter(function, args) -> Interpreter:
    """An interpreter that runs `function` on dual numbers, the arguments `args`
    checked as a call checks them first: dual arguments are copies, so a written
    array passed twice would go unseen on them (LANGUAGE.md §5; the compiled
    backends refuse it)."""
    module = function.module
    forward = Interpreter(module.unit, invcheck=module.invcheck, sandbox=module.sandbox)
    _check_apart(function, args)
    forward.evaluator.dual_mode = True
    return forward


def _check_apart(function, args) -> None:
    """With invcheck on, refuse a written array of `args` that shares memory with
    another (LANGUAGE.md §5), before the driver runs on copies of them."""
    module = function.module
    if module.invcheck:
        interpreter = module.interpreter
        interpreter.check_argument_aliasing(interpreter.functions[function.name], args)


def hvp(function, args, vector, loss) -> tuple:
    """The Hessian of the final value of `loss` times `vector` (one entry per
    argument, shaped like it; None or 0 for those without a tangent), as a tuple
    shaped like the arguments (None for integers, bools and stacks): one forward-over-
    reverse run.  The caller's arguments are left as they were, bit for bit."""
    return gradient_and_hvp(function, args, vector, loss, "hvp")[1]


def gradient_and_hvp(function, args, vector, loss, driver: str = "jvp",
                     wanted=None) -> tuple:
    """`(gradient, hvp)`: the gradient of the final value of `loss` and the Hessian
    times `vector`, each shaped like the arguments (None for integers, bools and
    stacks), from one forward-over-reverse run: `rlang.jvp` of `rlang.grad`
    (Note [Transforms of transforms]).  The caller's arguments
    are left as they were, bit for bit.  `wanted`: the positions whose entries the
    caller reads (None: all); the others may be None."""
    quick = _module("hvp_call").quick_gradient_and_hvp(function, args, vector, loss, wanted)
    if quick is not None:           # Note [Gradient calls without Python]
        return quick
    args = called_with(function, args, driver)
    vector = _directions(function, args, vector, driver)
    with callers_arrays_kept(args, function):
        module = function.module
        if module.compiled is not None:
            made = _module("hvp_call").make_hvp_call

            def ran(run):       # (its builtin, for later calls)
                made(module.compiled, run, function.name, function.inverse, args, loss,
                     wanted)
            result = module.compiled_or_none(_compiled().compiled_gradient_and_hvp, function.name,
                                             list(args), vector, loss, function.inverse, ran,
                                             wanted)
            if result is not None:
                return result
        fn = module.unit.functions[function.name]
        final, engine = _dual_run(function, args, _loss_seed(fn, resolve_loss(fn, loss)),
                                  along(vector))
        inputs = float_positions(args)
        return tuple(tuple(entry(engine, final[k], args[k]) if k in inputs else None
                           for k in range(len(args))) for entry in (pulled_entry, hvp_entry))


def vjp_tangent(function, args, cotangents, vector) -> tuple:
    """`(pulled, moved)`: `pulled` is the gradient of Σ ⟨cotangent, output⟩ with
    respect to each argument at `args` (what `vjp_fn(cotangents)` gives), and `moved`
    its derivative when the arguments move along `vector`, Σᵢ cᵢ ∇²fᵢ · vector: one
    forward-over-reverse run (`cotangents` as `vjp_fn` takes them, `vector` as `hvp`
    does).  Both are shaped like the arguments, None for those without a gradient.
    The bridges' second derivatives of outputs are this (Note [Outputs in both
    modes], rlang/bridges/jax.py).  Float arguments have entries; complex and ulog
    ones are refused.  The caller's arguments are left as they were."""
    args = called_with(function, args, "vjp_tangent")
    for k, arg in enumerate(args):
        if np.iscomplexobj(arg) or isinstance(arg, (ULog, ULogArray)):
            raise RlangTypeError(f"second derivatives of outputs take real arguments; "
                                 f"argument {k} of `{function.name}` is "
                                 f"{'ulog' if isinstance(arg, (ULog, ULogArray)) else 'complex'}")
    seeds = _cotangents(function, args, cotangents)
    vector = _directions(function, args, vector, "vjp_tangent")
    with callers_arrays_kept(args, function):
        module = function.module
        if module.compiled is not None:
            result = module.compiled_or_none(_compiled().compiled_vjp_tangent, function.name,
                                             list(args), seeds, vector, function.inverse)
            if result is not None:
                return result

        def seed(engine, values):
            for k, cotangent in enumerate(seeds):
                if cotangent is not None:
                    values[k] = _seeded(engine, values[k], cotangent)

        final, engine = _dual_run(function, args, seed, along(vector))
        inputs = float_positions(args)
        return tuple(tuple(entry(engine, final[k], args[k]) if k in inputs else None
                           for k in range(len(args))) for entry in (pulled_entry, hvp_entry))


def jvp(function, args, tangents) -> tuple:
    """(outputs, output tangents) of `function` at `args` in the direction `tangents`
    (shaped as for `hvp`), by forward mode: one run on dual numbers.  The outputs are
    new values: the caller's arrays are left as they were.  An output without a
    tangent (integers, bools, stacks) has None.  `function` may also be made by
    `rlang.grad` or `rlang.value_and_grad`: forward over reverse
    (Note [Transforms of transforms])."""
    if hasattr(function, "rlang_transform"):
        return _jvp_of_transform(function, args, tangents)
    quick = _module("jvp_call").quick_jvp(function, args, tangents)
    if quick is not None:           # Note [Gradient calls without Python]
        return quick
    args = called_with(function, args, "jvp")
    tangents = _directions(function, args, tangents, "jvp")
    with callers_arrays_kept(args, function):
        module = function.module
        if module.compiled is not None:
            made = _module("jvp_call").make_jvp_call

            def ran(run):       # (its builtin, for later calls)
                made(module.compiled, run, function.name, function.inverse, args)
            result = module.compiled_or_none(_compiled().compiled_jvp, function.name, list(args),
                                             tangents, function.inverse, ran)
            if result is not None:
                return result
        forward = _dual_interpreter(function, args)
        outputs = run_deep(forward.call, function.name,
                           dual_arguments(args, along(tangents)), function.inverse)
    return tuple(primal(v) for v in outputs), tuple(tangent_of(v) for v in outputs)


# Note [Transforms of transforms]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `rlang.jvp(rlang.grad(f, loss), args, tangents)` is forward over reverse: the
# gradient and its derivative along `tangents` (the Hessian times `tangents`), from
# one run of f's tangent code and one of the tangent code of its gradient pass, as
# `rlang.hvp` makes them; it returns both, as `jax.jvp(jax.grad(f))` does, so a
# Newton step needs one run, not a gradient run and an `hvp` run.  For
# `value_and_grad` the value's tangent is ⟨gradient, tangents⟩ (the chain rule), the
# value from one more forward run.  Other compositions are not transforms of
# Python functions: rlang has no tracer, so `rlang.grad(rlang.grad(f))` or
# `rlang.jvp(rlang.jvp(f))` would have to differentiate Python.  Nested derivatives
# of any order pair are written in rev instead, where the outer transform sees
# the inner one (docs/nested.md).


def _jvp_of_transform(g, args, tangents) -> tuple:
    """`rlang.jvp` of `g`, a function made by `grad` or `value_and_grad`:
    `(outputs, output tangents)` of `g` at `args` (a tuple of `f`'s positional
    arguments) along `tangents` (one per argument, as `rlang.hvp`'s vector), from
    one forward-over-reverse run (Note [Transforms of transforms])."""
    kind, f, loss, pick = g.rlang_transform
    if kind not in ("grad", "value_and_grad"):
        raise RlangTypeError(f"rlang.jvp takes a function of a loaded program or one "
                             f"made by rlang.grad or rlang.value_and_grad, not {kind}")
    try:
        args = tuple(args)
    except TypeError:
        raise RlangTypeError(f"rlang.jvp takes the arguments as a list or a tuple, got "
                             f"{type(args).__name__}") from None
    wanted = getattr(pick, "positions", None)
    if kind == "value_and_grad" and wanted is not None:     # (the slope reads these)
        wanted = wanted | _along(tangents)
    gradient, moved = gradient_and_hvp(f, args, tangents, loss, wanted=wanted)
    if kind == "grad":
        return pick(gradient), pick(moved)
    value = loss_value(f, args, loss)
    slope = sum(float(np.sum(np.asarray(d) * np.asarray(t))) for d, t in
                zip(gradient, tangents) if d is not None and t is not None)
    return (value, pick(gradient)), (slope, pick(moved))


def _along(tangents) -> frozenset:
    """The positions of the entries of `tangents` that are not None (none where it
    is not a sequence: gradient_and_hvp refuses it)."""
    try:
        return frozenset(k for k, t in enumerate(tangents) if t is not None)
    except TypeError:
        return frozenset()


def vjp(function, *args) -> tuple:
    """`(outputs, vjp_fn)`: `outputs` is `function(*args)` (new values: the caller's
    arrays are left as they were), and `vjp_fn(cotangents)` — one cotangent per output,
    shaped as it, None for none — returns the gradient of Σ ⟨cotangent, output⟩ with
    respect to each argument (None for integers, bools and stacks), by one gradient
    run from the outputs.  `vjp_fn` may be called any number of times."""
    args = called_with(function, args, "vjp")
    with callers_arrays_kept(args, function):
        outputs = [_copied(v) for v in function(*args)]

    def vjp_fn(cotangents):
        module = function.module
        if module.compiled is not None:
            quick = _module("vjp_call").quick_vjp(function, outputs, cotangents)
            if quick is not None:           # Note [A pullback without Python]
                return quick
        seeds = _cotangents(function, outputs, cotangents)
        if module.compiled is not None:
            result = module.compiled_or_none(_compiled().compiled_vjp_pass, function.name,
                                             list(outputs), seeds, function.inverse)
            if result is not None:
                _module("vjp_call").make_vjp_call(module.compiled, function.name,
                                                  function.inverse, outputs)
                return result
        engine = GradInterpreter(module.unit, invcheck=module.invcheck, sandbox=module.sandbox)
        values = [wrap(_copied(v)) for v in outputs]
        for k, seed in enumerate(seeds):
            if seed is not None:
                values[k] = _seeded(engine, values[k], seed)
        final = run_deep(engine.run, function.name, values, not function.inverse)
        return tuple(_gradient_of(engine, value) for value in final)

    return tuple(outputs), vjp_fn


def _copied(value):
    return value.copy() if isinstance(value, (np.ndarray, Stack)) else value


def _seeded(engine: GradInterpreter, value, seed):
    """`value` (as the gradient run holds it) with the gradient `seed` (in value space;
    a ulog's goes into log space, ∂L/∂ℓ = x · ∂L/∂x)."""
    if type(value) is GVar:
        return GVar(value.x, seed * float(value.x) if isinstance(value.x, ULog) else seed)
    grad = engine.grads.of(value)
    if isinstance(value, ULogArray):
        seed = seed * np.exp(np.asarray(value, dtype=np.float64))
    grad[...] = seed
    return value


def _cotangents(function, outputs: list, cotangents) -> list:
    """The cotangents of `vjp_fn`, checked against the outputs: a number (complex for
    a complex output) or an array of the output's shape; None for none, and for
    outputs that carry no gradient."""
    try:
        cotangents = list(cotangents)
    except TypeError:
        raise RlangTypeError(f"the vjp of `{function.name}` takes the cotangents as a list "
                             f"or a tuple with one entry per output, got "
                             f"{type(cotangents).__name__}") from None
    if len(cotangents) != len(outputs):
        raise RlangTypeError(f"the vjp of `{function.name}` takes {len(outputs)} "
                             f"cotangents, one per output; got {len(cotangents)}")
    seeds = []
    for k, (cotangent, output) in enumerate(zip(cotangents, outputs)):
        differentiable = (_differentiable(output) or isinstance(output, ULog)) and \
            not isinstance(output, Stack)
        if cotangent is None or not differentiable:
            seeds.append(None)
            continue
        complex_ = np.iscomplexobj(output) or isinstance(output, complex)
        seed = np.asarray(cotangent, dtype=np.complex128 if complex_ else np.float64)
        shape = output.shape if isinstance(output, np.ndarray) else ()
        if seed.shape != shape:
            raise RlangTypeError(f"the vjp of `{function.name}`: cotangent {k} has shape "
                                 f"{seed.shape}; the output's is {shape}")
        seeds.append(seed if shape else seed.item())
    return seeds


def _directions(function, args: list, vector, driver: str = "hvp") -> list:
    """`vector` checked against the arguments: one entry per argument, a number for
    a float scalar and an array of its shape for a float array (None for no
    direction, and for arguments that have no tangent)."""
    try:
        vector = list(vector)
    except TypeError:
        raise RlangTypeError(f"rlang.{driver} takes the vector as a list or a tuple with one "
                             f"entry per argument, got {type(vector).__name__}") from None
    if len(vector) != len(args):
        raise RlangTypeError(f"rlang.{driver}: the vector has {len(vector)} entries; "
                             f"`{function.name}` takes {len(args)} arguments")
    floats = float_positions(args)
    out = []
    for k, (direction, arg) in enumerate(zip(vector, args)):
        if direction is None or k not in floats:
            out.append(None if k not in floats else
                       (np.zeros(arg.shape) if isinstance(arg, np.ndarray) else 0.0))
            continue
        if isinstance(arg, np.ndarray):
            direction = np.asarray(direction, dtype=np.float64)
            if direction.shape != arg.shape:
                raise RlangTypeError(f"rlang.{driver}: the vector's entry {k} has shape "
                                     f"{direction.shape}; the argument's is {arg.shape}")
        else:
            direction = np.asarray(direction, dtype=np.float64)
            if direction.shape != ():
                raise RlangTypeError(f"rlang.{driver}: the vector's entry {k} must be a "
                                     "number for a scalar argument")
            direction = float(direction)
        out.append(direction)
    return out


def hessian_diag(function, args, loss) -> tuple:
    """The diagonal of the Hessian of the final value of `loss`, shaped like the
    arguments (None for those without a tangent).  It is read off `hessian`'s
    matrix: one forward-over-reverse run per float input, as `hessian` makes."""
    args = called_with(function, args, "hessian_diag")
    with callers_arrays_kept(args, function):
        diagonal = iter(np.diag(_hessian(function, args, loss)).tolist())
    inputs = float_positions(args)
    out = []
    for k, arg in enumerate(args):
        if k not in inputs:
            out.append(None)
        elif isinstance(arg, np.ndarray):
            out.append(np.array([next(diagonal) for _ in range(arg.size)]).reshape(arg.shape))
        else:
            out.append(next(diagonal))
    return tuple(out)
