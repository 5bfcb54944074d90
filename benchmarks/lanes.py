"""Passes of a `@parallel for` in SIMD lanes (Note [Iterations in lanes],
rlang/ir/iteration_lanes.py; issue #26 item 3): per-point code with short inner
loops, as a user writes it, against the same code as a plain `for` (one point at a
time: what the compiler made of it before) and against JAX's `jit(vmap(...))` of the
same per-point function, forward and gradient, in one process.

    RLANG_NUM_THREADS=1 taskset -c 0 python benchmarks/lanes.py [--repeat 40]

The program is a mixture's per-point energy: for each of n = 1000 points, the
squared distances to K centres in d coordinates, then a sum over the centres.
Printed: medians of `--repeat` calls (after a warm-up), and the ratios lanes/serial
and lanes/JAX.  JAX runs single-threaded with asynchronous dispatch off.
"""
from __future__ import annotations

import argparse
import os
import time

import numpy as np

PER_POINT = """
function {name}(y!: f64[:], x: f64[:,:], mu: f64[:,:])
    {loop} i = 0:size(x, 0) - 1
        @inbounds begin
            @routine begin
                d ← size(x, 1)
                s ← zeros(f64, size(mu, 0))
                for k = 0:size(mu, 0) - 1
                    for j = 0:d - 1
                        s[k] += (x[i, j] - mu[k, j]) * (x[i, j] - mu[k, j])
                    end
                end
            end
            for k = 0:size(mu, 0) - 1
                y![i] += 1.0 / (1.0 + s[k])
            end
            ~@routine
        end
    end
end

function {name}_loss(l!: f64, y: f64[:], x: f64[:,:], mu: f64[:,:])
    @routine {name}(y, x, mu)
    for i = 0:length(y) - 1
        @inbounds l! += y[i] * y[i]
    end
    ~@routine
end
"""

SIZES = [(2, 5), (4, 5), (10, 5), (10, 25), (32, 5)]


def median_us(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return float(np.median(times)) * 1e6


def jax_functions():
    os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                       "intra_op_parallelism_threads=1")
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jax.config.update("jax_cpu_enable_async_dispatch", False)

    def point(x, mu):
        s = jnp.sum((x[None, :] - mu) ** 2, axis=1)
        return jnp.sum(1.0 / (1.0 + s))

    energies = jax.jit(jax.vmap(point, in_axes=(0, None)))
    loss_grad = jax.jit(jax.grad(lambda x, mu: jnp.sum(jax.vmap(point, in_axes=(0, None))(
        x, mu) ** 2), argnums=(0, 1)))
    return (lambda x, mu: jax.block_until_ready(energies(x, mu)),
            lambda x, mu: jax.block_until_ready(loss_grad(x, mu)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=40)
    args = parser.parse_args()
    import rlang

    source = PER_POINT.format(name="lanes", loop="@parallel for") + \
        PER_POINT.format(name="serial", loop="for")
    m = rlang.loads(source, backend="llvm", invcheck=False)
    jax_fns = jax_functions()
    rng = np.random.default_rng(0)
    n = 1000
    print(f"per-point mixture energy, n = {n}, medians of {args.repeat} (µs); "
          f"threads {rlang.get_num_threads()}")
    print("| d × K | pass | lanes | serial | JAX | lanes/serial | lanes/JAX |")
    print("|---|---|---|---|---|---|---|")
    for d, k in SIZES:
        x, mu = rng.normal(size=(n, d)), rng.normal(size=(k, d))
        y = np.zeros(n)
        laned, serial = m.lanes(y, x, mu)[0].copy(), m.serial(np.zeros(n), x, mu)[0]
        assert np.array_equal(laned, serial), "lanes changed the forward's bits"
        rows = []
        for name in ("lanes", "serial"):
            forward = m[name]
            grad = rlang.grad(m[f"{name}_loss"], "l!", argnums=(2, 3))
            rows.append((median_us(lambda: forward(y, x, mu), args.repeat),
                         median_us(lambda: grad(0.0, y, x, mu), args.repeat)))
        jax_times = (None, None)
        if jax_fns is not None:
            jax_times = tuple(median_us(lambda f=f: f(x, mu), args.repeat) for f in jax_fns)
        for p, label in enumerate(("forward", "gradient")):
            lanes, ser, jx = rows[0][p], rows[1][p], jax_times[p]
            jax_text = f"{jx:.0f}" if jx else "—"
            ratio = f"{lanes / jx:.2f}" if jx else "—"
            print(f"| {d} × {k} | {label} | {lanes:.0f} | {ser:.0f} | {jax_text} | "
                  f"{lanes / ser:.2f} | {ratio} |")


if __name__ == "__main__":
    main()
