"""rlang, JAX and PyTorch side by side on GradBench's evals, in one process.

    taskset -c 0 python benchmarks/gradbench/run.py [--size small|default]
        [--evals gmm,ba,...] [--tools rlang,jax,pytorch] [--min-runs N]
        [--min-seconds S] [--seed K]

For every eval and function: one input from the eval's generator
(``suite/inputs/<eval>.py``, the size named by ``--size``), each tool prepared
(``prepare``: conversion, compilation, a warm-up call) and run at least
``--min-runs`` times and for ``--min-seconds`` (the adapter's loop), the median
kept.  Every tool's output is compared with rlang's by GradBench's measure
(``suite/compare.py``); the table prints the medians, the ratios rlang/JAX and
rlang/PyTorch (below 1: rlang is faster) and the largest difference found.  A
tool that fails on an input is shown as ``failed`` with its error below the table;
the script exits 1 if any output disagrees by more than ``--tolerance``.

Run it on one pinned core (``taskset -c 0``): JAX and PyTorch are set to one
thread by ``suite/jax_impl/_setup.py`` and ``suite/torch_impl/_setup.py``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from suite import EVALS, TOOLS, inputs_module, tool_module  # noqa: E402
from suite.common import measure  # noqa: E402
from suite.compare import difference, mismatches  # noqa: E402


def _numbers(value):
    """Every number in a JSON value, in order."""
    if isinstance(value, dict):
        for key in sorted(value):
            yield from _numbers(value[key])
    elif isinstance(value, list):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


def largest_difference(expected, actual) -> float:
    """The largest GradBench difference between two outputs of the same shape."""
    if mismatches(expected, actual, float("inf")):
        return float("inf")  # the shapes differ
    return max((difference(x, y) for x, y in zip(_numbers(expected), _numbers(actual))),
               default=0.0)


def time_tool(tool: str, eval_name: str, function: str, data, min_runs: int,
              min_seconds: float) -> dict:
    """One tool's result on one input: median seconds, output, or the error."""
    module = tool_module(tool, eval_name)
    if module is None:
        return {"error": "not implemented"}
    try:
        start = time.perf_counter()
        prepared = module.prepare(function, data)
        prepare_s = time.perf_counter() - start
        output, runs = measure(prepared, min_runs, min_seconds)
    except Exception as error:  # a baseline failing is a row, not the end of the run
        return {"error": f"{type(error).__name__}: {error}"}
    return {"median": statistics.median(runs) / 1e9, "runs": len(runs),
            "prepare": prepare_s, "output": output}


def _time(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} µs"


def _ratio(ours: dict, theirs: dict) -> str:
    if "median" not in ours or "median" not in theirs:
        return "—"
    return f"{ours['median'] / theirs['median']:.2f}"


def describe(eval_name: str, size: dict) -> str:
    return " ".join(f"{key}={value}" for key, value in size.items()) or "—"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", default="default")
    parser.add_argument("--evals", default=",".join(EVALS))
    parser.add_argument("--tools", default=",".join(TOOLS))
    parser.add_argument("--min-runs", type=int, default=3)
    parser.add_argument("--min-seconds", type=float, default=0.5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tolerance", type=float, default=1e-8)
    args = parser.parse_args(argv)
    tools = [tool for tool in args.tools.split(",") if tool]
    unknown = [name for name in args.evals.split(",") if name not in EVALS]
    unknown += [tool for tool in tools if tool not in TOOLS]
    if unknown:
        parser.error(f"unknown evals or tools: {unknown} (evals: {', '.join(EVALS)}; "
                     f"tools: {', '.join(TOOLS)})")
    others = [tool for tool in tools if tool != "rlang"]
    header = ["eval", "function", "size"] + tools + [f"rlang/{tool}" for tool in others]
    header.append("max difference")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    errors: list[str] = []
    disagreements = 0
    for eval_name in args.evals.split(","):
        generator = inputs_module(eval_name)
        size = generator.SIZES[args.size]
        data = generator.generate(seed=args.seed, **size)
        for function in EVALS[eval_name]:
            results = {tool: time_tool(tool, eval_name, function, data, args.min_runs,
                                       args.min_seconds) for tool in tools}
            ours = results.get("rlang", {})
            worst = 0.0
            for tool, result in results.items():
                if "error" in result:
                    errors.append(f"{eval_name}.{function} {tool}: {result['error']}")
                elif tool != "rlang" and "output" in ours:
                    worst = max(worst, largest_difference(result["output"], ours["output"]))
            disagreements += worst > args.tolerance
            row = [eval_name, function, describe(eval_name, size)]
            row += ["failed" if "error" in results[tool] else _time(results[tool]["median"])
                    for tool in tools]
            row += [_ratio(ours, results[tool]) for tool in others]
            row.append(f"{worst:.1e}")
            print("| " + " | ".join(row) + " |", flush=True)
    for line in errors:
        print(line)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
