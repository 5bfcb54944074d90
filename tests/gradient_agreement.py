"""The comparisons of two backends shared by tests/backends/llvm and tests/backends/cuda.

Gradients: None where the interpreter has none, else the same shape and values within
RTOL, or a caller's wider `rtol` (relative to the largest entry, so near-zero entries compare absolutely);
complex gradients are complex on both sides.  Errors: the same class, message, span
and call chain."""
from __future__ import annotations

import numpy as np

RTOL = 1e-12


def assert_same_gradients(got, expected, context: str = "", backend: str = "llvm",
                          rtol: float = RTOL):
    assert len(got) == len(expected), context
    for g, e in zip(got, expected):
        if e is None:
            assert g is None, context
            continue
        kind = complex if np.iscomplexobj(e) else float    # complex: (∂/∂re, ∂/∂im)
        assert np.iscomplexobj(g) == (kind is complex), context
        g, e = np.asarray(g, dtype=kind), np.asarray(e, dtype=kind)
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        assert g.shape == e.shape, context
        assert np.allclose(g, e, rtol=rtol, atol=rtol * scale, equal_nan=True), \
            f"{context}\n{backend} {g!r}\ninterpreter {e!r}"


# Note [Gradients as exact as their inputs]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# The compiled `exp` is within one unit in the last place of libm's (docs/backends.md),
# and a gradient pass restores the values it needs by running inverses, which can
# magnify that unit: `v[1] += exp(c * v[2])` undone as `91.58… − 90.08…` keeps fewer
# digits than it had, and the loss of one round feeds the next.  A generated
# program (CI, session 44) gave d v[1]/dc = 1755.30035958 on the interpreter,
# 1755.30036036 compiled, 1755.30035995 exactly (mpmath): both off by 2e-10 of it,
# and the interpreter's own gradient moved to 1755.30036029 with its inputs moved by
# one unit in the last place.  Such a case is compared within what the inputs' last
# bits already move the interpreter's gradients (`ulp_spread`), and a case whose
# gradients move by more than WIDEST_SPREAD of their scale with those bits is no
# test of agreement at all.

#: The generated program of the Note (its `f`; the case: a, b, c, d = 0, 0, 0.75, 0,
#: v = [0.9375, 0.5, 0], k = 0).
MAGNIFYING_PROGRAM = """
function h1(p, w: f64[:])
    for j = 0:2
        p += w[j] * cos(w[(j + 1) % 3]) * 0.5
    end
end
function f(a, b, c, d, v: f64[:], k)
    j1 ← 0
    while (j1 < 2, j1 > 0)
        for i2 = 0:2
            v[i2] += exp((c * v[(i2 + 1) % 3]))
        end
        j1 += 1
    end
    j1 → 2
    h1(c, v)
end
"""


#: The largest relative spread (`ulp_spread` over the largest entry) a case may have.
WIDEST_SPREAD = 1e-6


def ulp_spread(gradients_at, args, trials: int = 4) -> list:
    """How far `gradients_at(args)` (the interpreter's gradients, a list with None
    for none) moves, entry by entry, when every float argument moves by one unit in
    the last place in a random direction: the largest move over `trials` draws (Note
    [Gradients as exact as their inputs])."""
    base = gradients_at(args)
    spread = [None if g is None else np.zeros(np.shape(g)) for g in base]
    rng = np.random.default_rng(0)
    for _ in range(trials):
        moved = [_one_ulp(a, rng) for a in args]
        for k, g in enumerate(gradients_at(moved)):
            if g is not None and base[k] is not None:
                spread[k] = np.maximum(spread[k], np.abs(np.asarray(g) - np.asarray(base[k])))
    return spread


def _one_ulp(value, rng):
    """`value` one unit in the last place up or down, if it is a float or an array of
    float64; otherwise itself."""
    if isinstance(value, float):
        return float(np.nextafter(value, np.inf if rng.random() < 0.5 else -np.inf))
    if isinstance(value, np.ndarray) and value.dtype == np.float64:
        return np.nextafter(value, np.where(rng.random(value.shape) < 0.5, np.inf, -np.inf))
    return value


def assert_within_spread(got, expected, spread, context: str = "", rtol: float = RTOL):
    """`got` within `expected` ± (RTOL of the largest entry + 4× `spread`, entry by
    entry): the comparison of a case whose gradients its inputs' last bits move."""
    assert len(got) == len(expected) == len(spread), context
    for g, e, s in zip(got, expected, spread):
        if e is None:
            assert g is None, context
            continue
        g, e = np.asarray(g, dtype=float), np.asarray(e, dtype=float)
        scale = max(1.0, float(np.max(np.abs(e), initial=0.0)))
        assert g.shape == e.shape, context
        assert np.all(np.abs(g - e) <= rtol * scale + 4.0 * s), \
            f"{context}\nllvm {g!r}\ninterpreter {e!r}\nspread {s!r}"


class IllConditioned(Exception):
    """A case whose gradients its inputs' last bits move by more than WIDEST_SPREAD of
    their scale (or that inputs one ulp away make fail): no test of agreement."""


def assert_within_ulp_spread(got, expected, gradients_at, args, context: str = "",
                             rtol: float = RTOL) -> None:
    """`got` within the interpreter's `expected` ± (`rtol` of the scale + 4× how far
    `gradients_at` moves at `args` one ulp away: `ulp_spread`); IllConditioned where
    that spread is wider than WIDEST_SPREAD of the scale, or the gradients complex
    (Note [Gradients as exact as their inputs])."""
    import rlang

    if any(np.iscomplexobj(e) for e in expected if e is not None):
        raise IllConditioned(context)
    try:
        spread = ulp_spread(gradients_at, args)
    except rlang.RlangError as error:       # (inputs one ulp away fail a check)
        raise IllConditioned(context) from error
    scale = max([1.0] + [float(np.max(np.abs(e), initial=0.0))
                         for e in expected if e is not None])
    if any(s is not None and float(np.max(s, initial=0.0)) > WIDEST_SPREAD * scale
           for s in spread):
        raise IllConditioned(context)
    assert_within_spread(got, expected, spread, context, rtol)


def agree_or_ill_conditioned(got, expected, gradients_at, args, context: str = "",
                             rtol: float = RTOL) -> None:
    """For a Hypothesis case: `got` within `rtol` of the interpreter's `expected`, or
    within the spread of `assert_within_ulp_spread`; an ill-conditioned case is
    rejected (`assume`), as no test of agreement."""
    from hypothesis import assume

    try:
        assert_same_gradients(got, expected, context, rtol=rtol)
    except AssertionError:
        try:
            assert_within_ulp_spread(got, expected, gradients_at, args, context, rtol)
        except IllConditioned:
            assume(False)


def assert_same_error(got, expected) -> None:
    """The same class, message, span and call chain (function, site, direction)."""
    assert type(got) is type(expected)
    assert got.message == expected.message
    assert got.span == expected.span
    assert [(f.function, f.call_site, f.backward) for f in got.frames] == \
        [(f.function, f.call_site, f.backward) for f in expected.frames]


def llvm_and_interpreter(source: str, path, invcheck: bool = True) -> tuple:
    """(the llvm module, the interpreter's) of `source` written to the file `path`
    (a file, so that the disk caches serve it as a user's program)."""
    import rlang

    path.write_text(source)
    return (rlang.load(str(path), backend="llvm", invcheck=invcheck),
            rlang.load(str(path), backend="interp", invcheck=invcheck))
