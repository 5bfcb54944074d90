"""What every tool module of the suite shares: a prepared evaluation, timing, JSON.

A tool module (``suite/<tool>_impl/<eval>.py``) has one entry point::

    def prepare(function: str, input: dict) -> Prepared

It does everything that is not the computation (reading the input into arrays,
loading and compiling code, one warm-up call) and returns a `Prepared` whose
``run()`` is the computation alone, the part GradBench times, and whose
``output(result)`` turns ``run()``'s result into the JSON value the eval expects.
A function the module does not have raises `UnknownFunction`.

Note [What a timing covers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
GradBench's ``evaluate`` timing is "the time the tool spent evaluating the
function itself, not JSON encoding/decoding".  Every tool here is held to the same
line: converting the input lists to arrays, compiling (rlang's llvm code,
``jax.jit``'s trace) and a warm-up call happen in ``prepare`` and are reported as a
separate ``prepare`` timing; ``run()`` starts from arrays and ends with arrays (or
floats); turning those into lists is ``output``'s, untimed.  What ``run()`` returns
must not alias memory a later ``run()`` overwrites unless ``output`` is called
first (the adapter calls it once, after the last run).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np


class UnknownFunction(KeyError):
    """The eval asked for a function this tool's module does not define."""

    def __init__(self, module: str, function: str):
        super().__init__(f"{module} has no function {function!r}")
        self.module = module
        self.function = function

    def __str__(self) -> str:
        return self.args[0]


def to_json(value: Any) -> Any:
    """Return `value` with NumPy arrays and scalars (nested in lists, tuples and
    dicts) turned into Python lists, floats and ints."""
    if isinstance(value, dict):
        return {key: to_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_json(item) for item in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if hasattr(value, "__array__") and not isinstance(value, (float, int)):
        return np.asarray(value).tolist()
    return value


@dataclass
class Prepared:
    """One evaluation, ready to run: `run()` is timed, `output(result)` is not."""

    run: Callable[[], Any]
    output: Callable[[Any], Any] = to_json


def measure(prepared: Prepared, min_runs: int, min_seconds: float) -> tuple[Any, list[int]]:
    """Run `prepared` at least `min_runs` times and until the runs add up to
    `min_seconds`; return the last run's JSON output and each run's nanoseconds."""
    runs = max(int(min_runs), 1)
    seconds = max(float(min_seconds), 0.0)
    if not math.isfinite(seconds):
        raise ValueError(f"min_seconds must be finite, not {min_seconds!r}")
    timings: list[int] = []
    total = 0
    result = None
    while len(timings) < runs or total < seconds * 1e9:
        start = time.perf_counter_ns()
        result = prepared.run()
        elapsed = time.perf_counter_ns() - start
        timings.append(elapsed)
        total += elapsed
    return prepared.output(result), timings


def floats(values: Any) -> np.ndarray:
    """A C-ordered float64 array of `values` (a JSON list, nested lists, or a number)."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.float64))


def ints(values: Any) -> np.ndarray:
    """A C-ordered int64 array of `values`."""
    return np.ascontiguousarray(np.asarray(values, dtype=np.int64))
