"""The number-system programs the compiled backends are compared on (issues #5, #6).

fixed, ulog and complex numbers in host code — arithmetic, conversions, arrays,
`@safe` output, errors, gradients — and the comparisons and runners that
tests/backends/llvm/test_llvm_number_systems.py and tests/backends/cuda/test_systems.py share:
`run_both(source, name, args, inverse, backend)` and `run_main_both(source,
backend)` give the interpreter's results, then the backend's; `same` and `close`
compare them (ulog logarithms, floats and complex parts within 1e-12).  For generated
programs (tests/property/systems.py), `agree(a, b, scale)` compares within 1e-12 of
`scale`, the `magnitude` of the values involved, so that cancellation is allowed for.
"""
from __future__ import annotations

import io
import math
from contextlib import redirect_stdout

import numpy as np
from hypothesis import strategies as st

import rlang
from rlang.numbers import Fixed, ULog, ulog_array

ARITHMETIC = """
function fixed_ops!(s!: fixed, p!: fixed, q!: fixed, a: fixed, b: fixed, n: i64)
    s! += a + b
    s! -= a - 3
    p! += a * b
    q! += a / b
    if (a < b, ~)
        s! += 1
    else
        s! -= 1
    end
    NEG(p!)
    s! += n
end

function ulog_ops!(l!: ulog, m!: ulog, x: f64, a: ulog, b: ulog)
    l! *= a * b
    l! /= ulog(x)
    m! *= a + b
    m! *= (a + b) - b
    m! /= a ** 2.5
    l! *= 3
    if (a > b, ~)
        l! *= 2.0
    end
end

function mixed!(y!: f64, q: fixed, l: ulog)
    y! += f64(q) * 2.0 + log(l) + sin(f64(l)) + exp(q) + sqrt(l)
    y! += f64(i64(q * 4))
end
"""


#: Raw fixed values (value · 2^43) for the rounding of `*` and `/`, extremes included.
RAW = st.one_of(st.integers(-(1 << 63), (1 << 63) - 1),
                st.integers(-(1 << 50), 1 << 50),
                st.sampled_from([0, 1, -1, 1 << 42, -(1 << 42), 3 << 42, (1 << 63) - 1,
                                 -(1 << 63), 1 << 43]))


def both(source: str, backend: str = "llvm"):
    """The program on the interpreter and on `backend`."""
    return rlang.loads(source), rlang.loads(source, backend=backend)


def same(a, b) -> bool:
    if isinstance(a, ULog) or isinstance(b, ULog):
        return type(a) is type(b) and (a.log == b.log or abs(a.log - b.log) <=
                                       1e-12 * max(1.0, abs(b.log)))
    if isinstance(a, np.ndarray):
        return type(a) is type(b) and a.dtype == b.dtype and \
            np.allclose(a, b, rtol=1e-12, atol=0.0, equal_nan=True)
    if isinstance(a, float):
        return type(b) is float and (a == b or abs(a - b) <= 1e-12 * abs(b))
    return type(a) is type(b) and a == b


def run_both(source, name, args, inverse=False, backend: str = "llvm"):
    """[interpreter's results, `backend`'s results] of one call (arrays copied)."""
    results = []
    for module in both(source, backend):
        fn = module[name]
        fn = ~fn if inverse else fn
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        results.append(fn(*copies))
    return results


def run_main_both(source, backend: str = "llvm") -> list:
    """[(store, printed output)] of `main` on the interpreter, then on `backend`."""
    outputs = []
    for module in both(source, backend):
        out = io.StringIO()
        with redirect_stdout(out):
            store = module.run_main()
        outputs.append((store, out.getvalue()))
    return outputs


