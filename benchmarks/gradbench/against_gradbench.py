"""Run GradBench's own evals against a tool of this suite (outside CI).

    python benchmarks/gradbench/against_gradbench.py --gradbench DIR \
        [--eval-python PY] [--tool rlang|jax|pytorch] EVAL [-- EVAL-ARGS...]

DIR is a checkout of the public GradBench repository (``gradbench/gradbench``) whose
``manual`` C++ tool builds (``cpp/json.hpp`` present); PY is a Python with its
``python/gradbench`` package, NumPy, SciPy and pydantic installed.  The eval runs
as ``PY -m gradbench.evals.EVAL.run EVAL-ARGS`` in DIR, so it validates against the
manual tool exactly as GradBench does.  This script is the intermediary: it passes
every message from the eval to the tool and every response back, and prints one
line per evaluation (function, description, validity, the median of the tool's
``evaluate`` timings) and, with ``--log FILE``, writes every message and response
as JSON lines.  With ``--manual`` it then times the manual tool's binary on the
same inputs (``tools/manual/bin/EVAL FILE FUNCTION``, one process per input, as
GradBench's ``cpp`` tools run) and prints its median next to the tool's.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def _median_ns(response: dict) -> float | None:
    times = [t["nanoseconds"] for t in response.get("timings") or []
             if t.get("name") == "evaluate"]
    return statistics.median(times) if times else None


def _manual_median(gradbench: str, eval_name: str, function: str, data: dict) -> float | None:
    binary = os.path.join(gradbench, "tools", "manual", "bin", eval_name)
    if not os.path.exists(binary):
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json") as tmp:
        json.dump(data, tmp)
        tmp.flush()
        done = subprocess.run([binary, tmp.name, function], capture_output=True, text=True)
    if done.returncode != 0:
        return None
    lines = done.stdout.splitlines()
    times = [t["nanoseconds"] for line in lines[1:] for t in [json.loads(line)]
             if t.get("name") == "evaluate"]
    return statistics.median(times) if times else None


def run(gradbench: str, eval_python: str, tool: str, eval_name: str,
        eval_args: list[str], log=None, manual: bool = False) -> list[dict]:
    """Connect the eval and the tool; return one record per evaluation."""
    eval_proc = subprocess.Popen(
        [eval_python, "-m", f"gradbench.evals.{eval_name}.run", *eval_args],
        cwd=gradbench, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": os.path.join(gradbench, "python", "gradbench")})
    tool_proc = subprocess.Popen(
        [sys.executable, os.path.join(HERE, "tool.py"), "--tool", tool],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    pending: dict[int, dict] = {}
    records: list[dict] = []
    try:
        for line in eval_proc.stdout:
            message = json.loads(line)
            if log:
                log.write(json.dumps({"message": message}) + "\n")
            tool_proc.stdin.write(line if line.endswith("\n") else line + "\n")
            tool_proc.stdin.flush()
            if message.get("kind") == "end":
                break
            answer = tool_proc.stdout.readline()
            if not answer:
                raise RuntimeError(f"the tool closed its output at message {message}")
            response = json.loads(answer)
            if log:
                log.write(json.dumps({"response": response}) + "\n")
            kind = message.get("kind")
            if kind == "define" and not response.get("success"):
                print(f"define {message.get('module')}: {response.get('error')}")
            if kind == "evaluate":
                record = {"function": message["function"],
                          "description": message.get("description", ""),
                          "success": response.get("success"),
                          "error": response.get("error"),
                          "median_ns": _median_ns(response),
                          "input": message["input"]}
                pending[message["id"]] = record
                records.append(record)
                if not response.get("success"):
                    record["valid"] = False
            if kind == "analysis" and message.get("of") in pending:
                record = pending[message["of"]]
                record["valid"] = message.get("valid")
                record["analysis_error"] = message.get("error")
            eval_proc.stdin.write(answer)
            eval_proc.stdin.flush()
    finally:
        for proc in (tool_proc, eval_proc):
            try:
                proc.stdin.close()
            except BrokenPipeError:
                pass
        tool_proc.wait(timeout=60)
        eval_proc.wait(timeout=60)
    if manual:
        for record in records:
            record["manual_ns"] = _manual_median(gradbench, eval_name, record["function"],
                                                 record["input"])
    return records


def _ms(ns: float | None) -> str:
    return "—" if ns is None else f"{ns / 1e6:.4g} ms"


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    eval_args: list[str] = []
    if "--" in argv:
        split = argv.index("--")
        argv, eval_args = argv[:split], argv[split + 1:]
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gradbench", required=True)
    parser.add_argument("--eval-python", default=sys.executable)
    parser.add_argument("--tool", default="rlang")
    parser.add_argument("--log")
    parser.add_argument("--manual", action="store_true")
    parser.add_argument("eval")
    args = parser.parse_args(argv)
    log = open(args.log, "w") if args.log else None
    try:
        records = run(os.path.abspath(args.gradbench), args.eval_python, args.tool,
                      args.eval, eval_args, log, args.manual)
    finally:
        if log:
            log.close()
    invalid = 0
    for record in records:
        valid = record.get("valid")
        invalid += valid is not True
        line = (f"{args.eval} {record['function']:<10} {record['description']:<16} "
                f"{'valid' if valid else 'INVALID'}  {args.tool} {_ms(record['median_ns'])}")
        if args.manual:
            line += f"  manual {_ms(record.get('manual_ns'))}"
            if record.get("manual_ns") and record["median_ns"]:
                line += f"  ratio {record['median_ns'] / record['manual_ns']:.2f}"
        print(line)
        if not valid:
            print("   ", (record.get("error") or record.get("analysis_error") or "")[:2000])
    print(f"{len(records)} evaluations, {invalid} not valid")
    return 1 if invalid or not records else 0


if __name__ == "__main__":
    sys.exit(main())
