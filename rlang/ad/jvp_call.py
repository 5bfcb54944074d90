"""`rlang.jvp` as one builtin call (Note [Gradient calls without Python],
rlang/backends/llvm/call_builtins.py): after a compiled jvp whose arguments bound as
they are, the backend is asked for a builtin making the same run on arguments of
the same kinds, and later calls try it first.

    quick_jvp(function, args, tangents)           # (outputs, tangents) or None
    make_jvp_call(functions, run, name, inverse, args)   # after a run (compiled.py)

The builtin takes f's arguments and the tangents' entries; it runs f's tangent run
on copies of the arrays (the outputs are new values, as `compiled_jvp` makes them)
with the tangents (copies of the tangents' arrays; zeros where an entry is None)
and gives back (outputs, output tangents), None for the tangents of integers.
Anything it does not take (bools, stacks, complex or ulog values, a tangent of
another kind) goes the general way, with its conversions and errors.  A jvp there
took 45–50 µs of Python; GradBench's saddle calls it twice a step of its descent
(benchmarks/README.md).
"""
from __future__ import annotations

import numpy as np

from ..lower.argument_types import signature_of
from .compiled import plan_key
from .native_calls import NativeCall, call_made, input_kinds, is_array


def _key(name: str, inverse: bool, args):
    key = plan_key(name, signature_of(args), (), inverse)
    return key and ("jvp call", key)


def quick_jvp(function, args, tangents):
    """(outputs, output tangents) by the builtin an earlier call of these kinds made,
    or None (take the general way)."""
    return call_made(function, args, tangents, _key)


def make_jvp_call(functions, run, name: str, inverse: bool, args: list) -> None:
    """Ask the backend for the builtin of `run` (a `_ForwardOverReverse` of `name`
    that ran on `args`), until it gives one or says it has none (False: its code is
    not final yet)."""
    key = _key(name, inverse, args)
    if not key or functions.plans.get(key) is not None or \
            not all(v is a for v, a in zip(run.values, args)):
        return
    program = _program(run, args)
    call = None if program is None else \
        functions.native_call([(run.forward, run.forward_symbol)], program)
    if call is not False:
        functions.plans[key] = (call, (run.forward,)) if call else False


def _program(run, args: list):
    """The NativeCall of `run`'s tangent run, or None where a builtin cannot make it:
    holders A (copies of the arrays, the scalars as they are) and T (the tangents of
    the float ones), one run on A + T, results (A, T)."""
    kinds, n = run.kinds, len(args)
    signature = signature_of(args)
    inputs = input_kinds(signature, run.types) if kinds is not None and signature else None
    if inputs is None or run.held_constant:
        return None
    holders = tuple(("copy", k) if is_array(inputs[k]) else ("input", k) for k in range(n))
    outputs = tuple(("array", k) if is_array(kind) else ("float", k) if kind == "f64"
                    else ("int", k) for k, kind in enumerate(inputs))
    tangents = []
    for k, kind in enumerate(kinds):
        if kind is None:
            tangents.append(None)
        elif kind is float or kind is np.float64:
            holders += (("direction", n + k, k),)
            tangents.append(("float" if kind is float else "array", len(holders) - 1))
        else:                       # complex
            return None
    return NativeCall(inputs=inputs + ("any",) * n, holders=holders,
                      runs=(tuple(range(len(holders))),), results=(outputs, tuple(tangents)))
