"""Loading the suite's rev programs (``benchmarks/gradbench/evals/<eval>.rev``)."""

from __future__ import annotations

import functools
import os

import rlang

EVALS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "evals")


@functools.cache
def program(eval_name: str, invcheck: bool = False, backend: str = "llvm") -> rlang.Module:
    """The compiled module of ``evals/<eval_name>.rev``, loaded once per process.

    The tool runs with the reversibility checks off (`invcheck=False`), as the
    baselines check nothing either; the tests also load with them on."""
    return rlang.load(os.path.join(EVALS_DIR, f"{eval_name}.rev"),
                      backend=backend, invcheck=invcheck)
