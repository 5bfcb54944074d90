"""`rlang.dask.gradients` on a warm LocalCluster (issue: threads and Dask), as ratios
against baselines measured in this run.

    python benchmarks/dask_sweep.py [--items N] [--steps S]

N gradients of the pendulum integrator of examples/sweep/pendulum.rev (S leapfrog
steps: about 1 ms a gradient with the default 12,500 on the machine this was written
on), llvm backend:

- a loop of `rlang.gradient` in this process (the sequential baseline);
- the same on a LocalCluster of 1 single-threaded worker process, and of 2, each
  warmed first (the program compiled on every worker);
- the per-item overhead of the cluster: (1-worker time − loop time) / N.

Needs two free cores for the 2-worker figure to mean anything.
"""
from __future__ import annotations

import argparse
import logging
import time
from pathlib import Path

import distributed
import numpy as np

import rlang

PROGRAM = Path(__file__).resolve().parents[1] / "examples" / "sweep" / "pendulum.rev"


def inputs(count: int, steps: int) -> list:
    rng = np.random.default_rng(0)
    return [(0.0, float(q), float(p), 10.0 / steps, steps)
            for q, p in zip(rng.uniform(-3, 3, count), rng.uniform(-2, 2, count))]


def on_cluster(m, items: list, workers: int) -> tuple:
    """(seconds, results) of the gradients on a warm cluster of `workers` workers."""
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR) \
            as cluster, distributed.Client(cluster) as client:
        rlang.dask.gradients(m.swing, items[:4 * workers], loss="angle!", client=client,
                             chunk_size=1)        # every worker compiles the program
        start = time.perf_counter()
        results = rlang.dask.gradients(m.swing, items, loss="angle!", client=client)
        return time.perf_counter() - start, results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--steps", type=int, default=12_500)
    args = parser.parse_args()
    m = rlang.load(str(PROGRAM), backend="llvm")
    items = inputs(args.items, args.steps)
    rlang.gradient(m.swing, items[0], loss="angle!")
    start = time.perf_counter()
    expected = [rlang.gradient(m.swing, a, loss="angle!") for a in items]
    looped = time.perf_counter() - start
    one, got_one = on_cluster(m, items, 1)
    two, got_two = on_cluster(m, items, 2)
    assert got_one == expected and got_two == expected      # the same bits
    n = args.items
    print(f"{n} gradients of {args.steps} leapfrog steps ({looped / n * 1e3:.3f} ms each)")
    print(f"  loop of rlang.gradient      {looped:8.3f} s")
    print(f"  LocalCluster, 1 worker      {one:8.3f} s")
    print(f"  LocalCluster, 2 workers     {two:8.3f} s   speed-up over 1 worker {one / two:5.2f}×")
    print(f"  cluster overhead per item   {(one - looped) / n * 1e6:8.1f} µs")


if __name__ == "__main__":
    main()
