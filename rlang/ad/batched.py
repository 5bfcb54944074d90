"""Calls and gradients over a batch in one native call per pass (`rlang.vmap`,
LANGUAGE.md §13), on a compiled backend that has batches (`functions.batches`).

    batched_call(functions, name, values, batches, n, inverse)
    batched_gradient(functions, name, values, batches, n, loss, inverse, value)
    batched_jacobian(functions, name, values, batches, n, output, inverse)

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
from .jacobian_rows import laned_plan, plain_float
from .lanes import lane_arguments
from .loss import resolve_loss
from .symbols import unwanted_positions


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


# Note [Batched Jacobians]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# `rlang.vmap(rlang.jacrev(f, output))` wants, for every item, the gradients of
# each scalar of `output`.  Taken as `rlang.vmap` of one `rlang.grad` per scalar,
# that is a forward run and a gradient pass over the batch per scalar, and every
# pass recomputes the values (GradBench's ba: a reprojection's rotation, sine and
# cosine) that only the cotangents tell apart.  Here the forward runs once over the
# batch, then each group of W scalars (LANES, at least 2) takes one batched run of
# the gradient pass with lanes (Note [Gradient lanes], ad/lanes.py): each item's
# values once, its W cotangents side by side.  A pass restores the forward's
# inputs from its outputs, so every group but the last starts from a copy of the
# outputs.  Each lane's gradients are written in place into its row of the
# result (strided views: the batch entry takes any item step), so nothing is
# copied afterwards and no page is touched twice: with fresh gradient arrays per
# lane, copied into the result, ba1's pass took 12.7 ms, with views 5.2 ms.  Where
# lanes do not apply (a pass that computes a value from a gradient, an argument
# that is not a plain float or float64 array), the caller takes the Jacobians item
# by item (drivers.py `jacobians`), with the same values.

def batched_jacobian(functions, name: str, values: list, batches: list, n: int,
                     output: int, inverse: bool, wanted=None):
    """Per argument, the Jacobian of parameter `output`'s final value with respect
    to it for every item, shaped (n,) + output's shape + the argument's, or None for
    integers and bools; None instead of the tuple where the laned pass does not
    apply (Note [Batched Jacobians]).  The batches end as the forward found them,
    up to rounding (the caller keeps the caller's arrays).  `wanted`: the positions
    the caller reads (None: all); the Jacobians of arguments f only reads outside
    it are None, not computed (Note [Gradients nobody reads], ad/derivatives.py)."""
    if not all(plain_float(v) for v in values if _has_gradient(v)) or \
            not plain_float(values[output]):
        return None
    rows = list(np.ndindex(np.shape(values[output])))
    unwanted = unwanted_positions(   # of arguments f only reads: see `unread` below
        [k for k, v in enumerate(values) if _has_gradient(v)], wanted,
        kept=(*functions.interpreter.written.get(name, ()), output))
    lanes, plan = laned_plan(functions, name, values, inverse, len(rows), unwanted)
    if plan is None:
        return None
    types = functions.types_of(values)
    functions.run_batch(functions.native(name, types, inverse),
                        symbol_of(name, types, inverse), values, batches, n)
    shapes = [None if z is None else np.shape(v) for v, z in zip(values, plan.zeros)]
    # an unwanted gradient's lanes share one array that the pass never reads and,
    # its updates dropped, does not write (np.empty: no page of it is faulted in)
    unread = {k: np.empty((n,) + shapes[k]) for k in unwanted if shapes[k] is not None}
    found = [None if s is None or k in unread else
             np.zeros((n,) + np.shape(values[output]) + s) for k, s in enumerate(shapes)]
    for start in range(0, len(rows), lanes):
        group = rows[start:start + lanes]
        last = start + lanes >= len(rows)
        here = [b if last or b is None else b.copy() for b in batches]
        firsts = [v if h is None else first_item(h) for v, h in zip(values, here)]
        # each lane's gradients are written where its row of the Jacobians goes
        gradients = [[None if s is None else unread[k] if k in unread else
                      f[(slice(None),) + row] for k, (s, f) in enumerate(zip(shapes, found))]
                     for row in group]
        gradients += [[None if s is None else unread[k] if k in unread else
                       np.zeros((n,) + s) for k, s in enumerate(shapes)]
                      for _ in range(lanes - len(group))]      # (lanes with no row)
        for lane, row in enumerate(group):
            gradients[lane][output][(slice(None),) + row] = 1.0
        shadows = lane_arguments(gradients)
        functions.run_batch(plan.native, plan.symbol, firsts + [s[0] for s in shadows],
                            here + shadows, n)
    return tuple(found)


def _has_gradient(value) -> bool:
    """Whether a value has a gradient of some kind (not an integer or bool)."""
    if isinstance(value, np.ndarray):
        return value.dtype.kind not in "iub"
    return not isinstance(value, (int, bool, np.integer, np.bool_))


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
