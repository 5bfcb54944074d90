"""Benchmark: round-off and run time of the reversible leapfrog (examples/leapfrog.rev).

Prints ratios against baselines measured in the same run (benchmarks/README.md):

- error ratios: each style's forward error against a 50-digit reference, over the
  error of the regular (irreversible) leapfrog; and the round-trip drift of the
  input style (listing 26) over that of the ancilla style (listing 25);
- time ratios: the interpreter's time for N leapfrog steps over the time of the
  same operations in plain Python floats (`mirror_leapfrog`).

    python benchmarks/leapfrog_drift.py [N …]        (default: 20 100 300; ~15 s)

The full sweep and the figure are scripts/leapfrog_reference.py's job.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for entry in (REPO, REPO / "scripts"):
    if str(entry) not in sys.path:
        sys.path.insert(0, str(entry))

from leapfrog_reference import (  # noqa: E402
    ANCILLA, DT, INPUT, axis_error, decimal_trajectory, initial_state, load_program,
    mirror_leapfrog, phase_distance, regular_leapfrog, rev_leapfrog)


def _timed(function, *args, **kwargs):
    started = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - started


def main(argv=None) -> int:
    ns = [int(a) for a in (argv if argv is not None else sys.argv[1:])] or [20, 100, 300]
    program = load_program()
    m, x0, v0 = initial_state(program)
    reference = decimal_trajectory(x0, v0, m, DT, ns)
    print(f"{'N':>5} | {'fwd anc/reg':>11} | {'fwd inp/reg':>11} | "
          f"{'trip inp/anc':>12} | {'interp/python':>13} | {'interp steps/s':>14}")
    for n in ns:
        x_ref = reference[n][0]
        regular = axis_error(regular_leapfrog(x0, v0, m, DT, n)[0], x_ref)
        forward, trip, seconds, python_seconds = {}, {}, 0.0, 0.0
        for style in (ANCILLA, INPUT):
            x, v = x0.copy(), v0.copy()
            _, spent = _timed(rev_leapfrog, program, x, v, m, DT, n, style)
            seconds += spent
            forward[style] = axis_error(x, x_ref)
            _, spent = _timed(rev_leapfrog, program, x, v, m, DT, n, style, inverse=True)
            seconds += spent
            trip[style] = phase_distance(x, v, x0, v0)
            xm, vm = x0.copy(), v0.copy()
            _, spent = _timed(mirror_leapfrog, xm, vm, m, DT, n, style)
            python_seconds += spent
            _, spent = _timed(mirror_leapfrog, xm, vm, m, DT, n, style, inverse=True)
            python_seconds += spent
        ratio = trip[INPUT] / trip[ANCILLA] if trip[ANCILLA] else float("inf")
        print(f"{n:>5} | {forward[ANCILLA] / regular:>11.2f} | {forward[INPUT] / regular:>11.2f} | "
              f"{ratio:>12.1f} | {seconds / python_seconds:>13.0f} | {4 * n / seconds:>14.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