ARRAYS = """
function scale!(out!: f64[:], xs: fixed[:], ls: ulog[:])
    for i = 0:length(xs) - 1
        out![i] += f64(xs[i] * xs[i]) + f64(ls[i])
    end
end

function main()
    xs ← zeros(fixed, 3)
    ls ← zeros(ulog, 3)
    for i = 0:2
        xs[i] += i
        ls[i] *= ulog(f64(i) + 0.5)
    end
    ys ← zeros(f64, 3)
    scale!(ys, xs, ls)
    tmp ← zeros(ulog, 2)
    tmp → zeros(ulog, 2)
    @safe show(xs[2], ls[1])
    @safe print(fixed(0.1), ulog(3.0))
end
"""


ERRORS = """
function to_fixed!(q!: fixed, x: f64)
    q! += fixed(x)
end
function int_to_fixed!(q!: fixed, n: i64)
    q! += n
end
function to_ulog!(l!: ulog, x: f64)
    l! *= ulog(x)
end
function int_to_ulog!(l!: ulog, n: i64, k: i32)
    l! *= ulog(n)
    l! *= ulog(k)
end
function fixed_div!(q!: fixed, a: fixed, b: fixed)
    q! += a / b
end
function ulog_div!(l!: ulog, a: ulog, b: ulog)
    l! *= a / b
end
function ulog_div_update!(l!: ulog, b: ulog)
    l! /= b
end
function ulog_sub!(l!: ulog, a: ulog, b: ulog)
    l! *= a - b
end
"""

ERROR_CASES = [
    ("to_fixed!", [Fixed(0), 2e6]), ("to_fixed!", [Fixed(0), math.nan]),
    ("to_fixed!", [Fixed(0), -math.inf]), ("int_to_fixed!", [Fixed(0), 1 << 21]),
    ("to_ulog!", [ULog(0.0), -1.5]), ("to_ulog!", [ULog(0.0), math.nan]),
    ("int_to_ulog!", [ULog(0.0), -1, 2]), ("int_to_ulog!", [ULog(0.0), 3, -(1 << 31)]),
    ("int_to_ulog!", [ULog(0.0), -(1 << 53) - 1, 2]),     # shown exactly, not as a float
    ("fixed_div!", [Fixed(0), Fixed.from_value(1.0), Fixed(0)]),
    ("ulog_div!", [ULog(0.0), ULog(1.0), ULog(-math.inf)]),
    ("ulog_div_update!", [ULog(0.0), ULog(-math.inf)]),
    ("ulog_sub!", [ULog(0.0), ULog(1.0), ULog(2.0)]),
]


GRADIENTS = """
function fixed_loss!(y!: f64, q: fixed, x: f64)
    @routine begin
        t ← fixed(0.0)
        t += q * fixed(x)
        t -= q / fixed(3.0)
    end
    y! += f64(t) * x
    ~@routine
end

function ulog_loss!(y!: f64, l: ulog, x: f64, xs: f64[:])
    @routine begin
        p ← one(ulog)
        p *= l
        p *= ulog(x)
        for i = 0:length(xs) - 1
            p *= ulog(xs[i]) + ulog(x)
        end
        p /= ulog(2.0) ** x
    end
    y! += f64(p) + log(p) * x
    ~@routine
end

function ulog_out!(l!: ulog, x: f64)
    l! *= ulog(x) * ulog(x) + ulog(1.5)
end

function ulog_array_loss!(y!: f64, ls: ulog[:])
    y! += f64(ls[0]) * f64(ls[1]) + log(ls[2])
end
"""

GRADIENT_CASES = [
    ("fixed_loss!", lambda: [0.0, Fixed.from_value(1.5), 0.75], "y!"),
    ("ulog_loss!", lambda: [0.0, ULog.from_value(2.0), 1.25, np.array([0.5, 3.0])], "y!"),
    ("ulog_out!", lambda: [ULog.from_value(2.0), 0.8], "l!"),
    ("ulog_array_loss!", lambda: [0.0, ulog_array([2.0, 0.5, 3.0])], "y!"),
]


