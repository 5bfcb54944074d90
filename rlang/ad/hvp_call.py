"""`rlang.hvp` (and `gradient_and_hvp`) as one builtin call (Note [Gradient calls
without Python], rlang/backends/llvm/call_builtins.py): after a compiled
forward-over-reverse run whose arguments bound as they are, the backend is asked
for a builtin making the same run on arguments of the same kinds, and later calls
try it first.

    quick_gradient_and_hvp(function, args, vector, loss, wanted)  # (gradient, hvp) or None
    make_hvp_call(functions, run, name, inverse, args, loss, wanted)  # after a run

The builtin takes f's arguments and the vector's entries; it runs f's tangent run
on copies of the arrays f writes (the others as they are) with the tangents (copies
of the vector's arrays; zeros where an entry is None), then the tangent run of the
gradient pass with the loss seeded, and gives back (the gradients, their
tangents), None for arguments without a gradient, as `compiled_gradient_and_hvp`
does; where the caller reads only the entries at `wanted` (the positions of
`rlang.jvp(rlang.grad(f, loss, argnums))`), None for the others too, whose arrays
the builtin then keeps for its next call (Note [Scratch arrays kept],
rlang/backends/llvm/call_builtin_code.py).  Anything it does not take goes the
general way, with its conversions and errors.
"""
from __future__ import annotations

from ..frontend import ast
from ..lower.argument_types import signature_of
from .compiled import plan_key
from .symbols import unwanted_positions
from .loss import loss_location
from .native_calls import NativeCall, call_made, gradient_holders, input_kinds, results_of


def _key(name: str, inverse: bool, args, loss, wanted=None):
    key = plan_key(name, signature_of(args), loss, inverse)
    return key and ("hvp call", key, wanted)


def quick_gradient_and_hvp(function, args, vector, loss, wanted=None):
    """(gradient, hvp) by the builtin an earlier call of these kinds made, or None
    (take the general way)."""
    return call_made(function, args, vector,
                     lambda name, inverse, args: _key(name, inverse, args, loss, wanted))


def make_hvp_call(functions, run, name: str, inverse: bool, args: list, loss,
                  wanted=None) -> None:
    """Ask the backend for the builtin of `run` (a `_ForwardOverReverse` of `name`
    with `loss` that ran on `args` as they are), until it gives one or says it has
    none (False: its code is not final yet); `wanted` as in the module's text."""
    key = _key(name, inverse, args, loss, wanted)
    if not key or functions.plans.get(key) is not None:
        return
    program = _program(run, args, functions.invcheck, wanted)
    entries = [(run.forward, run.forward_symbol), (run.backward, run.backward_symbol)]
    call = None if program is None else functions.native_call(entries, program)
    if call is not False:
        functions.plans[key] = (call, (run.forward, run.backward)) if call else False


def _program(run, args: list, invcheck: bool, wanted=None):
    """The NativeCall of `run`'s calls, or None where a builtin cannot make them:
    f's tangent run on holders A (copies of the arrays f writes, the others as they
    are) and T (the tangents), then the gradient pass's tangent run on A, G (the
    gradients, the loss's seeded), T and Z (the gradients' tangents, zeros)."""
    kinds, n = run.kinds, len(args)
    signature = signature_of(args)
    inputs = input_kinds(signature, run.types) if kinds is not None and signature else None
    location = _constant_location(run, args)
    if inputs is None or location is None or run.held_constant:
        return None
    position, index = location
    gradients = gradient_holders(kinds, position, index)
    zeros = gradient_holders(kinds, None, None)
    if gradients is None or kinds[position] is None:
        return None
    arrays = [k for k, kind in enumerate(signature) if isinstance(kind, tuple)]
    written = [k for k in run.functions.interpreter.written.get(run.fn.name, ()) if k in arrays]
    # An array f does not write, neither run writes (the gradient pass writes what f
    # does): it is passed as it is, not copied (kmeans' points, 0.6-1.3 MB a call).
    holders = tuple(("copy", k) if k in written else ("input", k) for k in range(n))
    tangents = tuple(("direction", n + k, k) for k, kind in enumerate(kinds)
                     if kind is not None)
    a, t = tuple(range(n)), tuple(range(n, n + len(tangents)))
    g = tuple(range(n + len(tangents), n + len(tangents) + len(gradients)))
    z = tuple(range(g[-1] + 1, g[-1] + 1 + len(zeros)))
    holders += tangents + gradients + zeros
    gradient_of = [k for k, kind in enumerate(kinds) if kind is not None]
    # the gradients (and their tangents) of arrays f only reads, unwanted: the pass
    # adds to them and never reads them (Note [Gradients nobody reads], derivatives.py)
    never_read = unwanted_positions([k for k in gradient_of if k in arrays], wanted,
                                    kept=(*written, position))
    unread = tuple(h for k, h_g, h_z in zip(gradient_of, g, z) if k in never_read
                   for h in (h_g, h_z))
    return NativeCall(
        inputs=inputs + ("any",) * n, holders=holders, runs=(a + t, a + g + t + z),
        results=(_only(results_of(kinds, holders, g[0]), wanted),
                 _only(results_of(kinds, holders, z[0]), wanted)),
        apart=tuple(written) if invcheck else (),
        inside=() if index is None else ((position, index),), unread=unread)


def _constant_location(run, args: list):
    """(position, index) of the loss, where it names the same element in every call
    (no index, or constant ones), else None."""
    view = run.view
    if view is None or isinstance(view, ast.Field):
        return None
    if isinstance(view, ast.Index) and not all(isinstance(i, ast.IntLit)
                                               for i in view.indices):
        return None
    position, index = loss_location(run.fn, list(args), view)
    if index is not None and any(i < 0 for i in index):
        return None
    return position, index


def _only(items: tuple, wanted) -> tuple:
    """Result items with None at the positions `wanted` (None: all) leaves out."""
    return items if wanted is None else \
        tuple(item if k in wanted else None for k, item in enumerate(items))
