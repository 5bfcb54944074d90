"""The helpers of generated device code (kernels and device functions).

`publish` copies a failed thread's error record into the kernel's error buffer,
keeping the record of the iteration first in the loop's order (a lock taken by
compare-and-swap, in the loop form that cannot deadlock a warp).  It runs in every mode.

`gpu_namespace()` gives, for real GPUs, the scalar helpers of
rlang/backends/cuda/scalar.py under the same names as Numba device functions:
integers wrap by casting (`int64`, `int32`), f32 values are `float32` casts of
f64 results (the interpreter's rounding), and division, powers, shifts and the
built-ins follow rlang/interp/ops.py and the registry; the helpers of fixed, ulog and
complex values are backends/cuda/systems.py's, with fixed `*` and `/` from backends/cuda/fixed.py
(64-bit integers only) and `fxof` of its own.  Under the simulator the
Python helpers are used instead (rlang/backends/cuda/backend.py chooses).  This module imports
numba; rlang imports it only when the cuda backend is used.
"""
from __future__ import annotations

import math
from types import FunctionType

from numba import cuda, float32, float64, int32, int64, uint64

from ...interp.comparisons import ATOL
from ...primitives import BUILTINS
from .. import abi
# the record, bounds and check helpers are the same code on the GPU: gpu_namespace
# compiles them as device functions like the others
from .scalar import (  # noqa: F401
    CTXF_WORDS, ERR_INDEX, ERR_LOCK, ERR_ORDER, ckc, cki, ckp,
    cvf_bool, cvi_bool, frame, inb, ldk1, ldk2, ldk3, rec)
from .systems import (  # noqa: F401
    NATIVE, SHARED, cdiffers, cvf_fixed, cvf_ulog, cvi_fixed, cvi_ulog, fxval, ldc1, ldc2,
    ldc3)
from .fixed import fixed_divide as fxdiv, fixed_multiply as fxmul  # noqa: F401



def publish(err, errf, ctx, ctxf, n, index):
    """Copy this thread's record into `err`/`errf` unless a lower iteration's is there."""
    done = False
    while not done:
        if cuda.atomic.cas(err, ERR_LOCK, 0, 1) == 0:
            if err[abi.CTX_SITE] == 0 or n < err[ERR_ORDER]:
                for k in range(abi.CTX_WORDS):
                    err[k] = ctx[k]
                for k in range(CTXF_WORDS):
                    errf[k] = ctxf[k]
                err[ERR_ORDER] = n
                err[ERR_INDEX] = index
            cuda.threadfence()
            cuda.atomic.exch(err, ERR_LOCK, 0)
            done = True


# ------------------------------------------------------- GPU scalar helpers

def w64(x):
    return int64(x)


def w32(x):
    return int32(x)


def r32(x):
    return float32(x)


def f64(x):
    return float64(x)


def ci(x):
    return int64(x)


def _same(x):
    return x


lb = li32 = li64 = lf32 = lf64 = _same


# Note [No fused multiply-add]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# NVVM contracts a multiply followed by an add into one fused multiply-add (its
# option -fma=1 is the default, and Numba has no switch for it).  An fma rounds once
# where the interpreter rounds twice, so results differ in the last bit, and worse, an
# uncomputation stops undoing its computation: `t += q * q` stores fl(q·q), and
# `t -= q * q` fused becomes fma(-q, q, t), which leaves the product's rounding error
# in t instead of 0.  Inverses then restore their inputs only approximately, and
# ancillas are not freed at zero.  So generated code writes every float product as
# `fmul`, which on a GPU is libdevice's `dmul_rn`: PTX `mul.rn.f64`, whose explicit
# rounding mode keeps the optimiser from fusing it (PTX ISA, "mul": instructions with
# a rounding modifier are treated conservatively).  f32 products are f64 products
# rounded once (r32), so they need nothing else.  Helpers that multiply and whose
# result an add may follow (b_abs2) use fmul too; fixed products are integer
# arithmetic.  tests/backends/cuda/test_ptx_and_cli.py checks the PTX.

def fmul(x, y):
    """x * y rounded on its own (Note [No fused multiply-add]); `dmul_rn` is bound by
    gpu_namespace."""
    return dmul_rn(x, y)      # noqa: F821


def _plain_product(x, y):
    """dmul_rn's stand-in where the helpers are compiled for the CPU (the tests)."""
    return x * y


