"""Numerical corner cases where the interpreter, llvm and cuda must give one answer (#23, item 8).

- complex exp, sinh, cosh, sin, cos and log at overflow, at an infinite real part and
  at 0 give C99's (NumPy's) special values on every backend
  (rlang/complex_math.py, Note [Complex overflow as C99 says]).
"""
from __future__ import annotations

import math

import numpy as np
import pytest

import rlang

BACKENDS = ("interp", "llvm", "cuda")

_REAL_PARTS = [0.0, -0.0, 1.0, -1.0, 709.5, 710.0, -710.0, 800.0, -800.0, 1500.0, 2200.0,
               -2200.0, 1e308, -1e308, math.inf, -math.inf]
_IMAGINARY_PARTS = [0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 3.0, -4.0, 1e-300, -5e-324, math.pi]
#: Every special real part with every finite imaginary part.
SPECIAL = np.array([complex(a, b) for a in _REAL_PARTS for b in _IMAGINARY_PARTS])


def _map_source(name: str) -> str:
    # the result is swapped out (not added to a zero), keeping the sign of a zero part
    return (f"function f!(w!: complex[:], z: complex[:])\n"
            f"    @parallel for i = 0:length(z) - 1\n"
            f"        t ← {name}(z[i])\n"
            f"        SWAP(w![i], t)\n"
            f"        t → 0.0 + 0.0im\n"
            f"    end\n"
            f"end\n")


def _same_part(got: float, expected: float) -> bool:
    """Infinities, NaN and zeros (with their signs) exactly; other values within a few
    ulps (cmath's and glibc's formulas differ in the last bit where both are finite)."""
    if math.isnan(expected):
        return math.isnan(got)
    if math.isinf(expected) or expected == 0.0:
        return got == expected and math.copysign(1.0, got) == math.copysign(1.0, expected)
    return abs(got - expected) <= 1e-14 * abs(expected)


@pytest.mark.parametrize("name", ["exp", "sinh", "cosh", "sin", "cos", "log"])
@pytest.mark.parametrize("backend", BACKENDS)
def test_complex_special_values_are_numpys(name, backend):
    arguments = SPECIAL
    if name in ("sin", "cos"):      # −i·z, so that sinh and cosh see the special values
        arguments = np.array([complex(z.imag, -z.real) for z in SPECIAL])  # (sin w = −i·sinh(iw))
    module = rlang.loads(_map_source(name), backend=backend)
    got, _ = module["f!"](np.zeros(len(arguments), dtype=complex), arguments.copy())
    with np.errstate(all="ignore"):
        expected = getattr(np, name)(arguments)
    wrong = [(z, w, e) for z, w, e in zip(arguments, got, expected)
             if not (_same_part(w.real, e.real) and _same_part(w.imag, e.imag))]
    assert not wrong, f"{backend}: {len(wrong)} of {len(arguments)} differ from NumPy: {wrong[:4]}"


@pytest.mark.parametrize("name, z, expected", [
    ("exp", complex(800.0, 0.0), complex(math.inf, 0.0)),
    ("exp", complex(800.0, -0.0), complex(math.inf, -0.0)),
    ("exp", complex(800.0, 1.0), complex(math.inf, math.inf)),
    ("exp", complex(800.0, 2.0), complex(-math.inf, math.inf)),
    ("exp", complex(math.inf, 0.0), complex(math.inf, 0.0)),
    ("exp", complex(-math.inf, 0.0), complex(0.0, 0.0)),
    ("cosh", complex(-800.0, 0.0), complex(math.inf, -0.0)),
    ("sinh", complex(-800.0, 0.0), complex(-math.inf, 0.0)),
    ("log", complex(0.0, 0.0), complex(-math.inf, 0.0)),
    ("log", complex(-0.0, 0.0), complex(-math.inf, math.pi)),
    ("log", complex(0.0, -0.0), complex(-math.inf, -0.0)),
])
def test_c99_values_on_every_backend(name, z, expected):
    """The table of the issue, written out: the same bits on every backend."""
    for backend in BACKENDS:
        module = rlang.loads(_map_source(name), backend=backend)
        (w,), _ = module["f!"](np.zeros(1, dtype=complex), np.array([z]))
        assert _same_part(w.real, expected.real) and _same_part(w.imag, expected.imag), \
            (backend, w)
