"""A parameter sweep on a Dask cluster: the gradient of a pendulum integrator's
final angle with respect to its initial angle and momentum, over a grid of initial
conditions (examples/sweep/pendulum.rev, docs/clusters.md).

    python examples/sweep.py [--side 316] [--steps 1000] [--workers N] [--plot FILE]

The grid has side² points (10^5 by default).  A LocalCluster of single-threaded
worker processes (one per CPU unless --workers says otherwise) runs the gradients
in chunks (`rlang.dask.gradients`) while Dask's progress bar shows how far they
are; the script prints where the end state is most sensitive and, when matplotlib
is installed, draws |∂q_T/∂p_0| over the phase plane: the separatrix stands out.
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np

import rlang

PROGRAM = Path(__file__).with_name("sweep") / "pendulum.rev"


def sweep(side: int, steps: int, client, progress: bool = True):
    """(q0 grid, p0 grid, ∂q_T/∂q0, ∂q_T/∂p0), each side × side."""
    m = rlang.load(str(PROGRAM), backend="llvm")
    q0, p0 = np.meshgrid(np.linspace(-np.pi, np.pi, side), np.linspace(-2.5, 2.5, side))
    dt = 10.0 / steps
    inputs = [(0.0, float(q), float(p), dt, steps) for q, p in zip(q0.ravel(), p0.ravel())]
    gradients = rlang.dask.gradients(m.swing, inputs, loss="angle!", client=client,
                                     progress=progress)
    failed = [g for g in gradients if isinstance(g, rlang.RlangError)]
    if failed:
        raise failed[0]
    dq = np.array([g[1] for g in gradients]).reshape(q0.shape)
    dp = np.array([g[2] for g in gradients]).reshape(q0.shape)
    return q0, p0, dq, dp


def plot(q0, p0, dp, path: str) -> bool:
    """Draw log10 |∂q_T/∂p0| into `path`; False when matplotlib is not installed."""
    try:
        import matplotlib
    except ModuleNotFoundError:
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 5))
    image = axes.pcolormesh(q0, p0, np.log10(np.abs(dp) + 1e-12), shading="auto")
    axes.set_xlabel("initial angle q₀")
    axes.set_ylabel("initial momentum p₀")
    axes.set_title("log₁₀ |∂q_T / ∂p₀| (rev gradients on Dask)")
    figure.colorbar(image)
    figure.savefig(path, dpi=120, bbox_inches="tight")
    return True


def main() -> None:
    import logging

    import distributed

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=316)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0))
                        if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)
    parser.add_argument("--plot", default="sweep.png")
    args = parser.parse_args()
    with distributed.LocalCluster(n_workers=args.workers, threads_per_worker=1,
                                  dashboard_address=":0", silence_logs=logging.ERROR) \
            as cluster, distributed.Client(cluster) as client:
        start = time.perf_counter()
        q0, p0, dq, dp = sweep(args.side, args.steps, client)
        seconds = time.perf_counter() - start
    count = args.side ** 2
    print(f"\n{count} gradients of {args.steps} leapfrog steps on {args.workers} workers "
          f"in {seconds:.2f} s ({seconds / count * 1e6:.0f} µs each)")
    worst = np.unravel_index(np.argmax(np.abs(dp)), dp.shape)
    print(f"most sensitive start: q0 = {q0[worst]:.3f}, p0 = {p0[worst]:.3f}, "
          f"∂q_T/∂p0 = {dp[worst]:.3g} (energy {0.5 * p0[worst] ** 2 - np.cos(q0[worst]):.3f}; "
          f"the separatrix is at 1)")
    if plot(q0, p0, dp, args.plot):
        print(f"plot: {args.plot}")
    else:
        print("matplotlib is not installed: no plot (pip install matplotlib)")


if __name__ == "__main__":
    main()
