"""`rlang.vjp`'s pullback as one builtin call (Note [Gradient calls without Python],
rlang/backends/llvm/call_builtins.py): after a compiled pullback ran on outputs that
bound as they are, the backend is asked for a builtin making the same pass on
outputs and cotangents of the same kinds, and later calls of `vjp_fn` try it first.

    quick_vjp(function, outputs, cotangents)      # the gradients, or None
    make_vjp_call(functions, name, inverse, outputs)   # after a compiled pullback

The builtin takes the outputs and the cotangents' entries.  It runs the gradient
pass on copies of the arrays the pass writes (the outputs stay as they are for the
next call, as `compiled_vjp_pass` leaves them) with each float output's gradient
seeded with its cotangent (a copy of an array of the output's extents, a float's
value, zeros where the entry is None) and gives back the gradients, None for
integers and bools.  Anything it does not take (a cotangent that is an int, a
list, another shape or dtype; ulog, complex or stack outputs; code on a device)
goes the general way, with its conversions and errors.

Note [A pullback without Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
The pullback of a sparse y += A·x (CSC, 1000 × 1000, 50,000 nonzeros) spent about
11 µs a call in Python around a pass of about 40 µs: checking the cotangents,
the plan's key, copying, making the zero gradients and seeding them, packing and
unpacking the entry's buffer.  A pullback is what `jax.vjp`'s users call in a
loop (a layer's backward step), and the bridges' backward rules are pullbacks,
so the whole call is one builtin, as `rlang.grad`'s and `rlang.jvp`'s are.
"""
from __future__ import annotations

import numpy as np

from ..lower.argument_types import signature_of
from .compiled import vjp_plan_key
from .native_calls import NativeCall, call_made, input_kinds, is_array


def _key(name: str, inverse: bool, outputs):
    key = vjp_plan_key(name, inverse, signature_of(outputs))
    return key and ("vjp call", key)


def quick_vjp(function, outputs: list, cotangents):
    """The gradients by the builtin an earlier pullback of outputs of these kinds
    made, or None (take the general way)."""
    if not isinstance(cotangents, (list, tuple)) or len(cotangents) != len(outputs):
        return None
    return call_made(function, outputs, cotangents, _key)


def make_vjp_call(functions, name: str, inverse: bool, outputs: list) -> None:
    """Ask the backend for the builtin of the pullback of `name` from `outputs` (its
    plan made by `compiled_vjp_pass`), until it gives one or says it has none
    (False: its code is not final yet)."""
    key = _key(name, inverse, outputs)
    if not key or functions.plans.get(key) is not None:
        return
    plan = functions.plans.get(key[1])
    program = None if plan is None else _program(functions, plan, outputs)
    call = None if program is None else \
        functions.native_call([(plan.native, plan.symbol)], program)
    if call is not False:
        functions.plans[key] = (call, (plan.native,)) if call else False


def _program(functions, plan, outputs: list):
    """The NativeCall of `plan`'s pass from `outputs`, or None where a builtin
    cannot make it: holders O (the outputs, copies of the arrays the pass writes)
    and G (the float outputs' gradients, from their cotangents), one run on O + G,
    results the gradients."""
    signature = signature_of(outputs)
    inputs = input_kinds(signature, plan.types) if signature else None
    if inputs is None or not plan.plain or plan.on_device or plan.log_space:
        return None
    written = functions.arrays_written(plan.native)         # None: any of them
    n = len(outputs)
    holders = tuple(("copy", k) if is_array(inputs[k]) and (written is None or k in written)
                    else ("input", k) for k in range(n))
    results = []
    for k, kind in enumerate(plan.zeros):
        if kind is None:
            results.append(None)
        elif kind is float and inputs[k] == "f64" or \
                kind is np.float64 and is_array(inputs[k]):
            holders += (("direction", n + k, k),)
            results.append(("float" if kind is float else "array", len(holders) - 1))
        else:                       # complex gradients
            return None
    return NativeCall(inputs=inputs + ("any",) * n, holders=holders,
                      runs=(tuple(range(len(holders))),), results=tuple(results))
