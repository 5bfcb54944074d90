"""cmath's functions of a complex number on the llvm backend: bit for bit the interpreter's.

The interpreter computes `exp`, `log`, `sqrt`, `sin` … `acos` of a complex number
with cmath, and with C99's values where cmath raises for exp, sinh, cosh, sin, cos
and log (rlang/complex_math.py); rlang/lower/complex_functions.py writes those
algorithms as IR.  These tests compare the compiled results with the interpreter's
functions bit for bit, signs of zeros included, on the arguments where the
algorithms branch: the branch cuts (±0.0 imaginary parts past |re| > 1), both signs
of zero, the overflow thresholds of exp, sinh and cosh, the large-argument forms of
tanh, log, asin and acos, subnormal parts, and infinite real parts.
"""
from __future__ import annotations

import math
import random
import sys

import numpy as np
import pytest

import rlang
from rlang.primitives import BUILTINS

FUNCTIONS = ("exp", "log", "sqrt", "sin", "cos", "tan", "sinh", "cosh", "tanh", "asin",
             "acos")

_SPECIAL_PARTS = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.0, 2.0000001, 3.0, -7.25, 1e-8,
                  -1e-300,
                  5e-324, -5e-324, sys.float_info.min, 0.71, 1.73, 2.0 ** 28 + 3.0,
                  708.0, 708.5, -709.5, 710.0, 711.0, 800.0, -1000.0, 1e200,
                  sys.float_info.max / 4 * 1.5, -sys.float_info.max]


def _arguments():
    """The special parts in every pairing, and random ones across the exponent range."""
    values = [complex(a, b) for a in _SPECIAL_PARTS for b in _SPECIAL_PARTS]
    rng = random.Random(5)
    for _ in range(600):
        parts = []
        for _ in range(2):
            scale = 10.0 ** rng.uniform(-310, 308) if rng.random() < 0.4 else \
                rng.uniform(-4.0, 4.0) if rng.random() < 0.6 else rng.uniform(-800.0, 800.0)
            parts.append(math.copysign(scale, rng.choice((-1.0, 1.0))))
        values.append(complex(*parts))
    return np.array(values)


ARGUMENTS = _arguments()
#: An infinite real part with a finite imaginary one, where exp, log, sinh and cosh
#: give C99's values on every backend (the compiled code does not reproduce cmath's
#: tables for other non-finite arguments: tan's and sin's infinite real part is
#: tanh's and sinh's infinite imaginary part).
INFINITE_REAL = np.array([complex(a, b) for a in (math.inf, -math.inf)
                          for b in _SPECIAL_PARTS if abs(b) < 1e10])


def _source(name: str) -> str:
    # the result is swapped out (not added to a zero), keeping the sign of a zero part
    return (f"function f!(w!: complex[:], z: complex[:])\n"
            f"    for i = 0:length(z) - 1\n"
            f"        t ← {name}(z[i])\n"
            f"        SWAP(w![i], t)\n"
            f"        t → 0.0 + 0.0im\n"
            f"    end\n"
            f"end\n")


def _cmath(name: str, z: complex) -> complex:
    """The interpreter's function: cmath's, C99's values where cmath raises."""
    try:
        return BUILTINS[name].complex_forward(z)
    except (ValueError, OverflowError):
        return complex(math.nan, math.nan)


def _same_bits(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_compiled_functions_are_cmaths_bit_for_bit(name):
    module = rlang.loads(_source(name), backend="llvm")
    arguments = ARGUMENTS
    if name in ("exp", "log", "sinh", "cosh"):
        arguments = np.concatenate([ARGUMENTS, INFINITE_REAL])
    got, _ = module["f!"](np.zeros(len(arguments), dtype=complex), arguments)
    wrong = [(z, w, _cmath(name, z)) for z, w in zip(arguments, got)
             if not (_same_bits(w.real, _cmath(name, z).real)
                     and _same_bits(w.imag, _cmath(name, z).imag))]
    assert not wrong, f"{len(wrong)} of {len(arguments)} differ, e.g. {wrong[:3]}"


@pytest.mark.parametrize("name, z, expected", [
    ("asin", 1.5 + 0.0j, (1.5707963267948966, 0.9624236501192069)),     # the branch cut:
    ("asin", complex(1.5, -0.0), (1.5707963267948966, -0.9624236501192069)),    # the zero's sign
    ("acos", 1.5 + 0.0j, (0.0, -0.9624236501192069)),                   # picks the side
    ("sqrt", complex(-4.0, -0.0), (0.0, -2.0)),
    ("tanh", 800.0 + 1.0j, (1.0, 0.0)),                                 # no overflow
    ("log", 0.0 + 0.0j, (-math.inf, 0.0)),                              # C99, not cmath's
    ("exp", 1000.0 + 0.0j, (math.inf, 0.0)),                            # ValueError or
    ("cosh", 1000.0 + 1.0j, (math.inf, math.inf)),                      # OverflowError
])
def test_the_interpreter_and_llvm_give_cmaths_or_c99s_answer(name, z, expected):
    source = _source(name)
    for backend in ("interp", "llvm"):
        (w,), _ = rlang.loads(source, backend=backend)["f!"](np.zeros(1, complex),
                                                             np.array([z]))
        assert _same_bits(w.real, expected[0]) and _same_bits(w.imag, expected[1]), \
            (backend, w)
