"""Gradient cost of the interpreter: time ratio gradient / forward, and peak memory.

    python benchmarks/interp_gradient.py            # ratios, and memory at 10^3 / 10^5 steps
    python benchmarks/interp_gradient.py --steps 1000000   # the issue's 10^6 (about a minute)

Each workload runs its forward function and `rlang.gradient` on the same inputs in
the same process; the figures printed are ratios against that forward time, and the
peak resident memory (ru_maxrss) of a child process that runs one gradient of a loop
of N steps, for two N: memory must not grow with N (no tape).
"""
from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rlang  # noqa: E402

WORKLOADS = '''
function sumsq(s, x: f64[:])
    for i = 0:length(x) - 1
        s += x[i] * x[i]
    end
end

function recurrence(x, y, n)
    for i = 1:n
        y += sin(x) * 0.5
        x += y * 0.01
    end
end

function affine(y: f64[:], w: f64[:,:], b: f64[:], x: f64[:])
    for i = 0:size(w, 0) - 1
        for j = 0:size(w, 1) - 1
            y[i] += w[i, j] * x[j]
        end
        y[i] += b[i]
    end
end
'''


def best_time(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def ratios() -> None:
    m = rlang.loads(WORKLOADS)
    rng = np.random.default_rng(0)
    x = rng.random(20_000)
    w, b, v = rng.random((60, 60)), rng.random(60), rng.random(60)
    cases = [
        ("sum of squares, 2e4", m.sumsq, (0.0, x), "s"),
        ("scalar recurrence, 1e4 steps", m.recurrence, (0.3, 0.0, 10_000), "y"),
        ("affine 60x60", m.affine, (np.zeros(60), w, b, v), ("y", 0)),
    ]
    print(f"{'workload':32s} {'forward s':>10s} {'gradient s':>11s} {'ratio':>6s}")
    for name, fn, args, loss in cases:
        forward = best_time(lambda: (~fn)(*fn(*args)))  / 2     # one forward pass
        grad = best_time(lambda: rlang.gradient(fn, args, loss))
        print(f"{name:32s} {forward:10.4f} {grad:11.4f} {grad / forward:6.2f}")


CHILD = '''
import resource, sys
sys.path.insert(0, {root!r})
import rlang
m = rlang.loads({src!r})
rlang.gradient(m.recurrence, (0.3, 0.0, {steps}), loss="y")
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
'''


def memory(steps_list) -> None:
    print(f"{'steps':>10s} {'peak RSS (MiB)':>15s}")
    for steps in steps_list:
        code = CHILD.format(root=str(ROOT), src=WORKLOADS, steps=steps)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True).stdout
        print(f"{steps:10d} {int(out.strip()) / 1024:15.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000,
                        help="the long loop of the memory check (default 1e5)")
    options = parser.parse_args()
    ratios()
    memory([1_000, options.steps])


if __name__ == "__main__":
    main()
