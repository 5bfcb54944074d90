"""fixed `*` and `/` on the GPU: exact Q20.43 rounding with 64-bit integers only.

`fixed_multiply(a, b)` and `fixed_divide(a, b)` take raw values (int64, value ·
2^43) and return the raw value of the exact rational result a·b / 2^43, resp.
a·2^43 / b, rounded to the nearest integer, ties to even, wrapped to 64 bits — bit
for bit what rlang/numbers.py computes with Python integers (Note [Fixed-point
rounding]) and the llvm backend with 128-bit ones (backends/llvm/systems.py).
Dividing by 0 gives 0 (the check is the caller's: `cki`).

They are written for Numba (unsigned 64-bit arithmetic, every constant typed), so
the same code is compiled as a device function for GPUs (backends/cuda/device.py) and, in
the tests, with `numba.njit` on the CPU.  Both work on magnitudes: rounding to
nearest with ties to even is symmetric, so round(−x) = −round(x) and the sign is
put back at the end.

- the product of two magnitudes below 2^64 is formed from 32-bit halves into a
  128-bit (high, low) pair; the quotient by 2^43 is a shift, the remainder its low
  43 bits;
- the quotient |a|·2^43 / |b| is long division: |a| // |b| with 64-bit division,
  then 43 shift-subtract steps for the 43 zero bits appended to the numerator.  The
  remainder stays below |b| ≤ 2^63, so doubling it never overflows.  Only the low
  64 bits of the quotient are kept, which is the wrapping the result needs.
"""
from __future__ import annotations

from numba import int64, uint64

_FRACTION_BITS = 43                 # rlang.numbers.FRACTION_BITS (checked in the tests)


def fixed_multiply(a, b):
    """round(a · b / 2^43), ties to even, wrapped to int64 (a, b raw int64)."""
    zero = uint64(0)
    m32 = uint64(0xFFFFFFFF)
    x = uint64(a)
    y = uint64(b)
    if a < 0:
        x = zero - x
    if b < 0:
        y = zero - y
    x_lo, x_hi = x & m32, x >> uint64(32)
    y_lo, y_hi = y & m32, y >> uint64(32)
    p0 = x_lo * y_lo
    p1 = x_lo * y_hi
    p2 = x_hi * y_lo
    p3 = x_hi * y_hi
    middle = (p0 >> uint64(32)) + (p1 & m32) + (p2 & m32)
    low = (middle << uint64(32)) | (p0 & m32)
    high = p3 + (p1 >> uint64(32)) + (p2 >> uint64(32)) + (middle >> uint64(32))
    quotient = (high << uint64(64 - _FRACTION_BITS)) | (low >> uint64(_FRACTION_BITS))
    remainder = low & uint64((1 << _FRACTION_BITS) - 1)
    half = uint64(1 << (_FRACTION_BITS - 1))
    if remainder > half or (remainder == half and (quotient & uint64(1)) == uint64(1)):
        quotient += uint64(1)
    if (a < 0) != (b < 0):
        quotient = zero - quotient
    return int64(quotient)


def fixed_divide(a, b):
    """round(a · 2^43 / b), ties to even, wrapped to int64 (a, b raw int64; 0 for
    b = 0)."""
    zero = uint64(0)
    if b == 0:
        return int64(0)
    x = uint64(a)
    d = uint64(b)
    if a < 0:
        x = zero - x
    if b < 0:
        d = zero - d
    quotient = x // d
    remainder = x - quotient * d
    for _ in range(_FRACTION_BITS):
        remainder = remainder << uint64(1)
        quotient = quotient << uint64(1)
        if remainder >= d:
            remainder -= d
            quotient |= uint64(1)
    rest = d - remainder            # 2·remainder > d  ⟺  remainder > d − remainder
    if remainder > rest or (remainder == rest and (quotient & uint64(1)) == uint64(1)):
        quotient += uint64(1)
    if (a < 0) != (b < 0):
        quotient = zero - quotient
    return int64(quotient)
