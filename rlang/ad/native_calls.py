"""What a derivative's whole call does, as data a backend can compile into one builtin
function (Note [Gradient calls without Python], rlang/backends/llvm/call_builtins.py):
`NativeCall`, and the programs of a gradient route's calls and of `rlang.hvp`'s.

A call's builtin takes `inputs` (Python objects, checked against their kinds), fills
`holders` (one word each, as an entry point's one-word layout reads them: a float's
value, an int's, an array object's address), runs entry points on pointer arrays to
some of those holders, in turn, and returns `results`.
"""
from __future__ import annotations

import numpy as np

from ..records import record


@record
class NativeCall:
    """One call as a builtin makes it.

    - `inputs`: the kind of each argument of the builtin: `"f64"` (exactly a float),
      `"i64"` (an int in i64's range), `(dtype, rank, unit last stride)` (an
      `np.ndarray` of signature_of's kind), or `"any"` (checked where a holder
      reads it, if one does: a direction);
    - `holders`: where each holder's value comes from: `("input", j)`, `("copy", j)`
      (a new C-ordered copy of array input j), `("zeros", j)` (new float64 zeros of
      input j's extents), `("number", x)` (a float), `("seeded", j, index)` (zeros
      with 1.0 at `index`), `("direction", j, k)` (input j, a direction for input k:
      None gives zeros or 0.0, a float its value, a float64 array of input k's
      extents a copy of it);
    - `runs`: per entry point, in order, the holders its argument pointers point at;
    - `results`: the returned tuple: per item None, `("float", h)`, `("int", h)`,
      `("array", h)` (the array made for holder h), `("input", j)` (input j itself),
      `("read", k)` (the k-th of `reads`) or a nested tuple of such;
    - `reads`: `(r, h, index)`: the float in holder h (index None), or the element
      `index` of its float64 array, read after run r (before the next changes it);
    - `writable`: array inputs that must be writable; `saved`: array inputs copied
      before the runs and put back after; `apart`: array inputs that must not overlap
      another array input; `inside`: `(j, index)` with the element inside input j;
    - `unread`: "zeros" holders that no run reads (the gradients of arguments f
      only reads, which the caller does not want): an array kept for one from the
      last call is taken as it is, not zeroed again.
    """
    inputs: tuple
    holders: tuple
    runs: tuple
    results: tuple
    writable: tuple = ()
    saved: tuple = ()
    apart: tuple = ()
    inside: tuple = ()
    reads: tuple = ()
    unread: tuple = ()


def is_array(kind) -> bool:
    """Whether an input kind is an array's `(dtype, rank, unit last stride)`."""
    return isinstance(kind, tuple) and isinstance(kind[0], np.dtype)


def rank_of(call, j: int):
    """The rank of array input j of `call`, or None where it is not an array."""
    kind = call.inputs[j]
    return kind[1] if is_array(kind) else None


def indexed_elements(call) -> set:
    """(input, index) of every element the call reads or writes at a constant index
    (its `inside`, its seeds, its reads), each checked to be inside its array."""
    elements = set(call.inside)
    elements.update((holder[1], holder[2]) for holder in call.holders
                    if holder[0] == "seeded")
    elements.update((call.holders[h][1], index) for _, h, index in call.reads
                    if index is not None)
    return elements


#: the kind of a call's input for the kinds of `signature_of` and the IR's types
_SCALAR_INPUTS = {(float, "f64"): "f64", (int, "i64"): "i64"}


def input_kinds(signature: tuple, types: tuple) -> tuple | None:
    """NativeCall's `inputs` for arguments of `signature` (signature_of) bound to
    `types`, or None where a builtin does not take them (bool, f32, i32 scalars …)."""
    kinds = []
    for kind, t in zip(signature, types):
        if isinstance(kind, tuple):
            kinds.append(kind)
        elif (kind, t) in _SCALAR_INPUTS:
            kinds.append(_SCALAR_INPUTS[(kind, t)])
        else:
            return None
    return tuple(kinds)


def gradient_holders(zeros: list, position: int, index) -> tuple | None:
    """The holders of a gradient pass's gradients (those of `zeros`, a plan's zero
    kinds, that are not None: 0.0 or float64 zeros like their input), the loss's
    seeded with 1 at `index`; None where one is not a float or a float64 array."""
    holders = []
    for k, kind in enumerate(zeros):
        if kind is None:
            continue
        if kind is float:
            holders.append(("number", 1.0 if k == position else 0.0))
        elif kind is np.float64:
            holders.append(("seeded", k, index) if k == position else ("zeros", k))
        else:
            return None
    return tuple(holders)


def results_of(zeros: list, holders: tuple, first: int) -> tuple:
    """The result items of gradients held from holder `first` on (one per non-None
    kind of `zeros`, as `gradient_holders` made them): None for the others."""
    items, h = [], first
    for kind in zeros:
        if kind is None:
            items.append(None)
            continue
        items.append(("float", h) if holders[h][0] == "number" else ("array", h))
        h += 1
    return tuple(items)


def function_call(signature: tuple, types: tuple, written, aliasing: bool):
    """The NativeCall of a function's calls with arguments of `signature` bound to
    `types` (Note [Calls without ctypes], rlang/backends/llvm/call_builtins.py): the
    arguments in their holders, one run, the new values back (floats and ints made,
    arrays the same objects); `written` the parameters it writes, `aliasing` whether
    they must not overlap other arrays.  None where a builtin does not take them."""
    inputs = input_kinds(signature, types)
    if not inputs:
        return None
    n = len(inputs)
    arrays = [k for k, kind in enumerate(inputs) if isinstance(kind, tuple)]
    written = tuple(k for k in sorted(written) if k in arrays)
    return NativeCall(
        inputs=inputs, holders=tuple(("input", k) for k in range(n)),
        runs=(tuple(range(n)),),
        results=tuple(("input", k) if k in arrays else (("float", k) if kind == "f64"
                                                         else ("int", k))
                      for k, kind in enumerate(inputs)),
        writable=written, apart=written if aliasing else ())


def call_made(function, args, extra, key_of):
    """The result of the builtin an earlier call of `function` (a function of a
    loaded module) made for arguments of these kinds, on `args` and then `extra` (a
    vector, tangents); None where none was made or it gave () (a failed run: its
    natives' frames are dropped, and the general way's run is next).
    `key_of(name, inverse, args)` is the key of `plans` holding `(builtin, natives)`."""
    functions = getattr(getattr(function, "module", None), "compiled", None)
    if functions is None or not isinstance(args, (list, tuple)) or \
            not isinstance(extra, (list, tuple)):
        return None
    key = key_of(function.name, function.inverse, args)
    made = functions.plans.get(key) if key else None
    if not made:
        return None
    call, natives = made
    result = call(*args, *extra)
    if result:
        return result
    for native in natives:
        native.forget_frames()
    return None