COMPLEX = """
function arith!(w!: complex, z: complex, v: complex, x: f64)
    w! += z * v - z / v + x
    w! -= v / complex(x, -2.0 * x)
    w!.re += abs(z) + abs2(v) + angle(z) + real(v) * imag(z)
    w!.im -= z.re * v.im
    w! += conj(z) * 2
    if (z == v, ~)
        w! += 1.0im
    end
end

function functions!(w!: complex, z: complex)
    w! += exp(z) + log(z) + sqrt(z) + sin(z) + cos(z) + sinh(z) + cosh(z)
    w! += tan(z) + tanh(z)
end

function instructions!(a!: complex, b!: complex, zs!: complex[:])
    SWAP(a!, b!)
    NEG(a!)
    CONJ(b!)
    for i = 0:length(zs!) - 1
        zs![i].im += zs![i].re * 2.0
        addto!(zs![i], a! + b!)
    end
end

function addto!(w!: complex, z: complex)
    w! += z
end

function main()
    z ← 3.0 + 4.0im
    zs ← [1.0 + 0.0im, -1.0 + 0.5im]
    ys ← zeros(complex, 2)
    ys[1] += z * zs[1]
    @safe show(z, ys[1])
    @safe print("z =", z, zs[0].im)
    t ← z * 2.0
    t → 6.0 + 8.0im
end
"""

Z_VALUES = [(3.0 + 4.0j, 0.5 - 2.0j), (-1.5 + 0.25j, 2.0 + 0.0j), (0.7 - 0.1j, -0.3 + 5.0j),
            (2.0 + 1.0j, 2.0 + 1.0j), (1.0 + 1e-9j, 0.0 + 0.0j)]


def close(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.allclose(a, b, rtol=1e-12, atol=0.0, equal_nan=True)
    if isinstance(a, complex):
        return type(b) is complex and all(
            x == y or abs(x - y) <= 1e-12 * max(abs(b), 1e-300) or (x != x and y != y)
            for x, y in ((a.real, b.real), (a.imag, b.imag)))
    return same(a, b)


COMPLEX_GRADIENTS = """
function closs!(w!: complex, z: complex, zs: complex[:], x: f64)
    @routine begin
        t ← 0.0 + 0.0im
        t += z * z + exp(zs[0]) / (zs[1] + x)
        t += log(z) * sqrt(zs[1])
    end
    w! += t * conj(z) + abs(t) * 1.0im
    ~@routine
end
"""


# ----------------------------------------------- comparing results of generated programs

def magnitude(values) -> float:
    """The largest magnitude among the float, complex and ulog values (ulog: of the
    logarithm) in `values` and in the arrays among them; at least 1.  Non-finite
    values are skipped."""
    biggest = 1.0
    for value in values:
        if isinstance(value, ULog):
            value = value.log
        if isinstance(value, np.ndarray):
            if value.dtype.kind not in "fc" or not value.size:
                continue
            finite = np.abs(value[np.isfinite(value)])
            value = float(finite.max()) if finite.size else 0.0
        if isinstance(value, (float, complex)) and math.isfinite(abs(value)):
            biggest = max(biggest, abs(value))
    return biggest


def agree(a, b, scale: float, rtol: float = 1e-12) -> bool:
    """Whether a backend's value `a` is the interpreter's `b`: of the same type, exactly
    for integers, bools and fixed values (raw bits), and for floats, complex parts and
    ulog logarithms within `rtol` of the larger of `scale` and the value itself (so a
    result that cancelled down from values of size `scale` is compared absolutely)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, ULog):
        a, b = a.log, b.log
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape:
            return False
        if a.dtype.kind not in "fc":
            return np.array_equal(a, b)
        return np.allclose(a, b, rtol=rtol, atol=rtol * scale, equal_nan=True)
    if isinstance(a, complex):
        size = max(abs(b.real), abs(b.imag))    # (abs(b) overflows past 1.3e308)
        return agree(a.real, b.real, max(scale, size), rtol) and \
            agree(a.imag, b.imag, max(scale, size), rtol)
    if isinstance(a, float):
        return a == b or (a != a and b != b) or abs(a - b) <= rtol * max(scale, abs(b))
    return a == b
