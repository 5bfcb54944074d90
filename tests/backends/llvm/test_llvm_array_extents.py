"""Array extents in deallocation checks and allocations: llvm ends every case of
tests/array_extents.py as the interpreter does (the same error class, message, span
and call chain, or the same results)."""
from __future__ import annotations

import pytest

import rlang

from array_extents import CASES, COMPILED_MESSAGES, PROGRAM
from gradient_agreement import assert_same_error


@pytest.mark.parametrize("name, args, message", CASES, ids=[
    f"{c[0]}-{'-'.join(map(str, c[1]))}" for c in CASES])
def test_extents_end_as_on_the_interpreter(name, args, message):
    outcomes = []
    for backend in ("interp", "llvm"):
        module = rlang.loads(PROGRAM, backend=backend)
        try:
            outcomes.append(module[name](*args))
        except rlang.RlangError as error:
            outcomes.append(error)
    expected, got = outcomes
    if message is None:
        assert got == expected
        return
    assert isinstance(expected, rlang.RlangError) and expected.message.startswith(message)
    if name in COMPILED_MESSAGES:
        assert (type(got), got.message, got.span) == (
            type(expected), COMPILED_MESSAGES[name], expected.span)
    else:
        assert_same_error(got, expected)

