"""The cost of rlang inside JAX and PyTorch, and of `rlang.vmap` (issue: rlang
inside the Python AD ecosystem), as ratios against baselines measured in this run.

    taskset -c 0 python benchmarks/interop.py [--calls N] [--batch B]

1. Overhead of a bridge, the median of N calls of a function whose compiled work is
   under a microsecond (`y! += a * b * b`), on the llvm backend:
   - a call of `rlang.jax.wrap(m.f, loss="y!")` inside `jax.jit` beside the direct
     call `m.f(…)`;
   - a PyTorch forward + backward through `rlang.torch.wrap(m.f, loss="y!")` beside
     the direct call followed by `rlang.gradient`.
2. `rlang.vmap(rlang.grad(…))` over B small inputs (`y! += a * Σ x[i]^3`, 3
   elements each) beside a Python loop of `rlang.gradient` and beside
   `jax.jit(jax.vmap(jax.grad(…)))` of the same function written in jax.numpy
   (results compared).

JAX runs on one thread with asynchronous dispatch off (the flags are set here
before JAX is imported), so its times are its work, not its dispatch.
"""
from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")

import numpy as np  # noqa: E402

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import torch  # noqa: E402

import rlang  # noqa: E402

jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)
torch.set_num_threads(1)

SOURCE = """
function small(y!, a, b)
    y! += a * b * b
end

function cubes(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        y! += a * x[i] * x[i] * x[i]
    end
end
"""


def median_time(call, count: int) -> float:
    """The median seconds of one `call()` over `count` calls (after 100 warm-ups)."""
    for _ in range(100):
        call()
    times = []
    clock = time.perf_counter
    for _ in range(count):
        start = clock()
        call()
        times.append(clock() - start)
    return statistics.median(times)


def best_time(call, repeats: int = 5) -> float:
    call()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def bridge_overheads(m, count: int) -> list:
    direct = median_time(lambda: m.small(0.0, 2.0, 3.0), count)
    jitted = jax.jit(rlang.jax.wrap(m.small, loss="y!"))
    a, b = jnp.asarray(2.0), jnp.asarray(3.0)
    in_jax = median_time(lambda: jitted(0.0, a, b).block_until_ready(), count)
    gradient = median_time(lambda: (m.small(0.0, 2.0, 3.0),
                                    rlang.gradient(m.small, (0.0, 2.0, 3.0), loss="y!")), count)
    wrapped = rlang.torch.wrap(m.small, loss="y!")
    ta = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    tb = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)

    def torch_step():
        wrapped(0.0, ta, tb).backward()

    in_torch = median_time(torch_step, count)
    return [("direct call", direct, None),
            ("jax.jit(wrap) call", in_jax, in_jax - direct),
            ("  (floor: a jitted no-op pure_callback)", _callback_floor(count), None),
            ("direct call + rlang.gradient", gradient, None),
            ("torch forward + backward", in_torch, in_torch - gradient),
            ("  (floor: a no-op autograd.Function)", _function_floor(count), None),
            ("  (PyTorch's own a*b*b, fwd + bwd)", _native_floor(count), None)]


def _callback_floor(count: int) -> float:
    """What any host callback costs inside jax.jit: a no-op one."""
    spec = jax.ShapeDtypeStruct((), jnp.float64)
    noop = jax.jit(lambda a: jax.pure_callback(lambda x: np.asarray(x), spec, a))
    a = jnp.asarray(1.0)
    return median_time(lambda: noop(a).block_until_ready(), count)


class _Noop(torch.autograd.Function):
    @staticmethod
    def forward(ctx, a, b):
        return a * 1.0

    @staticmethod
    def backward(ctx, seed):
        return seed, seed


def _function_floor(count: int) -> float:
    """What any custom autograd.Function costs, forward and backward: a no-op one."""
    a = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    return median_time(lambda: _Noop.apply(a, b).backward(), count)


def _native_floor(count: int) -> float:
    """What PyTorch itself takes for the same function, forward and backward, with
    no custom Function: its autograd engine's cost, which any bridge pays too."""
    a = torch.tensor(2.0, dtype=torch.float64, requires_grad=True)
    b = torch.tensor(3.0, dtype=torch.float64, requires_grad=True)
    return median_time(lambda: (a * b * b).backward(), count)


def batched_gradients(m, batch: int) -> list:
    rng = np.random.default_rng(0)
    ys, a, x = np.zeros(batch), rng.random(batch), rng.random((batch, 3))
    mapped = rlang.vmap(rlang.grad(m.cubes, "y!"))
    ours = best_time(lambda: mapped(ys, a, x))
    loop_count = min(batch, 2000)           # the loop's time per item, scaled

    def loop():
        for k in range(loop_count):
            rlang.gradient(m.cubes, (0.0, a[k], x[k]), loss="y!")

    looped = best_time(loop, repeats=2) * batch / loop_count

    def cubes(y, a, x):
        return y + a * jnp.sum(x ** 3)

    theirs = jax.jit(jax.vmap(jax.grad(cubes, argnums=(0, 1, 2))))
    jys, ja, jx = jnp.asarray(ys), jnp.asarray(a), jnp.asarray(x)
    in_jax = best_time(lambda: jax.block_until_ready(theirs(jys, ja, jx)))
    got, expected = mapped(ys, a, x), theirs(jys, ja, jx)
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, np.asarray(e), rtol=1e-12)
    return [("rlang.vmap(rlang.grad)", ours, 1.0),
            ("Python loop of rlang.gradient", looped, looped / ours),
            ("jax.jit(jax.vmap(jax.grad))", in_jax, in_jax / ours)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000)
    parser.add_argument("--batch", type=int, default=10_000)
    args = parser.parse_args()
    m = rlang.loads(SOURCE, backend="llvm")
    print(f"bridge overhead, median of {args.calls} calls")
    for name, seconds, extra in bridge_overheads(m, args.calls):
        more = "" if extra is None else f"   (+{extra * 1e6:.1f} µs over the direct path)"
        print(f"  {name:32s} {seconds * 1e6:8.2f} µs{more}")
    print(f"gradients of {args.batch} small inputs (ratio: time / rlang.vmap's)")
    for name, seconds, ratio in batched_gradients(m, args.batch):
        print(f"  {name:32s} {seconds * 1e3:8.3f} ms   {ratio:6.2f}")


if __name__ == "__main__":
    main()
