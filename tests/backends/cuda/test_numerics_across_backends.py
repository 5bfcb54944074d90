"""Numerical corner cases where the interpreter, llvm and cuda must give one answer (#23, item 8).

- complex exp, sinh, cosh, sin, cos and log at overflow, at an infinite real part and
  at 0 give C99's (NumPy's) special values on every backend
  (rlang/complex_math.py, Note [Complex overflow as C99 says]);
- gradients of the complex built-ins and operations at 0 and on the real axis are
  the interpreter's on llvm and cuda: nan + nan·i where no derivative exists
  (Note [Gradients where no derivative exists], rlang/lower/complex_functions.py).
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


# ------------------------------------------------------------ complex gradients at 0

#: Complex built-ins and operations, at 0 (where several have no derivative) and on
#: the real axis (where sqrt, asin and acos put back signs with copysign).
GRADIENT_EXPRESSIONS = ["exp(z)", "log(z)", "sqrt(z)", "sin(z)", "tanh(z)", "asin(z)",
                        "acos(z)", "z ** 2", "z ** 0", "z ** -1", "z ** 0.5", "z ** 2.5",
                        "z ** (1.0 + 1.0im)", "1.0 / z", "complex(abs(z), 0.0)",
                        "complex(angle(z), 0.0)"]
GRADIENT_POINTS = np.array([0j, complex(-0.0, 0.0), complex(0.0, -0.0), complex(-0.0, -0.0),
                            4 + 0j, complex(-4.0, 0.0), complex(4.0, -0.0), 0.3 + 0j])


def _gradient_source(expression: str) -> str:
    """The parts of `expression` summed over the points: the points are independent,
    so one gradient gives ∂part/∂z at every point."""
    z = "z[i]"
    return (f"function f!(total!: f64[:], z: complex[:])\n"
            f"    for i = 0:length(z) - 1\n"
            f"        total![0] += real({expression.replace('z', z)})\n"
            f"        total![1] += imag({expression.replace('z', z)})\n"
            f"    end\nend\n")


def _gradients_at_the_points(backend: str) -> dict:
    """(expression, index of the point, "re"/"im" part of the result) →
    ∂part/∂re + ∂part/∂im·i."""
    found = {}
    for expression in GRADIENT_EXPRESSIONS:
        module = rlang.loads(_gradient_source(expression), backend=backend)
        for offset, part in enumerate(("re", "im")):
            args = (np.zeros(2), GRADIENT_POINTS.copy())
            gradient = rlang.gradient(module["f!"], args, loss=f"total![{offset}]")
            for k, g in enumerate(gradient[1]):
                found[expression, k, part] = complex(g)
    return found


def _same_gradient(a: complex, b: complex) -> bool:
    return all((math.isnan(x) and math.isnan(y)) or abs(x - y) <= 1e-12 * max(1.0, abs(y))
               for x, y in ((a.real, b.real), (a.imag, b.imag)))


@pytest.fixture(scope="module")
def interpreter_gradients():
    return _gradients_at_the_points("interp")


@pytest.mark.parametrize("backend", ["llvm", "cuda"])
def test_complex_gradients_at_zero_and_on_the_real_axis_agree(backend, interpreter_gradients):
    got = _gradients_at_the_points(backend)
    wrong = [(key, got[key], expected) for key, expected in interpreter_gradients.items()
             if not _same_gradient(got[key], expected)]
    assert not wrong, f"{backend}: {len(wrong)} differ from the interpreter: {wrong[:6]}"


def test_what_the_gradients_are_where_no_derivative_exists(interpreter_gradients):
    """docs/ad.md's table: nan + nan·i where no derivative exists at 0, 0 for abs and
    angle (as the real abs), the one-sided derivative on the side the sign of a zero
    imaginary part picks on a branch cut."""
    nan = complex(math.nan, math.nan)
    for expression in ("log(z)", "sqrt(z)", "z ** -1", "z ** 0.5", "z ** (1.0 + 1.0im)",
                       "1.0 / z"):
        for part in ("re", "im"):
            assert _same_gradient(interpreter_gradients[expression, 0, part], nan), expression
    for expression in ("complex(abs(z), 0.0)", "complex(angle(z), 0.0)"):
        assert interpreter_gradients[expression, 0, "re"] == 0j
    assert interpreter_gradients["z ** 2.5", 0, "re"] == 0j
    # sqrt(4 ± 0i) = ±… : ∂im/∂im = 1/4 on both sides; asin(4 + 0i) lies above the cut
    assert interpreter_gradients["sqrt(z)", 4, "im"] == 0.25j
    assert interpreter_gradients["sqrt(z)", 6, "im"] == 0.25j
    asin_above = interpreter_gradients["asin(z)", 4, "re"]
    assert asin_above.imag < 0 and abs(asin_above.imag + 1 / math.sqrt(15)) < 1e-15


NON_FINITE = """
function square(z: complex, w: complex)
    w += z * z
