"""Compiled gradients (and Hessians) on the llvm backend: the drivers.

`compiled_gradient(functions, name, args, loss, inverse)` is `rlang.gradient` for a
module loaded with `backend="llvm"`, and mirrors the interpreter's driver
(rlang/ad.py) step for step: run f forward (compiled), seed the loss's gradient
with 1, run the gradient pass — the adjoint of ~f's IR (rlang/ad_ir.py), compiled —
which restores the inputs (arrays in place) and leaves the gradients in its
gradient arguments.  Results have the interpreter's form: a float per float scalar,
an f64 array per float array, None for integers and bools.
"""
from __future__ import annotations

import numpy as np

from ..ad import loss_location, resolve_loss
from ..ad_ir import AdjointFunction, adjoint_module
from ..ir_shadow import shadow_type
from ..lower import lower, symbol_of, type_of_value
from .llvm_emit import emit_module


def compiled_gradient(functions, name: str, args: list, loss, inverse: bool) -> tuple:
    fn = functions.unit.functions[name]
    outputs = functions.call(name, args, inverse)
    view = resolve_loss(fn, loss)
    position, index = loss_location(fn, outputs, view)
    types = tuple(type_of_value(v) for v in outputs)
    gradients = [_zero_gradient(v, t) for v, t in zip(outputs, types)]
    if index is None:
        gradients[position] = 1.0
    else:
        gradients[position][index] = 1.0
    native = functions.native(name, types, inverse, derivative="grad")
    symbol = AdjointFunction.symbol(symbol_of(name, types, not inverse))
    shadows = [g for g in gradients if g is not None]
    new = functions.run(native, symbol, outputs + shadows)
    returned = iter(new[len(outputs):])
    result = []
    for gradient in gradients:
        if gradient is None:
            result.append(None)
        else:
            value = next(returned)
            result.append(gradient if isinstance(gradient, np.ndarray) else float(value))
    return tuple(result)


def _zero_gradient(value, t):
    """The zero gradient of a float argument (None for integers and bools)."""
    if shadow_type(t) is None:
        return None
    return np.zeros(value.shape) if isinstance(value, np.ndarray) else 0.0


def build_derivative(unit, name: str, types: tuple, inverse: bool, invcheck: bool,
                     derivative: str):
    """The IR and LLVM modules of a derivative of one specialisation: "grad", the
    gradient pass of `name` (the adjoint of its inverse)."""
    if derivative != "grad":
        raise ValueError(derivative)
    module = adjoint_module(lower(unit, name, types, not inverse, invcheck))
    return module, emit_module(module)
