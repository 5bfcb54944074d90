"""Derivatives against the primal's speed on one core (issue #26 items 2 and 5):
two workloads where rlang's gradient pass is measured against hand-written code.

    taskset -c 0 python benchmarks/primal_speed.py [--n 2000000] [--csc 1000] [--repeat 7]

1. A recurrence kept in an ancilla array, NiLang's style: `s ← zeros(f64, n + 1)`,
   an `@routine` that fills `s[i] += r * s[i-1] * (1 - s[i-1])`, the copy out,
   `~@routine` (with invcheck off and the indexing under `@inbounds`, so that the
   uncomputation is dead: Note [Liveness in for loops], rlang/ir/prune.py).  Rows: rlang's forward call against a Numba loop over one float;
   `rlang.grad` (d out / d (r, s0)) against the Numba forward and against a
   hand-written Numba adjoint (the forward storing s, then the reverse sweep).
2. Sparse y += A x (CSC, m × m, density 0.05), the vector-Jacobian product with a
   dense seed ȳ: `vjp_fn(ȳ)` of `rlang.vjp` (which gives Aᵀȳ, and ȳ[row]·x[col]
   for the nonzeros) against SciPy's `A.T @ ȳ` (Aᵀȳ alone), a hand-written
   Numba loop giving both gradients in one sweep (stores into fresh arrays, in
   column order), and JAX's `jax.vjp` of a segment-sum mat-vec (x's alone).

Each time is the best of `--repeat` runs after a warm-up; each result is checked
against the baseline's (relative 1e-10) first.  JAX runs on one thread with
asynchronous dispatch off.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numba  # noqa: E402
import numpy as np  # noqa: E402
import scipy.sparse  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
import rlang  # noqa: E402

WORKLOADS = ROOT / "benchmarks" / "llvm" / "workloads.rev"     # logistic!, csc_matvec!


@numba.njit(cache=False)
def numba_logistic(r, s0, n):
    s = s0
    for _ in range(n):
        s = r * s * (1.0 - s)
    return s


@numba.njit(cache=False)
def numba_logistic_adjoint(r, s0, n):
    s = np.empty(n + 1)
    s[0] = s0
    for i in range(1, n + 1):
        s[i] = r * s[i - 1] * (1.0 - s[i - 1])
    ds, dr = 1.0, 0.0
    for i in range(n, 0, -1):
        dr += ds * s[i - 1] * (1.0 - s[i - 1])
        ds = ds * r * (1.0 - 2.0 * s[i - 1])
    return dr, ds


@numba.njit(cache=False)
def numba_csc_vjp(colptr, rowval, nzval, x, seed):
    """The whole vector-Jacobian product of y += A x by hand, as `vjp_fn` returns
    it: fresh gradients of x (Aᵀ seed) and of the nonzeros (seed[row] · x[col])."""
    x_grad, nzval_grad = np.empty(len(x)), np.empty(len(nzval))
    for j in range(len(x)):
        total, xj = 0.0, x[j]
        for p in range(colptr[j], colptr[j + 1]):
            s = seed[rowval[p]]
            nzval_grad[p] = s * xj
            total += s * nzval[p]
        x_grad[j] = total
    return x_grad, nzval_grad


def best(call, repeat: int) -> float:
    call()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def check(ours, theirs, what: str) -> None:
    ours = np.ravel(np.asarray(ours, dtype=float))
    theirs = np.ravel(np.asarray(theirs, dtype=float))
    if not (np.all(np.isfinite(ours)) and np.all(np.isfinite(theirs))):
        raise SystemExit(f"{what}: a result is not finite")
    scale = max(1.0, float(np.max(np.abs(theirs))))
    error = float(np.max(np.abs(ours - theirs))) / scale
    if error > 1e-10:
        raise SystemExit(f"{what}: rlang and the baseline differ by {error:.2e}")


def row(name: str, ours: float, theirs: float, against: str) -> None:
    print(f"{name:34} {ours * 1e3:10.3f} ms {theirs * 1e3:10.3f} ms  {ours / theirs:6.2f}x "
          f"{against}")


def recurrence(module, n: int, repeat: int) -> None:
    r, s0 = 2.5, 0.3        # a stable fixed point: finite derivatives at any n
    f = module.logistic_
    grad = rlang.grad(f, argnums=(1, 2), loss="out!")
    check(f(0.0, r, s0, n)[0], numba_logistic(r, s0, n), "recurrence forward")
    check(grad(0.0, r, s0, n), numba_logistic_adjoint(r, s0, n), "recurrence gradient")
    forward = best(lambda: f(0.0, r, s0, n), repeat)
    gradient = best(lambda: grad(0.0, r, s0, n), repeat)
    numba_forward = best(lambda: numba_logistic(r, s0, n), repeat)
    numba_adjoint = best(lambda: numba_logistic_adjoint(r, s0, n), repeat)
    print(f"ancilla-array recurrence, n = {n}")
    row("forward", forward, numba_forward, "Numba's forward (target 1.1x)")
    row("gradient", gradient, numba_forward, "Numba's forward (target 3x)")
    row("gradient", gradient, numba_adjoint, "Numba's hand-written adjoint")


def csc(module, m: int, repeat: int) -> None:
    matrix = scipy.sparse.random(m, m, density=0.05, format="csc", dtype=np.float64,
                                 random_state=np.random.default_rng(1))
    colptr, rowval = matrix.indptr.astype(np.int64), matrix.indices.astype(np.int64)
    nzval, x = matrix.data.copy(), np.random.default_rng(2).normal(size=m)
    seed = np.random.default_rng(3).normal(size=m)
    _, pull = rlang.vjp(module.csc_matvec_, np.zeros(m), colptr, rowval, nzval, x)

    def ours():
        return pull((seed, None, None, None, None))[4]

    check(ours(), matrix.T @ seed, "csc vjp")
    print(f"CSC y += A x, {m} x {m}, {len(nzval)} nonzeros: vjp with a dense seed")
    rlang_time = best(ours, repeat)
    row("vjp_fn(seed)", rlang_time, best(lambda: matrix.T @ seed, repeat),
        "SciPy's A.T @ seed (target 1x)")
    by_hand = numba_csc_vjp(colptr, rowval, nzval, x, seed)
    check(pull((seed, None, None, None, None))[3], by_hand[1], "csc vjp, the nonzeros")
    row("vjp_fn(seed)", rlang_time,
        best(lambda: numba_csc_vjp(colptr, rowval, nzval, x, seed), repeat),
        "Numba by hand, both gradients")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_enable_async_dispatch", False)
    columns = jnp.asarray(np.repeat(np.arange(m), np.diff(colptr)))
    rows, values = jnp.asarray(rowval), jnp.asarray(nzval)

    def matvec(v):
        return jax.ops.segment_sum(values * v[columns], rows, num_segments=m)

    pulled = jax.jit(lambda v, s: jax.vjp(matvec, v)[1](s)[0])
    check(pulled(x, seed), matrix.T @ seed, "jax csc vjp")
    row("vjp_fn(seed)", rlang_time,
        best(lambda: pulled(x, seed).block_until_ready(), repeat), "jax.jit(jax.vjp)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=2_000_000, help="recurrence steps (0: skip)")
    parser.add_argument("--csc", type=int, default=1000, help="CSC matrix size (0: skip)")
    parser.add_argument("--repeat", type=int, default=7)
    options = parser.parse_args()
    module = rlang.load(WORKLOADS, backend="llvm", invcheck=False)
    print(f"{'':34} {'rlang':>13} {'baseline':>13}")
    if options.n:
        recurrence(module, options.n, options.repeat)
    if options.csc:
        csc(module, options.csc, options.repeat)


if __name__ == "__main__":
    main()
