"""The values of the interpreter's forward-over-reverse runs (Hessians, `hvp`,
`jvp`; LANGUAGE.md §9): float arguments going in as dual numbers, and primal values,
tangents and gradient entries coming out.

`flat_float_inputs(args)` lists the float scalar inputs (a Hessian's rows and
columns: float scalars and the elements of float arrays, in argument order, C order
within an array), `float_positions(args)` the arguments that hold one without
listing the elements; `dual_arguments(args, tangent)` makes the dual copies a run
takes.  ulog arguments are held constant (docs/ad.md): their logarithms go in as
duals without tangents, so that the values the program computes from them can
carry tangents (Note [Tangents of ulog values], rlang/numbers.py).
"""
from __future__ import annotations

import numpy as np

from ..dual import Dual, parts, refuse_tangent
from ..gvalue import GVar
from ..numbers import F32, ULog, ULogArray


def along(directions: list):
    """The tangent of input (position, index) in `directions` (as the drivers'
    `_directions` checks them), for `dual_arguments`."""
    return lambda position, index: float(directions[position] if index is None
                                         else directions[position][index])


def primal(value):
    """A dual run's output as a call returns it."""
    if type(value) is Dual:
        return value.a
    if type(value) is ULog:
        return ULog(parts(value.log)[0])
    if isinstance(value, ULogArray):
        return primal(value.view(np.ndarray)).view(ULogArray)
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.vectorize(lambda d: d.a if type(d) is Dual else float(d),
                            otypes=[np.float64])(value)
    return value


def tangent_of(value):
    """A dual run's output's tangent (a ulog's in value space, dx = x·dℓ, as ulog
    gradients are reported; None for outputs without one)."""
    if type(value) is Dual:
        return value.b
    if type(value) is ULog:
        return value.value_tangent(parts(value.log)[1])
    if isinstance(value, ULogArray):
        return np.vectorize(lambda log: ULog(log).value_tangent(parts(log)[1]),
                            otypes=[np.float64])(value.view(np.ndarray))
    if isinstance(value, np.ndarray) and value.dtype == object:
        return np.vectorize(lambda d: d.b if type(d) is Dual else 0.0,
                            otypes=[np.float64])(value)
    if isinstance(value, float):
        return 0.0
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return np.zeros(value.shape)
    return None


def pulled_entry(engine, value, arg):
    """The value part of a dual run's gradient of an argument (`hvp_entry`: the
    tangent part)."""
    if not isinstance(arg, np.ndarray):
        return float(primal(dual_gradient(engine, value, None)))
    grad = engine.grads.of(value)
    return np.zeros(arg.shape) if grad is None else primal(grad).astype(np.float64)


def hvp_entry(engine, value, arg):
    if not isinstance(arg, np.ndarray):
        return tangent_part(dual_gradient(engine, value, None))
    out = np.zeros(arg.shape)
    for index in np.ndindex(arg.shape):
        out[index] = tangent_part(dual_gradient(engine, value, index))
    return out


def float_positions(args) -> set:
    """The positions of the arguments that hold at least one float scalar input
    (those `flat_float_inputs` lists), found without listing the elements: the
    drivers that only ask which arguments have tangents stay O(arguments), not
    O(array elements), per call."""
    positions = set()
    for position, value in enumerate(args):
        if isinstance(value, (list, tuple)):
            value = np.asarray(value)
        if isinstance(value, np.ndarray):
            if value.dtype.kind == "f" and value.size and not isinstance(value, ULogArray):
                positions.add(position)
        elif isinstance(value, (float, np.floating)):
            positions.add(position)
    return positions


def flat_float_inputs(args) -> list:
    """(argument position, index or None) of every float scalar input."""
    inputs = []
    for position, value in enumerate(args):
        if isinstance(value, ULogArray):
            continue
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            inputs.extend((position, index) for index in np.ndindex(value.shape))
        elif isinstance(value, (list, tuple)):
            array = np.asarray(value)
            if array.dtype.kind == "f":
                inputs.extend((position, index) for index in np.ndindex(array.shape))
        elif isinstance(value, (float, np.floating)):
            inputs.append((position, None))
    return inputs


def dual_arguments(args, tangent) -> list:
    """Copies of the arguments with float values as dual numbers, the tangent of
    input (position, index) `tangent(position, index)`.  f32 inputs are refused: the
    interpreter's dual numbers are f64 (the llvm backend computes such Hessians)."""
    dual_args = []
    for position, value in enumerate(args):
        if isinstance(value, (list, tuple)):
            value = np.asarray(value)
        if isinstance(value, (F32, np.float32)) or \
                isinstance(value, np.ndarray) and value.dtype == np.float32:
            refuse_tangent(Dual(0.0, 1.0), "f32")
        if isinstance(value, ULogArray):        # logarithms without tangents, as duals
            logs = np.empty(value.shape, dtype=object)
            for index in np.ndindex(value.shape):
                logs[index] = Dual(np.ndarray.__getitem__(value, index))
            dual_args.append(logs.view(ULogArray))
        elif isinstance(value, np.ndarray) and value.dtype.kind == "f":
            duals = np.empty(value.shape, dtype=object)
            for index in np.ndindex(value.shape):
                duals[index] = Dual(value[index], tangent(position, index))
            dual_args.append(duals)
        elif isinstance(value, (float, np.floating)):
            dual_args.append(Dual(value, tangent(position, None)))
        elif isinstance(value, np.ndarray):
            dual_args.append(value.copy())
        else:
            dual_args.append(value)
    return dual_args


def dual_gradient(engine, value, index):
    """The dual gradient a run left for an argument's final value `value` (a GVar,
    or an element `index` of an array's gradient), 0.0 where there is none."""
    if index is None:
        return value.g if type(value) is GVar else 0.0
    grad = engine.grads.of(value)
    return 0.0 if grad is None else grad[index]


def tangent_part(value) -> float:
    """The tangent of a dual number (0.0 for a plain number)."""
    return value.b if type(value) is Dual else 0.0