end

function scaled(z: complex, w: complex, c: complex)
    w += z * c + exp(z)
end
"""


@pytest.mark.parametrize("backend", ["llvm", "cuda"])
@pytest.mark.parametrize("z", [complex(math.inf, 0.0), complex(math.nan, 0.0),
                               complex(math.inf, 1.0), complex(0.5, -math.inf)])
def test_complex_gradients_at_non_finite_points(backend, z):
    """docs/ad.md: at an infinite or nan argument, a gradient part that one backend
    makes nan (IEEE's 0 · inf) may be a number on another (a zero seed part
    skipped); every part that neither makes nan agrees (fuzz seed 5001 case 5222)."""
    modules = {b: rlang.loads(NON_FINITE, backend=b) for b in ("interp", backend)}
    skipped = 0
    for name, extra in (("square", ()), ("scaled", (0.5 - 2.0j,))):
        for loss in ("w", "w.re", "w.im"):
            got, expected = (rlang.gradient(modules[b][name], [z, 0j, *extra], loss=loss)
                             for b in (backend, "interp"))
            for g, e in zip(got, expected):
                for x, y in ((g.real, e.real), (g.imag, e.imag)):
                    if math.isnan(x) != math.isnan(y):
                        skipped += 1
                    elif not math.isnan(x):
                        assert x == y or abs(x - y) <= 1e-12 * abs(y), (name, loss, got,
                                                                         expected)
    if z == complex(math.inf, 0.0):
        assert skipped > 0          # the case the fuzzer found: inf + nan·i against inf


def test_an_f32_update_by_an_f64_rounds_once():
    """Note [f32 updates] (rlang/lower/statements.py): in a kernel and in host code."""
    source = """
    function f(a: f32[:], x: f32, v)
        @parallel for i = 0:length(a) - 1
            a[i] += v
        end
        x += v
    end
    """
    v = 2.0 ** -24 + 2.0 ** -50
    for backend in ("interp", "cuda"):
        a = np.ones(3, dtype=np.float32)
        _, x, _ = rlang.loads(source, backend=backend).f(a, np.float32(1.0), v)
        assert a.tolist() == [1.0 + 2.0 ** -23] * 3 and float(x) == 1.0 + 2.0 ** -23, backend


def test_nested_complex_functions_in_conditions_share_their_temporaries():
    """Note [Lets in conditions] (rlang/ir/nodes.py): a Let is a line of its own in
    the generated code, in a kernel and in host code."""
    nested = "cos(sqrt(cos(sqrt(z[i]))))"
    source = f"""
    function f(y: f64[:], z: complex[:], w: complex)
        @parallel for i = 0:length(y) - 1
            if (abs({nested}) > 0.9, abs({nested}) > 0.9)
                y[i] += 1.0
            else
                y[i] -= 1.0
            end
        end
        for i = 0:i64(floor(abs(cos(sqrt(w))) * 3.0))
            y[0] += 1.0
        end
    end
    """
    z = np.array([0.3 + 0.4j, 2.0 - 1.0j, -1.5 + 0.2j, 4.0 + 3.0j])
    results = {}
    for backend in ("interp", "cuda"):
        y = np.zeros(4)
        rlang.loads(source, backend=backend).f(y, z.copy(), 1.0 + 2.0j)
        results[backend] = y
    np.testing.assert_array_equal(results["cuda"], results["interp"])
    assert sorted(set(results["interp"][1:])) == [-1.0, 1.0]


def test_an_integer_deallocated_against_a_float_compares_as_floats():
    """Note [Integers deallocated against floats] (rlang/lower/statements.py)."""
    source = "function g(k: i64, x)\n    t ← k\n    t → x\nend\n"
    for x in (3.5, 1e308, 3.000000001):
        outcomes = []
        for backend in ("interp", "cuda"):
            try:
                outcomes.append(rlang.loads(source, backend=backend).g(3, x))
            except rlang.RlangError as error:
                outcomes.append(error.message)
        assert outcomes[0] == outcomes[1]
    assert outcomes[0] == (3, 3.000000001)
