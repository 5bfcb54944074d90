"""What the cuda tests compare: values of the two backends, and the programs used."""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from gradient_agreement import assert_same_error  # noqa: F401 (for the cuda tests)
from gradient_agreement import assert_same_gradients as shared_assert_same_gradients
from number_systems import agree, magnitude  # noqa: F401 (magnitude: for the cuda tests)

HERE = Path(__file__).resolve().parent
KERNELS = HERE / "programs" / "kernels.rev"
RTOL = 1e-12
#: Whether the kernels run on a GPU (RLANG_CUDA_REAL=1) rather than the simulator.
ON_GPU = os.environ.get("RLANG_CUDA_REAL", "0") not in ("", "0")


def copy(args):
    return [a.copy() if isinstance(a, np.ndarray) else a for a in args]


def kernel_error(source: str, call) -> tuple:
    """`call(module)` on the interpreter and on cuda, where both must raise:
    (cuda's error, the interpreter's error)."""
    import pytest
    import rlang

    errors = []
    for backend in ("cuda", "interp"):
        with pytest.raises(rlang.RlangError) as caught:
            call(rlang.loads(source, backend=backend))
        errors.append(caught.value)
    return tuple(errors)


def same(a, b, scale: float = 0.0, rtol: float = RTOL) -> bool:
    """Exactly the same for integers and bools; floats (and f32 values rounded
    alike) within RTOL of the larger of |b| and `scale`, the magnitude of the values
    the computation passed through (`magnitude`): a result that cancelled down to
    about 0 (an inverse restoring 0.0) compares absolutely.  A real GPU needs it:
    libdevice's sin and exp differ from the host's in the last bit.  Arrays of the
    same class, dtype and shape (number_systems.agree)."""
    return agree(a, b, scale, rtol)


def assert_same_gradients(got, expected, context="", rtol: float = RTOL):
    shared_assert_same_gradients(got, expected, context, backend="cuda", rtol=rtol)


def gpu_rtol(compute, args, trials: int = 4, ulps: float = 4.0) -> float:
    """The relative tolerance for comparing a GPU's floats with the interpreter's.

    Under the simulator the kernels call the host's math functions, so RTOL.  On a
    GPU, libdevice's sin, exp, tanh … differ from the host's in the last bit or two,
    and a result amplifies that by its condition number (a generated gradient may
    have 10^5).  The tolerance is then the larger of RTOL and 10 times the largest
    relative change of `compute(args)` (a list of values, on the interpreter) over
    `trials` runs with every float argument multiplied by 1 + `ulps`·2^-52·N(0, 1):
    how far a few ulps inside the computation can move its result."""
    if not ON_GPU:
        return RTOL
    rng = np.random.default_rng(0)
    base = [np.asarray(v, dtype=complex) for v in compute(copy(args))]
    spread = 0.0
    for _ in range(trials):
        moved = [a * (1 + ulps * 2.0 ** -52 * rng.standard_normal(np.shape(a)))
                 if np.asarray(a).dtype.kind == "f" else a for a in args]
        moved = [float(m) if isinstance(a, float) else m for a, m in zip(args, moved)]
        for b, m in zip(base, compute(moved)):
            m = np.asarray(m, dtype=complex)
            size = max(1.0, float(np.max(np.abs(b), initial=0.0)))
            spread = max(spread, float(np.max(np.abs(m - b), initial=0.0)) / size)
    return max(RTOL, 10 * spread)


def kernel_cases():
    """(function, arguments, loss) for each function of programs/kernels.rev."""
    rng = np.random.default_rng(7)
    x = rng.uniform(-1.0, 1.0, 37)
    return [
        ("saxpy", [rng.uniform(-1, 1, 37), x.copy(), 0.75], ("y", 3)),
        ("stencil", [np.zeros(29), rng.uniform(-1, 1, 29)], ("y", 5)),
        ("calls", [rng.uniform(-1, 1, 23), rng.uniform(-1, 1, 23), 1.25], ("y", 22)),
        ("rows", [rng.uniform(-1, 1, (9, 4)), rng.uniform(-3, 3, 9)], ("m", (3, 1))),
        ("mixed", [rng.integers(-10**12, 10**12, 21), rng.integers(-1000, 1000, 21)
                   .astype(np.int32), rng.integers(0, 2, 21).astype(bool),
                   rng.uniform(-2, 2, 21).astype(np.float32), 5], None),
        ("loss", [0.0, np.zeros(40), rng.uniform(-1, 1, 40), -0.5], "l"),
        ("branchy", [np.zeros(31), rng.uniform(-1, 1, 31), 1.5], ("y", 4)),
        ("shared_twice", [rng.uniform(-1, 1, 19), 0.5], ("y", 3)),
        ("stencil_loss", [0.0, np.zeros(33), rng.uniform(-1, 1, 33)], "l"),
        ("calls_loss", [0.0, rng.uniform(-1, 1, 26), rng.uniform(-1, 1, 26), 0.8], "l"),
    ]