def fdiv(x, y):
    if y == 0.0:
        if x == 0.0 or x != x:
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def ffdiv(x, y):
    """Python's float `//` (rlang/interp/ops.py), as the llvm backend computes it."""
    if y == 0.0:
        return math.nan if x == 0.0 or x != x else fdiv(x, y)
    mod = math.fmod(x, y)
    div = (x - mod) / y
    if mod != 0.0 and ((y < 0.0) != (mod < 0.0)):
        div -= 1.0
    if div == 0.0:
        return math.copysign(0.0, x / y)
    floored = math.floor(div)
    if div - floored > 0.5:
        floored += 1.0
    return floored


def fmod(x, y):
    if y == 0.0 or not math.isfinite(x):
        return math.nan
    mod = math.fmod(x, y)
    if mod != 0.0:
        if (y < 0.0) != (mod < 0.0):
            mod += y
        return mod
    return math.copysign(0.0, y)


def fpow(x, y):
    return math.pow(x, y)


def idiv(a, b):
    if b == 0:
        return int64(0)
    if b == -1:
        return -a
    q = a // b
    return q


def imod(a, b):
    if b == 0 or b == -1:
        return int64(0)
    return a % b


def ipow(a, b):
    result = int64(1)
    base = int64(a)
    n = int64(b)
    while n > 0:
        if n & 1:
            result = result * base
        base = base * base
        n = n >> 1
    return result


def shl(a, s):
    if s >= 0:
        return int64(0) if s >= 64 else int64(a) << s
    return int64(a) >> min(-s, 63)


def shr(a, s):
    if s >= 0:
        return int64(a) >> min(s, 63)
    return int64(0) if -s >= 64 else int64(a) << -s


def fcount(start, step, stop):
    """How many values `for i = start:step:stop` takes (step != 0): the distance as
    unsigned (`fsteps`), so that a range wider than 2^63 counts right (as on llvm),
    and a count of 2^63 or more held at 2^63 - 1, the most an i64 counter reaches (a
    pass that would come after 2^63 - 1 others is centuries away)."""
    if (stop < start) if step > 0 else (start < stop):
        return int64(0)
    passes = uint64(fsteps(start, step, stop))
    if passes >= uint64(_I64_MAX):
        return int64(_I64_MAX)
    return int64(passes) + int64(1)


