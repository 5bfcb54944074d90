"""What the eval tests share: a tool's output on an input, and the output of
GradBench's `manual` tool (hand-written C++ derivatives) where it is built.

The manual tool is looked for in the GradBench checkout named by the environment
variable ``GRADBENCH`` (``$GRADBENCH/tools/manual/bin/<eval>``, built by ``make -C
tools/manual all`` there); without it the tests that compare with it are skipped.
CI has no GradBench checkout: those comparisons are run where one is
(docs/gradbench.md); the baselines' comparisons run everywhere.
"""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.gradbench import suite_path  # noqa: F401
from suite import tool_module  # noqa: E402
from suite.common import measure  # noqa: E402


def output(tool: str, eval_name: str, function: str, data):
    """`tool`'s JSON output for `function` of `eval_name` on `data` (one run)."""
    return measure(tool_module(tool, eval_name).prepare(function, data), 1, 0)[0]


def manual_binary(eval_name: str) -> str | None:
    """The path of the manual tool's program for `eval_name`, or None."""
    root = os.environ.get("GRADBENCH")
    if not root:
        return None
    path = os.path.join(root, "tools", "manual", "bin", eval_name)
    return path if os.access(path, os.X_OK) else None


def needs_manual(eval_name: str):
    """Skips a test where the manual tool for `eval_name` is not built."""
    return pytest.mark.skipif(manual_binary(eval_name) is None,
                              reason="GradBench's manual tool is not built "
                                     "(set GRADBENCH to a checkout where it is)")


def manual_output(eval_name: str, function: str, data, tmp_path):
    """The manual tool's output for `function` on `data` (written to `tmp_path`)."""
    path = tmp_path / f"{eval_name}-input.json"
    path.write_text(json.dumps(data))
    done = subprocess.run([manual_binary(eval_name), str(path), function],
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[0])


def assert_agrees_with_baselines(eval_name: str, data, functions, tolerance=1e-10,
                                 baselines=("jax", "pytorch")) -> None:
    """rlang's outputs for `functions` on `data` equal every baseline's."""
    from suite.compare import mismatches

    for function in functions:
        ours = output("rlang", eval_name, function, data)
        for baseline in baselines:
            found = mismatches(output(baseline, eval_name, function, data), ours, tolerance)
            assert not found, f"{function} against {baseline}: {found[:3]}"


def assert_agrees_with_manual(eval_name: str, data, functions, tmp_path,
                              tolerance=1e-10) -> None:
    """rlang's outputs for `functions` on `data` equal the manual tool's."""
    from suite.compare import mismatches

    for function in functions:
        manual = manual_output(eval_name, function, data, tmp_path)
        found = mismatches(manual, output("rlang", eval_name, function, data), tolerance)
        assert not found, f"{function} against manual: {found[:3]}"
