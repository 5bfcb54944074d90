"""Independent gradients for the AD tests: central differences of a loss over
forward runs of a function (none of rlang's AD code), and their comparison."""
from __future__ import annotations

import numpy as np


def numeric_gradient(fn, args, loss, step: float = 1e-6) -> list:
    """Central differences of `loss(outputs)` over forward runs of `fn`: one entry per
    argument (None for integers and bools; ∂/∂re + i·∂/∂im for complex numbers)."""

    def value_at(position, index, delta):
        shifted = [a.copy() if isinstance(a, np.ndarray) else a for a in args]
        if index is None:
            shifted[position] = shifted[position] + delta
        else:
            shifted[position][index] += delta
        return float(loss(fn(*shifted)))

    def partial(position, index, direction):
        return (value_at(position, index, direction * step)
                - value_at(position, index, -direction * step)) / (2 * step)

    result = []
    for position, arg in enumerate(args):
        if isinstance(arg, (bool, int, np.integer)) or \
                (isinstance(arg, np.ndarray) and arg.dtype.kind not in "fc"):
            result.append(None)
        elif isinstance(arg, np.ndarray):
            grad = np.zeros(arg.shape, dtype=arg.dtype)
            for index in np.ndindex(arg.shape):
                grad[index] = partial(position, index, 1.0)
                if arg.dtype.kind == "c":
                    grad[index] += 1j * partial(position, index, 1j)
            result.append(grad)
        elif isinstance(arg, complex):
            result.append(complex(partial(position, None, 1.0), partial(position, None, 1j)))
        else:
            result.append(partial(position, None, 1.0))
    return result


def assert_gradients_close(actual, expected, rtol=1e-5, atol=1e-7):
    """Gradients equal argument by argument (None where there is none)."""
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected)):
        if e is None:
            assert a is None, f"argument {i}: expected no gradient, got {a!r}"
            continue
        assert a is not None, f"argument {i}: expected {e!r}, got None"
        np.testing.assert_allclose(np.asarray(a, dtype=complex), np.asarray(e, dtype=complex),
                                   rtol=rtol, atol=atol, err_msg=f"argument {i}")
