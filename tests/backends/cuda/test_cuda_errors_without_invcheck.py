"""The cuda backend raises the interpreter's runtime errors with invcheck off too
(Note [Checks invcheck does not turn off], rlang/lower/statements.py; the llvm side:
tests/backends/llvm/test_llvm_errors_without_invcheck.py)."""
from __future__ import annotations

import pytest

from runtime_error_cases import CASES, KERNEL_CASES, runtime_errors


@pytest.mark.parametrize("name, args", [CASES[0], CASES[3], CASES[6], CASES[10]] + KERNEL_CASES,
                         ids=["load", "annotated", "divide", "ulog_subtract", "in_kernel"])
def test_cuda_raises_the_interpreters_runtime_errors(name, args):
    expected, got = runtime_errors("cuda", False, name, args)
    assert type(got) is type(expected) and got.message == expected.message
    assert got.span == expected.span
