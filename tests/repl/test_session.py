"""The session store, definitions, expressions and errors of the REPL, in process
(rlang/repl/session.py; LANGUAGE.md §12)."""
from __future__ import annotations

import _thread
import signal
import threading

import numpy as np
import pytest

from rlang.numbers import Fixed

MUL = "function mul(y!, a, b)\n    y! += a * b\nend"


def test_allocate_update_and_print(repl):
    assert repl("x ← 2.0", "x += 3.5", "x") == ("5.5\n", "")
    assert repl("y <- 1", "y") == ("1\n", "")
    assert list(repl.store) == ["x", "y"]


@pytest.mark.parametrize("text, shown", [
    ("17", "17"), ("0.1 + 0.2", "0.30000000000000004"), ("2.0im + 1", "1.0 + 2.0im"),
    ("[1, 2, 3]", "[1, 2, 3]"), ("[[1.0, 2.0], [3.0, 4.0]]", "[[1.0, 2.0], [3.0, 4.0]]"),
    ("true && false", "false"), ("0x2A + 1_000", "1042"), ("1e-10", "1e-10"),
    ("sin(0.0)", "0.0"), ("f64(3)", "3.0"), ("max(2, 7)", "7"), ("pi", "3.141592653589793"),
    ("complex(1.0, -2.0)", "1.0 - 2.0im"), ("7 // 2", "3"),
])
def test_expressions_print_as_rev_literals(repl, text, shown):
    assert repl(text) == (shown + "\n", "")


def test_expressions_read_session_variables_and_leave_them(repl):
    repl("a ← [1.0, 2.0, 3.0]", "n ← 2")
    assert repl("a[n] * 2.0 + length(a)") == ("9.0\n", "")
    assert repl("a") == ("[1.0, 2.0, 3.0]\n", "")
    assert list(repl.store) == ["a", "n"]


def test_number_systems_keep_their_types(repl):
    repl("q ← fixed(1.5)", "q += fixed(0.25)", "u ← ulog(2.0)", "u *= ulog(4.0)")
    assert isinstance(repl.store["q"], Fixed)
    assert repl("q", "f64(u) > 7.99 && f64(u) < 8.01") == ("1.75\ntrue\n", "")
    assert "`+=` is not reversible on ulog" in repl("u += 1.0")[1]


def test_a_function_runs_on_session_variables(repl):
    repl(MUL, "y ← 2", "a ← 3", "b ← 5")
    assert repl("mul(y, a, b)", "y") == ("17\n", "")
    assert repl("~mul(y, a, b)", "y") == ("2\n", "")
    assert repl("mul(y, 10, b)", "y") == ("52\n", "")


def test_a_function_may_be_redefined(repl):
    repl(MUL, "y ← 2.0")
    repl("function mul(y!, a, b)\n    y! -= a * b\nend")
    assert repl("mul(y, 1.0, 1.0)", "y") == ("1.0\n", "")


def test_functions_call_each_other_and_std_is_included(repl):
    repl('include "std/blas.rev"', "xs ← [1.0, 2.0, 3.0]", "s ← 0.0")
    assert repl("i_dot(s, xs, xs)", "s") == ("14.0\n", "")


def test_consts_are_definitions(repl):
    repl("const N = 4", "x ← 0")
    assert repl("for i = 1:N\n    x += i\nend", "x") == ("10\n", "")


def test_deallocation_removes_a_session_variable(repl):
    repl("x ← 2.0", "x → 2.0")
    assert repl.store == {}
    out, err = repl("x")
    assert out == "" and "`x` is not defined" in err


def test_zeros_and_routines_at_the_top_level(repl):
    repl("@zeros f64 a b", "a += 1.0")
    assert list(repl.store) == ["a", "b"]
    repl("@routine begin\n    t ← 2.0 * a\nend\nb += t\n~@routine")
    assert repl.store == {"a": 1.0, "b": 2.0}
    assert "deallocation check failed" in repl("~@zeros f64 b")[1]
    assert repl("b -= 2.0", "~@zeros f64 b", "b ← 0.0", "~begin\n    b ← 0.0\nend") == ("", "")
    assert list(repl.store) == ["a"]


def test_safe_print_and_show(repl):
    repl("x ← 2.5")
    assert repl('@safe print("x is", x)', "@safe show(x)") == ("x is 2.5\nx = 2.5\n", "")


# ----------------------------------------------------------------- errors

def test_errors_have_spans_and_quote_the_input(repl):
    repl("x ← 2.0")
    out, err = repl("x += x * 2.0")
    assert out == ""
    assert err.startswith("<repl 2>:1:") and "x += x * 2.0" in err and "^" in err
    assert repl.store == {"x": 2.0}


