"""Threads on the llvm backend, as ratios measured in this run (1 thread's time over
that of each thread count):

- `rlang.vmap` (Note [Batches on threads], rlang/backends/llvm/batch.py): a
  compute-bound function (`y! += a·Σ sin(x[i]·j)/(1+j)`, 4 elements, 40 terms
  each), its calls and its gradients over B items;
- `@parallel for` (Note [Parallel loops on threads], rlang/ir/blocks.py): a
  compute-bound kernel (each of N passes a 40-term sum over sines into its own
  element, with shared parameters w and c whose gradients every pass adds to) and
  the gradient of a loss over its output.

    python benchmarks/threads.py [--batch B] [--passes N] [--threads 1,2]

Results are checked bit-identical between thread counts.  Needs as many free cores
as the largest thread count for the ratios to mean anything.
"""
from __future__ import annotations

import argparse
import time

import numpy as np

import rlang

SOURCE = """
function wave(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        for j = 0:39
            y! += a * sin(x[i] * j) / (1.0 + j)
        end
    end
end

function kernel(y: f64[:], x: f64[:], w: f64[:], c)
    @parallel for i = 0:length(x) - 1
        for j = 0:39
            y[i] += w[j % 4] * sin(x[i] * j + c) / (1.0 + j)
        end
    end
end

function energy(s, y: f64[:])
    for i = 0:length(y) - 1
        s += y[i] * y[i]
    end
end

function loss(s, x: f64[:], w: f64[:], c)
    y ← zeros(f64, length(x))
    kernel(y, x, w, c)
    energy(s, y)
    ~kernel(y, x, w, c)
    y → zeros(f64, length(x))
end
"""


def best(call, repeats: int = 5) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=20_000)
    parser.add_argument("--passes", type=int, default=50_000)
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    m = rlang.loads(SOURCE, backend="llvm")
    batches(m, args.batch, counts)
    parallel_for(m, args.passes, counts)


def compared(counts, run, timed) -> list:
    """(count, times…) per thread count; `run()`'s results the same bits for each."""
    rows, first = [], None
    for count in counts:
        rlang.set_num_threads(count)
        flat = [np.asarray(r) for r in run()]
        if first is None:
            first = flat
        assert all(np.array_equal(p, q) for p, q in zip(first, flat))    # the same bits
        rows.append((count, *[best(call) for call in timed]))
    return rows


def show(rows, names) -> None:
    for count, *times in rows:
        cells = [f"{name} {t * 1e3:8.2f} ms {rows[0][k + 1] / t:5.2f}×"
                 for k, (name, t) in enumerate(zip(names, times))]
        print(f"  {count} thread{'s' if count > 1 else ' '}   " + "   ".join(cells))


def parallel_for(m, n: int, counts) -> None:
    rng = np.random.default_rng(1)
    x, w, c = rng.normal(size=n), rng.uniform(0.5, 1.5, 4), 0.3
    gradient = rlang.grad(m.loss, "s")

    def call():
        return m.kernel(np.zeros(n), x, w, c)

    rows = compared(counts, lambda: [*call(), *gradient(0.0, x, w, c)],
                    [call, lambda: gradient(0.0, x, w, c)])
    print(f"@parallel for over {n} passes (ratio: 1 thread's time / this one's)")
    show(rows, ["kernel", "gradient"])


def batches(m, batch: int, counts) -> None:
    rng = np.random.default_rng(0)
    ys, a, x = np.zeros(batch), rng.normal(size=batch), rng.normal(size=(batch, 4))
    calls, grads = rlang.vmap(m.wave), rlang.vmap(rlang.grad(m.wave, "y!"))
    rows = compared(counts, lambda: [*calls(ys, a, x), *grads(ys, a, x)],
                    [lambda: calls(ys, a, x), lambda: grads(ys, a, x)])
    print(f"rlang.vmap over {batch} items (ratio: 1 thread's time / this one's)")
    show(rows, ["calls", "gradients"])


if __name__ == "__main__":
    main()
