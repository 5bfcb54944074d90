"""GMM's gradient at ADBench's sizes, rlang against JAX on one core (issue #26's
target: at most JAX's time at every d = 2…64, K = 5…200 with n = 1000).

    taskset -c 0 python benchmarks/gradbench/gmm_sizes.py [--d 2 10 20 32 64]
        [--k 5 10 25 50 100 200] [--n 1000] [--min-runs 5] [--min-seconds 0.3]

Each size's input comes from GradBench's generator (``suite/inputs/gmm.py``);
both tools are prepared by the side-by-side suite's adapters (``suite/rlang_impl``,
``suite/jax_impl``: JAX on one thread, asynchronous dispatch off, ``jax.jit`` of
``jax.grad``) and timed by its loop (at least ``--min-runs`` runs and
``--min-seconds``), medians.  The outputs are compared by GradBench's measure
before the row is printed; the script exits 1 if they differ by more than 1e-6.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from run import largest_difference  # noqa: E402
from suite import inputs_module, tool_module  # noqa: E402
from suite.common import measure  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--d", type=int, nargs="+", default=[2, 10, 20, 32, 64])
    parser.add_argument("--k", type=int, nargs="+", default=[5, 10, 25, 50, 100, 200])
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--min-runs", type=int, default=5)
    parser.add_argument("--min-seconds", type=float, default=0.3)
    options = parser.parse_args()
    generate = inputs_module("gmm").generate
    tools = {tool: tool_module(tool, "gmm") for tool in ("rlang", "jax")}
    print(f"GMM gradient, n = {options.n}, one core: medians")
    print(f"{'d':>3} {'K':>4} {'rlang':>10} {'JAX':>10} {'rlang/JAX':>10} {'difference':>11}")
    worst = 0.0
    for d in options.d:
        for k in options.k:
            data = generate(d=d, k=k, n=options.n)
            medians, outputs = {}, {}
            for tool, module in tools.items():
                prepared = module.prepare("jacobian", data)
                outputs[tool], runs = measure(prepared, options.min_runs, options.min_seconds)
                medians[tool] = statistics.median(runs) / 1e9
            difference = largest_difference(outputs["jax"], outputs["rlang"])
            worst = max(worst, difference)
            print(f"{d:3} {k:4} {medians['rlang'] * 1e3:8.3f}ms {medians['jax'] * 1e3:8.3f}ms "
                  f"{medians['rlang'] / medians['jax']:10.2f} {difference:11.1e}", flush=True)
    return 1 if worst > 1e-6 else 0


if __name__ == "__main__":
    raise SystemExit(main())
