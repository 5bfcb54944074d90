"""`:undo`: the session steps back in time by running inverses (LANGUAGE.md §12)."""
from __future__ import annotations

MUL = "function mul(y!, a, b)\n    y! += a * b\nend"


def test_undo_chain_back_to_nothing(repl):
    repl("x ← 2.0", "x += 3.5", MUL, "y ← 1.0", "mul(y, x, 2.0)")
    assert repl.store == {"x": 5.5, "y": 12.0}
    assert repl(":undo") == ("undone: mul(y, x, 2.0)\n", "")
    assert repl.store == {"x": 5.5, "y": 1.0}
    assert repl(":undo") == ("undone: y ← 1.0\n", "")
    assert repl.store == {"x": 5.5}
    assert repl(":undo", ":undo") == ("undone: x += 3.5\nundone: x ← 2.0\n", "")
    assert repl.store == {}
    out, err = repl(":undo")
    assert out == "" and "nothing to undo" in err


def test_expressions_definitions_and_safe_statements_are_not_steps(repl):
    repl("x ← 1", "x += 1", "x", "@safe print(x)", MUL, ":vars")
    assert repl(":undo", "x") == ("undone: x += 1\n1\n", "")


def test_undoing_an_allocation_needs_the_allocated_value(repl):
    repl("x ← 2.0", "y ← 0.0", "y += x")
    repl("SWAP(x, y)")
    assert repl(":undo")[0] == "undone: SWAP(x, y)\n"
    assert repl(":undo")[0] == "undone: y += x\n"
    repl("x += 1.0")
    out, err = repl(":undo", ":undo", ":undo")
    assert out == "undone: x += 1.0\nundone: y ← 0.0\nundone: x ← 2.0\n" and err == ""
    assert repl.store == {}


def test_undoing_a_deallocation_allocates_again(repl):
    repl("x ← 2.0", "x += 1.0", "y ← 1.0", "x → 3.0")
    assert repl.store == {"y": 1.0}
    assert repl(":undo") == ("undone: x → 3.0\n", "")
    assert repl.store == {"y": 1.0, "x": 3.0}
    repl(":undo", ":undo")                              # y ← 1.0, then x += 1.0
    repl("x += 5.0", ":undo")
    assert repl.store == {"x": 2.0}


def test_an_undo_that_fails_keeps_its_step(repl):
    repl("x ← 2.0")
    repl.session.steps[-1:] = []          # pretend x came from elsewhere
    repl("x += 1.0", "y ← x")
    repl.session.steps.pop(0)             # now the last step is `y ← x`
    repl("y += 1.0")
    repl.session.steps.pop()              # drop `y += 1.0`: y no longer equals x
    out, err = repl(":undo")
    assert "deallocation check failed" in err and "y = 4.0" in err
    assert repl.store == {"x": 3.0, "y": 4.0} and len(repl.session.steps) == 1


def test_undo_uses_the_functions_as_they_were(repl):
    repl(MUL, "y ← 1.0", "mul(y, 2.0, 3.0)")
    repl("function mul(y!, a, b)\n    y! += a + b\nend")
    repl(":undo")
    assert repl.store == {"y": 1.0}


def test_undo_of_a_loop_and_a_block(repl):
    repl("a ← [1.0, 2.0, 3.0]", "s ← 0.0")
    repl("for i = 0:2\n    s += a[i] * a[i]\nend")
    assert repl.store["s"] == 14.0
    out, err = repl(":undo")
    assert out.startswith("undone:\n    for i = 0:2") and err == ""
    assert repl.store["s"] == 0.0


def test_undo_takes_no_argument(repl):
    assert "usage: :undo" in repl(":undo 3")[1]


def test_undo_of_an_inverse_call_runs_forward(repl):
    repl(MUL, "y ← 17", "a ← 3", "b ← 5", "~mul(y, a, b)")
    assert repl.store["y"] == 2
    repl(":undo")
    assert repl.store["y"] == 17
