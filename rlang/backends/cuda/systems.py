"""The helpers of generated cuda-backend code for fixed, ulog and complex values.

How generated code holds them (Note [Number systems in the IR], Note [Complex
numbers in the IR], rlang/ir/nodes.py): a fixed is its raw Q20.43 integer (a Python int,
an int64 on the GPU), a ulog the float of its logarithm, a complex scalar a Python
`complex` (a complex128 on the GPU).  Arrays of complex numbers are float64 arrays
with a last axis of two, re then im (`runtime.pairs`), so that a part is an
element of its own: a gradient kernel adds to it with `cuda.atomic.add`.

Like rlang/backends/cuda/scalar.py, these are Python functions run as they are by
host code and the simulator; `SHARED` lists those that mean the same when Numba
compiles them, which device.gpu_namespace() compiles as device functions.
`fxmul`, `fxdiv` and `fxof` are here Python's exact integers and `round` (the
interpreter's own rlang/numbers.py); their GPU versions are in backends/cuda/device.py
(backends/cuda/fixed.py: the same results with 64-bit integers).

Conversions record their failure in the error record (as scalar.py's `cvf_int`)
and give a harmless value; the site's message is built on the host
(backends/errors.py, kind "convert").
"""
from __future__ import annotations

import math

from ...interp.comparisons import ATOL
from ...numbers import FIXED_LIMIT, ONE_RAW, Fixed
from .scalar import b_log, inb, rec
from .scalar import helpers as scalar_helpers

_LIMIT = float(FIXED_LIMIT)


# ------------------------------------------------------------------ fixed

def fxmul(a, b):
    """The raw value of fixed a · b (raw operands), rounded to nearest, ties to even."""
    return Fixed(a).mul(Fixed(b)).raw


def fxdiv(a, b):
    """The raw value of fixed a / b; 0 for b = 0 (the check is `cki`)."""
    return 0 if b == 0 else Fixed(a).div(Fixed(b)).raw


def fxof(x):
    """The raw value of fixed(x) for a float x in range (0 outside: checked apart)."""
    if not -_LIMIT <= x < _LIMIT:
        return 0
    return Fixed(round(x * ONE_RAW)).raw


def fxval(raw):
    """The f64 value of a raw fixed (exact below 2^10, as Fixed.__float__)."""
    return raw / ONE_RAW


def cvi_fixed(x, site, ctx, ctxf):
    """fixed(x) of an integer: in [-2^20, 2^20), or the failure is recorded."""
    if x >= -FIXED_LIMIT and x < FIXED_LIMIT:
        return x * ONE_RAW
    rec(ctx, ctxf, site, x, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)
    return x - x


def cvf_fixed(x, site, ctx, ctxf):
    """fixed(x) of a float: finite and in range, or the failure is recorded."""
    if x >= -_LIMIT and x < _LIMIT:
        return fxof(x)
    rec(ctx, ctxf, site, 0, 0, 0, 0, x, 0.0, 0.0, 0.0)
    return fxof(0.0)


# ------------------------------------------------------------------- ulog

def cvi_ulog(n, site, ctx, ctxf):
    """The logarithm of ulog(n) for an integer n ≥ 0, or the failure is recorded
    with n itself (the message shows the integer)."""
    if n < 0:
        rec(ctx, ctxf, site, n, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)
    return b_log(n * 1.0)


def cvf_ulog(x, site, ctx, ctxf):
    """The logarithm of ulog(x): x ≥ 0 (0 gives −inf), or the failure is recorded."""
    if not x >= 0.0:
        rec(ctx, ctxf, site, 0, 0, 0, 0, x, 0.0, 0.0, 0.0)
    return b_log(x)


# ---------------------------------------------------------------- complex

def cdiffers(z, w):
    """The check equality of complex numbers (rlang.interp.comparisons.values_equal): equal, or
    |z − w| ≤ ATOL."""
    return not (z == w or math.hypot(z.real - w.real, z.imag - w.imag) <= ATOL)


def ldc1(a, i, part, site, ctx, ctxf):
    """Part `part` (0: re, 1: im) of a[i] of a complex array held as pairs, with its
    bounds checked (0.0 where they fail)."""
    if inb(i, a.shape[0], site, ctx, ctxf):
        return a[i, part]
    return 0.0


def ldc2(a, i, j, part, site, ctx, ctxf):
    if inb(i, a.shape[0], site, ctx, ctxf) and inb(j, a.shape[1], site + 1, ctx, ctxf):
        return a[i, j, part]
    return 0.0


def ldc3(a, i, j, k, part, site, ctx, ctxf):
    if inb(i, a.shape[0], site, ctx, ctxf) and inb(j, a.shape[1], site + 1, ctx, ctxf) \
            and inb(k, a.shape[2], site + 2, ctx, ctxf):
        return a[i, j, k, part]
    return 0.0


#: The helpers above that Numba compiles for GPUs as they are.
SHARED = ("fxval", "cvi_fixed", "cvf_fixed", "cvi_ulog", "cvf_ulog", "cdiffers", "ldc1", "ldc2", "ldc3")
#: The helpers with GPU versions of their own (backends/cuda/device.py).
NATIVE = ("fxmul", "fxdiv", "fxof")


def namespace() -> dict:
    """The helper names of scalar.py and of this module (fixed, ulog, complex), for
    `exec` of generated code that runs as Python."""
    g = globals()
    return scalar_helpers() | {name: g[name] for name in SHARED + NATIVE} | {"ONE_RAW": ONE_RAW}
