"""What an input is and when it is finished (rlang/repl/reader.py)."""
from __future__ import annotations

import pytest

from rlang.frontend import ast
from rlang.errors import ParseError
from rlang.repl.reader import (Command, Definitions, Expression, Statements, is_complete,
                               read)


@pytest.mark.parametrize("text", [
    "x ← 2.0", "x += 3.5\n", "f(x, y)", "~f(x)", "x <- 1; y <- 2", "SWAP(a, b)",
    "for i = 1:3\n    x += i\nend", "@safe print(x)", "a[1] += 2.0", "z.re -= 1.0",
])
def test_statements(text):
    assert isinstance(read(text, "<t>"), Statements)


@pytest.mark.parametrize("text", [
    "x", "x + 1", "x == 3", "a[1]", "z.re", "sin(x)", "f64(n)", "[1, 2]", "2.0im", "-x",
    "x\n", "complex(1.0, 2.0)",
])
def test_expressions(text):
    assert isinstance(read(text, "<t>"), Expression)


def test_a_call_of_a_session_function_named_like_a_builtin_is_a_call():
    assert isinstance(read("sin(x)", "<t>", functions={"sin"}), Statements)


@pytest.mark.parametrize("text", [
    "function f(x)\n    x += 1\nend", "const N = 3", 'include "std/blas.rev"',
    "@inline function g(x)\n    x += 1\nend",
])
def test_definitions(text):
    assert read(text, "<t>") == Definitions(text)


@pytest.mark.parametrize("text, command", [
    (":help", Command("help", "")), ("  :load  examples/x.rev ", Command("load", "examples/x.rev")),
    (":grad f(x, y) --loss y", Command("grad", "f(x, y) --loss y")),
])
def test_commands(text, command):
    assert read(text, "<t>") == command


@pytest.mark.parametrize("text", ["", "   \n", "# only a comment", "# a\n# b\n"])
def test_nothing_to_do(text):
    assert read(text, "<t>") is None


@pytest.mark.parametrize("text", [
    "function f(x)", "function f(x)\n    x += 1", "x ←", "x += (1 +", "a ← [1.0,",
    "y += x *", "x +", "if x > 0", "while (x < 3, x > 0)\n    x += 1",
    "from i == 0 do\n    i += 1\nloop", "begin", "f(x,", "x ==", "@routine begin",
])
def test_incomplete_inputs_continue(text):
    assert not is_complete(text)
    with pytest.raises(ParseError) as caught:
        read(text, "<t>")
    assert caught.value.incomplete


@pytest.mark.parametrize("text, message", [
    ("1 +* 3", "unexpected '*'"), ("x = 3", "unexpected '='"), ("end", "unexpected 'end'"),
    ("x += )", "unexpected ')'"), ("x y", "unexpected 'y'"), ("@routin x", "unknown annotation"),
    ("function f(x) end", "unexpected 'end'"), ("x += 1 +* 2", "unexpected '*'"),
])
def test_genuine_errors_are_complete_and_reported_at_once(text, message):
    assert is_complete(text)
    with pytest.raises(ParseError) as caught:
        read(text, "<t>")
    assert message in caught.value.message and not caught.value.incomplete


def test_the_error_further_into_the_input_is_reported():
    with pytest.raises(ParseError) as caught:
        read("x += 1 +* 2", "<t>")
    assert (caught.value.span.line, caught.value.span.col) == (1, 9)


@pytest.mark.parametrize("text", ["x ← 2.0", "function f(x)\n    x += 1\nend", "x", ":vars"])
def test_complete_inputs(text):
    assert is_complete(text)


def test_statements_keep_their_spans_in_the_named_file():
    item = read("\nx += 1", "<repl 7>")
    update = item.stmts[0]
    assert isinstance(update, ast.Update)
    assert (update.span.file, update.span.line, update.span.col) == ("<repl 7>", 2, 1)
