"""`rlang.vmap` on threads (Note [Batches on threads], rlang/backends/llvm/batch.py):
the same batch on 1 thread and on more, as ratios measured in this run.

    python benchmarks/threads.py [--batch B] [--threads 1,2]

A compute-bound function (`y! += a·Σ sin(x[i]·j)/(1+j)`, 4 elements, 40 terms
each), its calls and its gradients over B items; results checked bit-identical.
Needs as many free cores as the largest thread count for the ratios to mean anything.
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
    parser.add_argument("--threads", default="1,2")
    args = parser.parse_args()
    counts = [int(t) for t in args.threads.split(",")]
    m = rlang.loads(SOURCE, backend="llvm")
    rng = np.random.default_rng(0)
    ys, a, x = np.zeros(args.batch), rng.normal(size=args.batch), rng.normal(size=(args.batch, 4))
    calls, grads = rlang.vmap(m.wave), rlang.vmap(rlang.grad(m.wave, "y!"))
    rows, first = [], None
    for count in counts:
        rlang.set_num_threads(count)
        results = (calls(ys, a, x), grads(ys, a, x))
        flat = [r for group in results for r in group]
        if first is None:
            first = flat
        assert all(np.array_equal(p, q) for p, q in zip(first, flat))    # the same bits
        rows.append((count, best(lambda: calls(ys, a, x)), best(lambda: grads(ys, a, x))))
    print(f"rlang.vmap over {args.batch} items (ratio: 1 thread's time / this one's)")
    for count, call, grad in rows:
        print(f"  {count} thread{'s' if count > 1 else ' '}   calls {call * 1e3:8.2f} ms "
              f"{rows[0][1] / call:5.2f}×   gradients {grad * 1e3:8.2f} ms "
              f"{rows[0][2] / grad:5.2f}×")


if __name__ == "__main__":
    main()
