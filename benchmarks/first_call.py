"""The first call of a fresh process (issue #26 item 4): GradBench's GMM (d = 10,
K = 25, n = 1000), from `rlang.load` to the first result, with an empty disk cache
and with a warm one, against JAX's first `jax.jit(jax.grad(f))` call in a fresh
process.

    taskset -c 0 python benchmarks/first_call.py [--repeat 3] [--long 1000000]

Each figure is the best of `--repeat` fresh Python processes; `import rlang` (and
`import jax`) are left out of the time, as the target counts load and call.  Two
first calls are timed: the gradient (`rlang.grad`), whose pass has sums O3 may
reassociate and so is compiled at O3 first (also timed with
`RLANG_QUICK_FIRST_CALL=any`, which gives it the quick tier), and the objective
alone (a plain call),
whose module takes the quick first tier (Note [A quick first call],
backends/llvm/tiers.py); each with the default and with `RLANG_QUICK_FIRST_CALL=0`
(O3 first), with its second and third calls (the second waits for the O3 code
where the first ran the quick code).  The objective is also run on `--long` points,
a first call long enough to leave the quick code for the optimised one (Note
[Leaving the quick code]).  The cold runs each get a new empty cache directory
(`RLANG_CACHE_DIR`); the warm runs share one that a first run filled.  The module
is loaded with invcheck off, as GradBench's rlang tool loads it.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GMM = ROOT / "benchmarks" / "gradbench" / "evals" / "gmm.rev"

#: argv: gmm.rev, n, "gradient" or "objective"
RLANG = """
import json, sys, time
import numpy as np
import rlang
rng = np.random.default_rng(0)
d, k, n = 10, 25, int(sys.argv[2])
args = (0.0, rng.standard_normal(k), rng.random((k, d)), rng.standard_normal((k, d)),
        rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), 1.0, 0)
start = time.perf_counter()
m = rlang.load(sys.argv[1], backend="llvm", invcheck=False)
loaded = time.perf_counter()
call = m["gmm_objective!"]
if sys.argv[3] == "gradient":
    call = rlang.grad(call, "err!", argnums=(1, 2, 3, 4))
call(*args)
done = time.perf_counter()
call(*args)
second = time.perf_counter()
call(*args)
third = time.perf_counter()
print(json.dumps({"load": loaded - start, "total": done - start, "second": second - done,
                  "third": third - second}))
"""

JAX = """
import json, os, time
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false "
                                   "intra_op_parallelism_threads=1")
import numpy as np
import jax
jax.config.update("jax_enable_x64", True)
jax.config.update("jax_cpu_enable_async_dispatch", False)
import sys
sys.path.insert(0, sys.argv[1])
from suite.jax_impl.gmm import log_posterior
rng = np.random.default_rng(0)
d, k, n = 10, 25, 1000
args = (rng.standard_normal(k), rng.random((k, d)), rng.standard_normal((k, d)),
        rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), 1.0, 0.0)
start = time.perf_counter()
grad = jax.jit(jax.grad(log_posterior, argnums=(0, 1, 2, 3)))
jax.block_until_ready(grad(*args))
print(json.dumps({"total": time.perf_counter() - start}))
"""


def run(code: str, *argv, cache: str | None = None, quick: str = "1") -> dict:
    env = dict(os.environ, RLANG_QUICK_FIRST_CALL=quick)
    if cache is not None:
        env["RLANG_CACHE_DIR"] = cache
    done = subprocess.run([sys.executable, "-c", code, *map(str, argv)],
                          capture_output=True, text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--long", type=int, default=1_000_000,
                        help="points of the objective's long first call (0: not run)")
    options = parser.parse_args()
    cases = [("gradient", 1000), ("objective", 1000)] + \
        ([("objective", options.long)] if options.long else [])
    best = {}
    with tempfile.TemporaryDirectory() as scratch:
        for what, n in cases:
            for quick in ("1", "0") + (("any",) if what == "gradient" else ()):
                runs = [run(RLANG, GMM, n, what, quick=quick,
                            cache=str(Path(scratch) / f"{what}{n}{quick}-{k}"))
                        for k in range(options.repeat)]
                best[what, n, quick] = min(runs, key=lambda r: r["total"])
        warm_cache = str(Path(scratch) / "warm")
        run(RLANG, GMM, 1000, "gradient", cache=warm_cache)
        warm = min((run(RLANG, GMM, 1000, "gradient", cache=warm_cache)
                    for _ in range(options.repeat)), key=lambda r: r["total"])
    jax_first = min(run(JAX, ROOT / "benchmarks" / "gradbench")["total"]
                    for _ in range(options.repeat))
    print("GMM d=10 K=25: rlang.load + the first call, fresh processes, best of",
          options.repeat)
    for what, n in cases:
        default, o3 = best[what, n, "1"], best[what, n, "0"]
        print(f"  {what:9} n={n:<8} empty cache {default['total']:7.3f} s (load "
              f"{default['load']:.3f} s; second call {default['second'] * 1e3:.1f} ms, third "
              f"{default['third'] * 1e3:.1f} ms); RLANG_QUICK_FIRST_CALL=0 "
              f"{o3['total']:.3f} s (second {o3['second'] * 1e3:.1f} ms)")
        if (what, n, "any") in best:
            fast = best[what, n, "any"]
            print(f"  {'':9} {'':10} RLANG_QUICK_FIRST_CALL=any {fast['total']:.3f} s "
                  f"(second call {fast['second'] * 1e3:.1f} ms: waits for the O3 code)")
    print(f"  gradient  n=1000     warm cache  {warm['total'] * 1e3:7.1f} ms (load "
          f"{warm['load'] * 1e3:.1f} ms)")
    print(f"  JAX's first jit(grad) call {jax_first:.3f} s")


if __name__ == "__main__":
    main()
