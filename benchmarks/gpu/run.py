"""GPU benchmarks of the cuda backend (issue #6): ADBench BA Jacobian and GMM gradient.

    python benchmarks/gpu/run.py [--quick | --smoke] [--check] [--repeat N]

The same rev program (workloads.rev) runs on the cuda backend (kernels on the GPU)
and on the llvm backend (one CPU core), and the same functions written in JAX run
with jax.jit on the GPU.  Each figure is the best of --repeat runs, after a warm-up
run (compilation excluded); the script prints seconds and the ratios
llvm/cuda and cuda/JAX.  --check compares the three results first.  Without JAX
the JAX column is skipped ("-"), with a note.

--smoke runs toy sizes once, with --check, so that it finishes in seconds under
Numba's simulator (NUMBA_ENABLE_CUDASIM=1, no GPU): tests/backends/cuda/test_benchmark.py
runs it that way, so the script cannot rot while no GPU is at hand.

- BA: the Jacobian of the reprojection residuals, ADBench's smallest size
  (ba1: 21 cameras, 11,315 points, 36,455 observations) and a large one (ba_large:
  10^6 observations).  Inputs are random with ADBench's shapes (the cameras and
  points of each observation are copied into one 15-column row per observation):
  two gradient passes, seeded with ones on r0 then r1, give both rows of every
  2×15 block.
- GMM: the gradient of the data term of the ADBench GMM objective (diagonal Q),
  d = 10, K = 25, n = 10^4 and 10^6 points: one gradient pass seeded with ones.

Needs a CUDA GPU, numba-cuda (`pip install "rlang[cuda]"`) and JAX with CUDA.
No figures were recorded in the repository yet (no GPU was available).
"""
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import rlang
from rlang.ad.adjoint_ir import AdjointFunction
from rlang.ad.lanes import lane_arguments
from rlang.ad.symbols import laned_symbol
from rlang.ir.nodes import symbol_of
from rlang.lower.statements import type_of_value

HERE = Path(__file__).resolve().parent


def gradient_pass(module, name: str, args: list, seeds: list) -> tuple:
    """Run `name` forward, then its gradient pass with the output gradients `seeds`
    (None for integers): the vector-Jacobian product.  `seeds` may be a list of such
    lists, one per cotangent: one pass with lanes then carries them all (Note
    [Gradient lanes], rlang/ad/lanes.py).  Returns (the input gradients, one list per
    cotangent when there are several; the arguments' values after the pass)."""
    lanes = seeds if isinstance(seeds[0], list) else [seeds]
    functions = module.compiled
    with functions.resident():      # the arrays cross once (Note [Arrays resident
        outputs = functions.call(name, args, False)     # through a gradient])
        types = tuple(type_of_value(v) for v in outputs)
        derivative = f"grad{len(lanes)}" if len(lanes) > 1 else "grad"
        native = functions.native(name, types, False, derivative=derivative)
        symbol = AdjointFunction.symbol(symbol_of(name, types, True))
        if len(lanes) > 1:
            symbol = laned_symbol(symbol, len(lanes))
        grads = [[s.copy() if isinstance(s, np.ndarray) else s for s in lane] for lane in lanes]
        functions.prepare_gradients([g for lane in grads for g in lane
                                     if isinstance(g, np.ndarray)])
        new = functions.run(native, symbol, outputs + lane_arguments(grads))
    found = [[g for g in lane if g is not None] for lane in grads]
    return (found if len(lanes) > 1 else found[0]), new


def call_counts(fn) -> tuple:
    """The launches and copies of one warm call of `fn` (LANGUAGE.md §10), and the
    summary of its timeline: wall time, the kernels' time and the gaps
    (`rlang.cuda.timeline()`; kernels are timed on a GPU only)."""
    fn()
    rlang.cuda.reset_stats()
    with rlang.cuda.timeline() as timeline:
        fn()
    return rlang.cuda.stats(), timeline.summary()


def best(fn, repeat: int) -> float:
    fn()                                   # warm-up: compilation, first transfers
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


# ------------------------------------------------------------------ workloads

