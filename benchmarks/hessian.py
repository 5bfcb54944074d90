"""Second derivatives on one core (issue #26 item 1): the graph-embedding loss of
examples/petersen.rev (the Petersen graph's 10 vertices in R^k) against JAX.

    taskset -c 0 python benchmarks/hessian.py [--k 10] [--repeat 200]

Rows: the time of a call after warm-up, rlang's and JAX's measured in turn in blocks
of 20 calls (`--repeat` calls of each; the median of the blocks' means), with the
ratio to JAX's time for the same quantity:

- gradient: `rlang.grad(f, argnums=1)` against `jax.jit(jax.grad(loss))`, with the
  module's reversibility checks on (the default) and off (`invcheck=False`, as
  benchmarks/llvm/run.py times gradients: JAX checks nothing);
- hvp: `rlang.hvp` against `jax.jit` of forward over reverse (`jax.jvp` of
  `jax.grad`);
- hessian: `rlang.hessian(…, argnums=1)` (the k·10 × k·10 matrix) against
  `jax.jit(jax.hessian(loss))`.

Every rlang result is checked against JAX's (relative 1e-10) before it is timed.
JAX runs on one thread with asynchronous dispatch off (set here before JAX is
imported), so its times are its work, not its dispatch.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "examples")]
import rlang  # noqa: E402
from petersen_newton import petersen_adjacency  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)


def jax_loss(adj: np.ndarray):
    """examples/petersen.rev's loss as a function of x, in jax.numpy."""
    i, j = np.triu_indices(len(adj), 1)
    connected = adj[i, j] == 1

    def loss(x):
        d = jnp.sqrt(jnp.sum((x[i] - x[j]) ** 2, axis=1))
        d1, d2 = d[connected], d[~connected]
        m1, m2 = jnp.mean(d1), jnp.mean(d2)
        penalty = jnp.where(m1 - m2 + 0.1 > 0.0, jnp.exp(m1 - m2 + 0.1) - 1.0, 0.0)
        return jnp.mean((d1 - m1) ** 2) + jnp.mean((d2 - m2) ** 2) + penalty
    return loss


def median_seconds(ours, theirs, repeat: int, block: int = 20) -> tuple:
    """The median time of a call of `ours()` and of `theirs()`: blocks of `block`
    calls of each in turn (so that a slower stretch of a shared machine slows both
    alike, and neither evicts the other's data from the caches within a block),
    `repeat` calls of each in all, the median over the blocks of a block's mean."""
    for _ in range(min(20, repeat)):
        ours()
        theirs()
    times = ([], [])
    for _ in range(max(1, repeat // block)):
        for call, kept in zip((ours, theirs), times):
            start = time.perf_counter()
            for _ in range(block):
                call()
            kept.append((time.perf_counter() - start) / block)
    return statistics.median(times[0]), statistics.median(times[1])


def agree(ours, theirs, what: str) -> None:
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    scale = max(1.0, float(np.max(np.abs(theirs))))
    error = float(np.max(np.abs(ours - theirs))) / scale
    if error > 1e-10:
        raise SystemExit(f"{what}: rlang and JAX differ by {error:.2e}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=10, help="dimension of the embedding")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    options = parser.parse_args()

    adj = petersen_adjacency()
    x = np.random.default_rng(options.seed).normal(size=(10, options.k))
    v = np.random.default_rng(options.seed + 1).normal(size=x.shape)
    module = rlang.load(str(ROOT / "examples" / "petersen.rev"), backend="llvm")
    f = module.petersen_
    unchecked = rlang.load(str(ROOT / "examples" / "petersen.rev"), backend="llvm",
                           invcheck=False).petersen_
    loss = jax_loss(adj)
    xj, vj = jnp.asarray(x), jnp.asarray(v)

    grad = rlang.grad(f, argnums=1, loss="loss!")
    grad_unchecked = rlang.grad(unchecked, argnums=1, loss="loss!")
    jax_grad = jax.jit(jax.grad(loss))
    jax_hvp = jax.jit(lambda x, v: jax.jvp(jax.grad(loss), (x,), (v,))[1])
    jax_hessian = jax.jit(jax.hessian(loss))

    rows = [
        ("gradient", lambda: grad(0.0, x, adj), lambda: jax_grad(xj).block_until_ready(),
         lambda r: r),
        ("gradient, invcheck off", lambda: grad_unchecked(0.0, x, adj),
         lambda: jax_grad(xj).block_until_ready(), lambda r: r),
        ("hvp", lambda: rlang.hvp(f, (0.0, x, adj), (None, v, None), "loss!"),
         lambda: jax_hvp(xj, vj).block_until_ready(), lambda r: r[1]),
        ("hessian", lambda: rlang.hessian(f, (0.0, x, adj), "loss!", argnums=1),
         lambda: jax_hessian(xj).block_until_ready(),
         lambda r: r.reshape(x.size, x.size)),
    ]
    n = x.size
    print(f"graph embedding, k = {options.k} ({n} coordinates), one core, "
          f"median of {options.repeat}")
    print(f"{'':24} {'rlang':>12} {'JAX':>12} {'rlang/JAX':>10}")
    for name, ours, theirs, pick in rows:
        expected = np.asarray(theirs()).reshape(-1)
        agree(np.asarray(pick(ours())).reshape(-1), expected, name)
        mine, jaxs = median_seconds(ours, theirs, options.repeat)
        print(f"{name:24} {mine * 1e6:10.1f}µs {jaxs * 1e6:10.1f}µs {mine / jaxs:10.2f}")


if __name__ == "__main__":
    main()