def fsteps(start, step, stop):
    """The steps from the first value of `start:step:stop` to its last (a nonempty
    range), modulo 2^64: `start + fsteps(…) * step` is the last value even where
    fcount is held."""
    if step > 0:
        return int64((uint64(stop) - uint64(start)) // uint64(step))
    return int64((uint64(start) - uint64(stop)) // (uint64(0) - uint64(step)))


_I64_MAX = 0x7FFFFFFFFFFFFFFF


def differs(x, y):
    return not (x == y or abs(x - y) <= ATOL or (x != x and y != y))


def fxof(x):
    """The raw value of fixed(x) for a float x in range (systems.fxof): x · 2^43
    (exact) rounded to nearest, ties to even; 2^63 wraps, as Fixed(raw) does."""
    if not (x >= -1048576.0 and x < 1048576.0):
        return int64(0)
    scaled = x * 8796093022208.0
    raw = int64(math.floor(scaled))
    rest = scaled - float64(raw)
    if rest > 0.5 or (rest == 0.5 and (raw & 1) == 1):
        raw += 1
    return raw


def cvf_int(x, low, high, site, ctx, ctxf):
    if math.isfinite(x) and math.floor(x) == x and x >= low and x < high:
        return int64(x)
    rec(ctx, ctxf, site, 0, 0, 0, 0, x, 0.0, 0.0, 0.0)
    return int64(0)


def cvi_i32(x, site, ctx, ctxf):
    if x >= -2147483648 and x < 2147483648:
        return x
    rec(ctx, ctxf, site, x, 0, 0, 0, 0.0, 0.0, 0.0, 0.0)
    return int64(0)


# ------------------------------------------------------------- built-ins

def b_sin(x): return math.sin(x)                # noqa: E704
def b_cos(x): return math.cos(x)                # noqa: E704
def b_tan(x): return math.tan(x)                # noqa: E704
def b_asin(x): return math.asin(x)              # noqa: E704
def b_acos(x): return math.acos(x)              # noqa: E704
def b_atan(x): return math.atan(x)              # noqa: E704
def b_atan2(y, x): return math.atan2(y, x)      # noqa: E704
def b_sinh(x): return math.sinh(x)              # noqa: E704
def b_cosh(x): return math.cosh(x)              # noqa: E704
def b_tanh(x): return math.tanh(x)              # noqa: E704
def b_exp(x): return math.exp(x)                # noqa: E704
def b_log(x): return math.log(x)                # noqa: E704
def b_log1p(x): return math.log1p(x)            # noqa: E704
def b_expm1(x): return math.expm1(x)            # noqa: E704
def b_sqrt(x): return math.sqrt(x)              # noqa: E704
def b_hypot(x, y): return math.hypot(x, y)      # noqa: E704
def b_abs2(x): return fmul(x, x)                # noqa: E704
def b_angle(x): return math.atan2(0.0, x)       # noqa: E704
def b_real(x): return x                         # noqa: E704
def b_conj(x): return x                         # noqa: E704
def b_imag(x): return x - x                     # noqa: E704
def b_floor(x): return float64(math.floor(x)) if math.isfinite(x) else x   # noqa: E704
def b_ceil(x): return float64(math.ceil(x)) if math.isfinite(x) else x     # noqa: E704


def b_cbrt(x):
    return math.copysign(math.pow(abs(x), 1.0 / 3.0), x)


def b_abs(x):
    return -x if x < 0 else x


def b_round(x):
    if not math.isfinite(x):
        return x
    r = math.floor(x)
    d = x - r
    if d > 0.5 or (d == 0.5 and math.fmod(r, 2.0) != 0.0):
        r += 1.0
    return r


def b_min(a, b):
    if a != a or b != b:
        return a + b
    return a if a <= b else b


def b_max(a, b):
    if a != a or b != b:
        return a + b
    return a if a >= b else b


def b_sign(x):
    if x != x:
        return x
    return (x > 0) - (x < 0) + x - x


_HELPERS = ("w64 w32 r32 f64 ci lb li32 li64 lf32 lf64 fmul fdiv ffdiv fmod fpow idiv imod ipow "
            "shl shr fcount fsteps differs rec frame inb ldk1 ldk2 ldk3 cki ckc ckp cvf_int cvi_i32 "
            "cvf_bool cvi_bool").split() + list(SHARED) + list(NATIVE)


def gpu_namespace(jit=None) -> dict:
    """The helpers as Numba device functions, with the constants generated code uses.
    `jit` compiles each helper (default: `cuda.jit(device=True)`; the tests pass
    `numba.njit` to run the GPU versions on the CPU)."""
    missing = [name for name in BUILTINS if "b_" + name not in globals()]
    assert not missing, missing
    on_gpu = jit is None
    jit = jit or cuda.jit(device=True)
    names = _HELPERS + ["b_" + name for name in BUILTINS] + ["b_atan2"]
    # the helpers call each other: rebind them to globals holding the device versions
    # (with the names the helpers of systems.py and fixed.py read)
    from . import fixed as cuda_fixed
    from . import systems as cuda_systems

    space = {**vars(cuda_fixed), **vars(cuda_systems), **globals()}
    if on_gpu:
        from numba.cuda import libdevice

        space["dmul_rn"] = libdevice.dmul_rn
    else:
        space["dmul_rn"] = jit(_plain_product)
    for name in names:
        f = globals()[name]
        space[name] = jit(FunctionType(f.__code__, space, name, f.__defaults__))
    space.update(Z_bool=False, Z_i32=int32(0), Z_i64=int64(0), Z_f32=float32(0.0),
                 Z_f64=0.0, inf=math.inf, nan=math.nan)
    return space


def add_over_warp(box, part, value):
    """Add each lane's `value` to `box[part]` (shared memory): a whole warp's values
    summed first by shuffles down a tree and added once by lane 0; where the lanes
    here are not the whole warp (a lane left early, or is elsewhere), each adds its
    own (Note [Privatised gradients on the GPU])."""
    if cuda.activemask() == 0xFFFFFFFF:
        offset = 16
        while offset > 0:
            value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
            offset //= 2
        if cuda.laneid == 0:
            cuda.atomic.add(box, part, value)
    else:
        cuda.atomic.add(box, part, value)


def _add_alone(box, part, value):
    cuda.atomic.add(box, part, value)


def common_namespace(simulated: bool = False) -> dict:
    """What kernels need in every mode: the cuda module, types, `publish`, and the
    warp sums (the simulator has no warps: each thread adds its own)."""
    device = cuda.jit(device=True)
    return {"cuda": cuda, "int64": int64, "float64": float64, "publish": device(publish),
            "add_over_warp": device(_add_alone if simulated else add_over_warp)}
