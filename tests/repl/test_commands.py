"""The `:` commands (rlang/repl/commands.py; LANGUAGE.md §12), compared with the
command line where they do the same job."""
from __future__ import annotations

import pytest

from rlang.repl.commands import COMMANDS

MUL = "function mul(y!, a, b)\n    y! += a * b\nend"


def test_help_lists_every_command(repl):
    out, err = repl(":help")
    assert err == "" and all(f":{name}" in out for name in COMMANDS)
    assert repl(":h") == (out, "")


@pytest.mark.parametrize("text, message", [
    (":frobnicate", "unknown command `:frobnicate`; :help lists the commands"),
    (":l", "`:l` is ambiguous: it could be :load, :llvm"),
    (":", "unknown command `:`"),
    (":load", "usage: :load FILE"),
    (":inverse", "usage: :inverse NAME"),
    (":grad mul(y, a, b)", "usage: :grad CALL --loss VIEW"),
    (":grad --loss y", "usage: :grad CALL --loss VIEW"),
    (":grad y --loss y", "`:grad` differentiates a call such as `f(x, y)`, not `y`"),
    (":llvm", "usage: :llvm NAME"),
    (":inverse mull", "no function named `mull`; did you mean `mul`?"),
    (":load no/such/file.rev", "file not found: no/such/file.rev"),
])
def test_bad_uses_are_clear_errors(repl, text, message):
    repl(MUL)
    out, err = repl(text)
    assert out == "" and message in err and "Traceback" not in err


def test_quit_ends_the_session(repl):
    assert repl.session.execute(":quit") is False
    assert repl.session.execute(":q") is False
    assert repl.session.execute(":vars") is True


def test_vars_lists_types_and_values_in_allocation_order(repl):
    assert "no session variables" in repl(":vars")[0]
    repl("x ← 2.0", "n ← 3", "a ← [1, 2]", "z ← 1.0 + 2.0im", "q ← fixed(0.5)", "s ← stack(i64)")
    assert repl(":vars") == ("x: f64 = 2.0\nn: i64 = 3\na: i64[:] = [1, 2]\n"
                             "z: complex = 1.0 + 2.0im\nq: fixed = 0.5\ns: stack{i64} = []\n", "")


def test_load_defines_the_functions_of_a_file(repl):
    out, err = repl(":load examples/multiplier.rev")
    assert (out, err) == ("loaded examples/multiplier.rev: multiplier, main\n", "")
    assert repl("y ← 2", "multiplier(y, 3, 5)", "y") == ("17\n", "")
    assert repl(":functions") == ("function multiplier(y!, a, b)\nfunction main()\n", "")


def test_load_reports_a_file_with_errors_and_defines_nothing(repl, tmp_path):
    bad = tmp_path / "bad.rev"
    bad.write_text("function f(x!)\n    x! += x!\nend\n")
    out, err = repl(f":load {bad}")
    assert f"{bad}:2:" in err and "right-hand side" in err
    assert repl.session.functions == {}


def test_inverse_prints_what_rlang_invert_prints(repl, cli):
    repl(":load examples/logplus.rev")
    code, expected, _ = cli("invert", "examples/logplus.rev", "logplus")
    assert code == 0 and repl(":inverse logplus") == (expected, "")


def test_grad_prints_what_rlang_grad_prints(repl, cli):
    repl(":load examples/multiplier.rev", "y ← 2.0", "a ← 3.0", "b ← 5.0")
    code, expected, _ = cli("grad", "examples/multiplier.rev", "multiplier", "2.0", "3.0", "5.0",
                            "--loss", "y!")
    assert code == 0 and expected == "y! = 1.0\na = 5.0\nb = 3.0\n"
    assert repl(":grad multiplier(y, a, b) --loss y!") == (expected, "")
    assert repl(":grad multiplier(y, a, b) --loss y") == (expected, "")     # the variable
    assert repl.store == {"y": 2.0, "a": 3.0, "b": 5.0}                     # left as it was


def test_grad_of_literals_an_inverse_and_complex_views(repl):
    repl(MUL, "y ← 17.0")
    assert repl(":grad ~mul(y, 3.0, 5.0) --loss=y") == ("y! = 1.0\na = -5.0\nb = -3.0\n", "")
    repl("function lg(z: complex, x: complex)\n    z.re += log(abs(x))\nend",
         "z ← 1.0 + 2.0im", "w ← 3.0 - 1.0im")
    out, err = repl(":grad lg(z, w) --loss z.re")
    assert err == "" and out.startswith("z = [1.0, 0.0]\nx = [0.3, -0.09999999")


def test_grad_of_integers_only(repl):
    repl("function inc(n!)\n    n! += 1\nend", "n ← 1")
    out, err = repl(":grad inc(n) --loss n")
    assert out == "" and "the loss `n!` must be a float, fixed, complex or ulog scalar" in err


def test_llvm_shows_the_ir_of_forward_and_inverse(repl):
    repl(MUL)
    out, err = repl(":llvm mul")
    assert err == ""
    assert 'define i32 @"rev_mul__f64_f64_f64"' in out
    assert 'define i32 @"rev_inv_mul__f64_f64_f64"' in out
    assert "fadd double" in out and "fsub double" in out


def test_llvm_includes_the_callees(repl):
    repl(MUL, "function twice(y!: i64, a: i64)\n    mul(y!, a, 2)\n    mul(y!, a, 2)\nend")
    out, err = repl(":llvm twice")
    assert err == "" and "rev_twice__i64_i64" in out and "rev_mul__i64_i64_i64" in out


def test_llvm_refuses_what_the_backend_cannot_compile(repl):
    repl("function g(x: f64)\n    t ← [ulog(x)]\n    t → [ulog(x)]\nend")
    out, err = repl(":llvm g")
    assert out == "" and "error:" in err and "ulog array literals" in err and \
        "Traceback" not in err


def test_inverse_of_a_function_from_an_earlier_input_after_redefinition(repl):
    repl(MUL, "function mul(y!, a, b)\n    y! -= a + b\nend")
    assert repl(":inverse mul") == ("function mul(y!, a, b)\n    y! += a + b\nend\n", "")