def ba_inputs(n_obs: int, rng):
    P = np.empty((n_obs, 15))
    P[:, 0:3] = rng.uniform(-0.3, 0.3, (n_obs, 3))
    P[:, 3:6] = rng.uniform(-1, 1, (n_obs, 3))
    P[:, 6] = rng.uniform(400, 600, n_obs)
    P[:, 7:9] = rng.uniform(-5, 5, (n_obs, 2))
    P[:, 9:11] = rng.uniform(-1e-3, 1e-3, (n_obs, 2))
    P[:, 11:13] = rng.uniform(-1, 1, (n_obs, 2))
    P[:, 13] = rng.uniform(5, 10, n_obs)
    P[:, 14] = rng.uniform(0.5, 1.5, n_obs)
    feats = rng.uniform(-50, 50, (n_obs, 2))
    return P, feats


def ba_rev(module, P, feats):
    n = len(P)
    seeds = [[np.zeros(n), np.zeros(n), np.zeros_like(P), np.zeros_like(feats)]
             for _ in (0, 1)]
    seeds[0][0][:] = 1.0                   # lane 0: r0's row, lane 1: r1's (one pass)
    seeds[1][1][:] = 1.0
    lanes, _ = gradient_pass(module, "ba", [np.zeros(n), np.zeros(n), P, feats], seeds)
    return np.stack([lanes[0][2], lanes[1][2]], axis=1)          # (n_obs, 2, 15)


def jax_or_none():
    """The jax module, or None when it is not installed (its column is skipped)."""
    try:
        import jax
    except ImportError:
        return None
    return jax


def ba_jax():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def residual(p, m):
        d = p[11:14] - p[3:6]
        th = jnp.sqrt(jnp.dot(p[0:3], p[0:3]) + 1e-30)
        w = p[0:3] / th
        c, s = jnp.cos(th), jnp.sin(th)
        proj = d * c + jnp.cross(w, d) * s + w * jnp.dot(w, d) * (1 - c)
        u, v = proj[0] / proj[2], proj[1] / proj[2]
        rr = u * u + v * v
        dist = 1 + p[9] * rr + p[10] * rr * rr
        return p[14] * (p[7:9] + p[6] * dist * jnp.array([u, v]) - m)

    return jax.jit(jax.vmap(jax.jacrev(residual)))


def gmm_inputs(n: int, d: int, k: int, rng):
    return (rng.standard_normal((n, d)), rng.standard_normal(k),
            rng.standard_normal((k, d)), 0.1 * rng.standard_normal((k, d)))


def gmm_rev(module, x, alphas, means, icf):
    n = len(x)
    seeds = [np.ones(n), np.zeros_like(x), np.zeros_like(alphas), np.zeros_like(means),
             np.zeros_like(icf)]
    grads, _ = gradient_pass(module, "gmm", [np.zeros(n), x, alphas, means, icf], seeds)
    return grads[2:]


def gmm_jax():
    import jax
    import jax.numpy as jnp

    jax.config.update("jax_enable_x64", True)

    def data_term(alphas, means, icf, x):
        diff = jnp.exp(icf)[None] * (x[:, None, :] - means[None])
        q = jnp.sum(diff ** 2 - 2 * icf[None], axis=2)
        return jnp.sum(jnp.log(jnp.sum(jnp.exp(alphas[None] - 0.5 * q), axis=1)))

    return jax.jit(jax.grad(data_term, argnums=(0, 1, 2)))


# ----------------------------------------------------------------------- main

#: (BA sizes as (label, observations), GMM sizes as (n, d, K)) of each mode.
SIZES = {
    "full": ([("ba1 (36,455 obs)", 36455), ("ba_large (10^6 obs)", 10 ** 6)],
             [(10 ** 4, 10, 25), (10 ** 6, 10, 25)]),
    "quick": ([("ba1 (36,455 obs)", 36455)], [(10 ** 4, 10, 25)]),
    "smoke": ([("toy (21 obs)", 21)], [(13, 3, 4)]),
}