@pytest.mark.parametrize("text, message", [
    ("x *= 2.0", "reversible only on ulog"),
    ("x ← 1.0", "`x` is allocated twice"),
    ("nothere += 1", "`nothere` is not defined"),
    ("nope(x)", "undefined function `nope`"),
    ("mul(x, 1.0)", "takes 3 arguments"),
    ("x ^ 2.0", "did you mean `**`?"),
    ("1 +* 2", "unexpected '*'"),
    ("x = 3", "unexpected '='"),
    ("end", "unexpected 'end'"),
])
def test_static_and_syntax_errors_leave_the_session(repl, text, message):
    repl("x ← 2.0", MUL)
    out, err = repl(text)
    assert out == "" and message in err and "Traceback" not in err
    assert repl.store == {"x": 2.0} and repl("x") == ("2.0\n", "")


def test_a_statement_failing_halfway_changes_nothing(repl):
    repl("x ← 1.0", "a ← [1.0, 2.0]", "function bump(v!: f64[:], i)\n    v![i] += 1.0\nend")
    out, err = repl("x += 5.0\nbump(a, 0)\nbump(a, 9)")
    assert "out of bounds" in err and "in function bump, called at <repl 4>:3:1" in err
    assert "<top level>" not in err
    assert repl.store["x"] == 1.0
    assert repl.store["a"].tolist() == [1.0, 2.0]
    assert repl.session.steps and len(repl.session.steps) == 2


def test_a_second_allocation_points_at_the_first(repl):
    repl("y ← 1", "x ← 2.0", "x → 2.0", "~begin\n    x → 3.0\nend")
    out, err = repl("x ← 1.0")
    assert "`x` is allocated twice" in err
    assert "already allocated at <repl 4>:2:5; deallocate it first" in err
    repl(":undo", "x ← 4.0", "x += 1.0")
    assert "already allocated at <repl 7>:1:1" in repl("x ← 1.0")[1]
    repl(":undo", ":undo", ":undo")                     # x += 1, x ← 4, x → 2 undone
    assert repl.store == {"y": 1, "x": 2.0}
    assert "already allocated at <repl 3>:1:1" in repl("x ← 1.0")[1]


def test_a_failed_deallocation_keeps_the_variable(repl):
    repl("x ← 2.0", "x += 1.0")
    out, err = repl("x → 2.0")
    assert "deallocation check failed" in err and "x = 3.0" in err
    assert repl.store == {"x": 3.0}


def test_runtime_checks_can_be_turned_off(repl_without_checks):
    repl = repl_without_checks
    assert repl("x ← 2.0", "x → 3.0") == ("", "")
    assert repl.store == {}


def test_recursion_past_the_limit_is_an_error(repl):
    repl("function down(n)\n    if (n > 0, ~)\n        n -= 1\n        down(n)\n        n += 1\n"
         "    end\nend", "n ← 20000")
    out, err = repl("down(n)")
    assert "call depth exceeded" in err and repl.store == {"n": 20000}


def test_definition_errors_define_nothing(repl):
    out, err = repl("function bad(x!)\n    x! += x!\nend")
    assert "read on the right-hand side" in err and repl.session.functions == {}
    out, err = repl("function calls(x!)\n    missing(x!)\nend")
    assert "undefined function `missing`" in err and repl.session.functions == {}


def test_a_broken_function_does_not_block_others(repl):
    repl("function g(x!)\n    x! += 1\nend", "function f(x!)\n    g(x!)\nend",
         "function g(x!, y)\n    x! += y\nend", "v ← 1")
    out, err = repl("g(v, 2)", "v")
    assert (out, err) == ("3\n", "")
    out, err = repl("f(v)")
    assert "`g` takes 2 arguments" in err and repl.store == {"v": 3}


def test_ctrl_c_interrupts_a_running_statement_and_keeps_the_state(repl):
    """(Python's own SIGINT handler is put in place first: a test run started as a
    shell's background job inherits SIGINT ignored, and interrupt_main then does
    nothing, so the loop would run for ever.)"""
    repl("x ← 0")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        out, err = repl("while (x >= 0, x > 0)\n    x += 1\nend")
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert "interrupted" in err and repl.store == {"x": 0}
    assert repl("x += 2", "x") == ("2\n", "")


def test_arrays_of_a_failed_input_are_not_touched(repl):
    repl("a ← [1.0, 2.0]", "x ← 1.0")
    before = repl.store["a"]
    repl("a[0] += 5.0\nx → 7.0")
    assert before.tolist() == [1.0, 2.0] and repl.store["a"] is before
    assert np.array_equal(repl.store["a"], [1.0, 2.0])
