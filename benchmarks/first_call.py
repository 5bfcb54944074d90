"""The first gradient of a fresh process (issue #26 item 4): GradBench's GMM
(d = 10, K = 25, n = 1000), from `rlang.load` to the gradient's result, with an
empty disk cache and with a warm one, against JAX's first `jax.jit(jax.grad(f))`
call in a fresh process.

    taskset -c 0 python benchmarks/first_call.py [--repeat 3]

Each figure is the best of `--repeat` fresh Python processes; `import rlang` (and
`import jax`) are left out of the time, as the target counts load and call.  The
second and third calls of the cold runs are timed too; the cold runs are made
with the quick first tier off (the default) and on (`RLANG_QUICK_FIRST_CALL=1`:
there the second call waits for the optimised code, Note [A quick first call]).  The
cold runs each get a new empty cache directory (`RLANG_CACHE_DIR`); the warm runs
share one that a first run filled.  The module is loaded with invcheck off, as
GradBench's rlang tool loads it.
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

RLANG = """
import json, sys, time
import numpy as np
import rlang
rng = np.random.default_rng(0)
d, k, n = 10, 25, 1000
args = (0.0, rng.standard_normal(k), rng.random((k, d)), rng.standard_normal((k, d)),
        rng.standard_normal((k, d * (d - 1) // 2)), rng.standard_normal((n, d)), 1.0, 0)
start = time.perf_counter()
m = rlang.load(sys.argv[1], backend="llvm", invcheck=False)
loaded = time.perf_counter()
grad = rlang.grad(m["gmm_objective!"], "err!", argnums=(1, 2, 3, 4))
grad(*args)
done = time.perf_counter()
grad(*args)
second = time.perf_counter()
grad(*args)
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


def run(code: str, argument: str, cache: str | None = None, quick: bool = False) -> dict:
    env = dict(os.environ, RLANG_QUICK_FIRST_CALL="1" if quick else "0")
    if cache is not None:
        env["RLANG_CACHE_DIR"] = cache
    done = subprocess.run([sys.executable, "-c", code, argument], capture_output=True,
                          text=True, env=env, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        colds = [run(RLANG, str(GMM), str(Path(scratch) / f"cold{k}"))
                 for k in range(options.repeat)]
        quicks = [run(RLANG, str(GMM), str(Path(scratch) / f"quick{k}"), quick=True)
                  for k in range(options.repeat)]
        warm_cache = str(Path(scratch) / "warm")
        run(RLANG, str(GMM), warm_cache)
        warms = [run(RLANG, str(GMM), warm_cache) for _ in range(options.repeat)]
    cold = min(colds, key=lambda r: r["total"])
    quick = min(quicks, key=lambda r: r["total"])
    warm = min(warms, key=lambda r: r["total"])
    jax_first = min(run(JAX, str(ROOT / "benchmarks" / "gradbench"))["total"]
                    for _ in range(options.repeat))
    print("GMM d=10 K=25 n=1000: rlang.load + the first gradient, fresh processes, best of",
          options.repeat)
    print(f"  empty cache  {cold['total']:8.3f} s   (load {cold['load']:.3f} s; the rest is "
          "lowering, emission, O3 and the call); second call "
          f"{cold['second'] * 1e3:.1f} ms")
    print(f"    with RLANG_QUICK_FIRST_CALL=1 {quick['total']:.3f} s; its second call "
          f"{quick['second']:.3f} s (waits for the O3 code: Note [A quick first call]), "
          f"third {quick['third'] * 1e3:.1f} ms")
    print(f"  warm cache   {warm['total'] * 1e3:8.1f} ms  (load {warm['load'] * 1e3:.1f} ms)")
    print(f"  JAX's first jit(grad) call {jax_first:.3f} s")


if __name__ == "__main__":
    main()