def check_agreement(label: str, cuda_result, llvm_result, jax_result) -> None:
    """cuda and llvm agree within 1e-10, and JAX (when run) within 1e-8, relative to
    the largest entry; a disagreement stops the script (SystemExit)."""
    for name, other, rtol in (("llvm", llvm_result, 1e-10), ("JAX", jax_result, 1e-8)):
        if other is None:
            continue
        for a, b in zip(cuda_result, other):
            a, b = np.asarray(a), np.asarray(b)
            scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
            if a.shape != b.shape or not np.allclose(a, b, rtol=rtol, atol=rtol * scale):
                raise SystemExit(f"{label}: the cuda backend and {name} disagree "
                                 f"(largest difference {np.max(np.abs(a - b)):.3g})")
    print(f"checked {label}: cuda = llvm{'' if jax_result is None else ' = JAX'}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the smaller size of each")
    mode.add_argument("--smoke", action="store_true",
                      help="toy sizes, once, checked (runs under the simulator)")
    parser.add_argument("--check", action="store_true", help="compare results first")
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args(argv)
    if options.smoke:
        options.check, options.repeat = True, 1
    ba_sizes, gmm_sizes = SIZES["smoke" if options.smoke else
                                "quick" if options.quick else "full"]
    rng = np.random.default_rng(0)
    cuda = rlang.load(HERE / "workloads.rev", backend="cuda", invcheck=False)
    llvm = rlang.load(HERE / "workloads.rev", backend="llvm", invcheck=False)
    jax = jax_or_none()
    if jax is None:
        print("JAX is not installed: its column is skipped")
    rows, counted = [], []
    jac = ba_jax() if jax else None
    for label, n in ba_sizes:
        P, feats = ba_inputs(n, rng)
        run_jax = (lambda: np.asarray(jac(P, feats))) if jax else None
        if options.check:
            check_agreement(f"BA Jacobian, {label}", [ba_rev(cuda, P, feats)],
                            [ba_rev(llvm, P, feats)], run_jax and [run_jax()])
        counted.append((f"BA Jacobian, {label}", call_counts(lambda: ba_rev(cuda, P, feats))))
        rows.append((f"BA Jacobian, {label}", best(lambda: ba_rev(cuda, P, feats), options.repeat),
                     best(lambda: ba_rev(llvm, P, feats), options.repeat),
                     run_jax and best(run_jax, options.repeat)))
    grad = gmm_jax() if jax else None
    for n, d, k in gmm_sizes:
        x, alphas, means, icf = gmm_inputs(n, d, k, rng)
        label = f"GMM gradient, d={d} K={k} n={n:,}"
        run_jax = (lambda: [np.asarray(g) for g in grad(alphas, means, icf, x)]) if jax \
            else None
        if options.check:
            check_agreement(label, gmm_rev(cuda, x, alphas, means, icf),
                            gmm_rev(llvm, x, alphas, means, icf), run_jax and run_jax())
        counted.append((label, call_counts(lambda: gmm_rev(cuda, x, alphas, means, icf))))
        rows.append((label, best(lambda: gmm_rev(cuda, x, alphas, means, icf), options.repeat),
                     best(lambda: gmm_rev(llvm, x, alphas, means, icf), options.repeat),
                     run_jax and best(run_jax, options.repeat)))
    print("launches and host-device copies of one call on the cuda backend "
          "(rlang.cuda.stats()):")
    for name, (found, _) in counted:
        print(f"  {name:44} " + ", ".join(f"{k} {v}" for k, v in found.items()))
    print("timeline of that call (rlang.cuda.timeline()):")
    for name, (_, summary) in counted:
        print(f"  {name:44} {summary}")
    print(f"{'workload':44} {'cuda s':>9} {'llvm s':>9} {'JAX s':>9} "
          f"{'llvm/cuda':>10} {'cuda/JAX':>9}")
    for name, c, l_, j in rows:
        jax_s, ratio = ("-", "-") if j is None else (f"{j:.4f}", f"{c / j:.2f}")
        print(f"{name:44} {c:9.4f} {l_:9.4f} {jax_s:>9} {l_ / c:10.1f} {ratio:>9}")


if __name__ == "__main__":
    main()
