"""Calls and gradients over a batch in one native call per pass (`rlang.vmap`,
LANGUAGE.md §13), on a compiled backend that has batches (`functions.batches`).

    batched_call(functions, name, values, batches, n, inverse)
    batched_gradient(functions, name, values, batches, n, loss, inverse, value)

`values` are the first item's arguments, bound to the parameters (arrays: item 0
of their batch, as a view); `batches[k]` is argument k's batch, axis 0 the items,
in the parameter's storage type, or None where every item takes `values[k]`
(rlang/backends/llvm/batch.py).  The gradient is the one of rlang/ad/compiled.py,
a pass at a time: the forward runs of all items, the seeds of all items set at
once, the gradient passes of all items.  Its gradients have the batch axis in
front for every argument, batched or not (each item has its own gradient).
"""
from __future__ import annotations

import numpy as np

from ..ir.nodes import symbol_of
from ..numbers import ULogArray
from ..values import read_element, repeated
from .compiled import cached_plan, plan_key
from .loss import resolve_loss


def batched_call(functions, name: str, values: list, batches: list, n: int,
                 inverse: bool) -> None:
    """Run f (or ~f) on every item; batches are updated in place."""
    types = functions.types_of(values)
    native = functions.native(name, types, inverse)
    functions.run_batch(native, symbol_of(name, types, inverse), values, batches, n)


def batched_gradient(functions, name: str, values: list, batches: list, n: int, loss,
                     inverse: bool, value: bool = False) -> tuple:
    """(the loss values of the items, as one array, or None without `value`; the
    gradients, one array per argument with the items along axis 0, None for
    integers and bools).  The batches are back as they were, up to rounding (the
    caller keeps them: Note [The caller's arrays], ad/callers_arrays.py)."""
    types = functions.types_of(values)
    key = plan_key(name, ("batch", types), loss, inverse)
    plan = functions.plans.get(key) if key is not None else None
    if plan is None:            # the interpreter's errors first, then both passes compiled
        resolve_loss(functions.unit.functions[name], loss)
        functions.native(name, types, inverse, derivative="grad")
    forward = functions.native(name, types, inverse)
    functions.run_batch(forward, symbol_of(name, types, inverse), values, batches, n)
    outputs = [first_item(b) if b is not None else v for v, b in zip(values, batches)]
    plan = cached_plan(functions, key, plan, name, outputs, loss, inverse)
    losses = [b if b is not None else repeated(v, n) for v, b in zip(values, batches)]
    where = (slice(None),) + (plan.index or ())
    values_out = loss_values(losses[plan.position], where, plan.part) if value else None
    gradients = [None if g is None else np.zeros((n,) + np.shape(g), dtype=np.asarray(g).dtype)
                 for g in plan.zero_gradients(outputs)]
    gradients[plan.position][where] = _seeds(losses[plan.position], where, plan.part)
    shadows = [g for g in gradients if g is not None]
    functions.run_batch(plan.native, plan.symbol, outputs + [g[0] for g in shadows],
                        list(batches) + shadows, n)
    for k in plan.log_space:        # back in value space: ∂L/∂x = ∂L/∂ℓ · e^(−ℓ)
        gradients[k] = _in_value_space(gradients[k], losses[k])
    return values_out, tuple(gradients)


def first_item(batch: np.ndarray):
    """Item 0 of a batch: a view of a sub-array, or a scalar as a rev value."""
    return read_element(batch, (0,)) if batch.ndim == 1 else batch[0]


def loss_values(batch: np.ndarray, where: tuple, part):
    """The loss view's value in every item: a copy of `batch[where]` (fixed and ulog
    stay fixed and ulog arrays), or its `.re` / `.im`."""
    values = batch[where]
    if part is not None:
        return np.array(values.real if part == "re" else values.imag)
    return values.copy()


def _seeds(batch: np.ndarray, where: tuple, part):
    """The loss gradients the passes start with (ad/compiled.py `_seed`): 1, 1j for
    an `.im` view, or for a ulog loss e^ℓ (ulog gradients live in log space)."""
    if part == "im":
        return 1j
    if isinstance(batch, ULogArray):
        return np.exp(np.asarray(batch[where], dtype=np.float64))
    return 1.0


def _in_value_space(gradients: np.ndarray, inputs: np.ndarray) -> np.ndarray:
    """ad/compiled.py `_in_value_space` for a batch: a ulog scalar input of −∞ (zero)
    has the gradient nan, as there."""
    logs = np.asarray(inputs, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        scaled = gradients * np.exp(-logs)
    if logs.ndim == 1:          # scalars
        scaled = np.where(logs > -np.inf, scaled, np.nan)
    return scaled
