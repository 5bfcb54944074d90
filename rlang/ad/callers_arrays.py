"""The caller's arrays, kept bit for bit through a derivative (Note [The caller's
arrays]): `callers_arrays_kept(args, function)` is a context for the drivers;
`saved_arrays(args, positions)` and `put_back(saved)` are its two halves, for a
driver that cannot wrap its work in a context (ad/gradient_route.py).
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from ..values import Stack

# Note [The caller's arrays]
# ~f undoes f exactly on integers, bools and fixed point, but float updates are undone
# only up to rounding: `x += y * z` then `x -= y * z` can leave x one ulp away.  After
# a gradient the inputs are back "up to rounding", which is not what a user who passed
# their data expects (in 107 of 500 generated programs an argument came back changed
# in its last bit).  So the drivers keep a copy of every array and stack the caller
# passed and write it back when they are done, also when the run ends in an error:
# the caller's data is theirs, bit for bit.  The copy costs one pass over the inputs,
# small beside a forward and a backward run; read-only arrays, and the arrays of
# parameters the function never writes, are never written and are not copied (for a
# large input only read, the copy cost more than the gradient: lse, n = 160 000).

@contextmanager
def callers_arrays_kept(args, function=None):
    """Within the block, the arrays (NumPy, FixedArray, ULogArray) and stacks among
    `args` may change; on leaving it, by return or by error, they are as they were,
    bit for bit (Note [The caller's arrays]).  With `function` (an `api.Function`
    whose arguments `args` are), only the arrays of the parameters it writes are
    kept: the others are never written."""
    written = range(len(args)) if function is None else \
        function.module.interpreter.written.get(function.name, ())
    arrays = saved_arrays(args, written)
    stacks = [(s, list(s.items)) for s in args if isinstance(s, Stack)]
    try:
        yield
    finally:
        put_back(arrays)
        for stack, items in stacks:
            stack.items[:] = items


def saved_arrays(args, positions) -> list:
    """(array, copy) for each writable array among `args` at `positions`."""
    return [(a, a.copy()) for k, a in enumerate(args)
            if k in positions and isinstance(a, np.ndarray) and a.flags.writeable]


def put_back(saved: list) -> None:
    """Write each copy of `saved_arrays` back into its array."""
    for array, copy in saved:
        np.copyto(array.view(np.ndarray), copy.view(np.ndarray))
