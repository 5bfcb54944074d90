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
