"""The Janus front end piece by piece: parsing and lowering to rev's AST, the Janus
printer, jana's value and printf formats, and the checked and modular integers."""
from __future__ import annotations

import numpy as np
import pytest

from rlang.errors import CheckErrors, ParseError
from rlang.frontend import ast
from rlang.frontend.invert import invert_program
from rlang.frontend.janus import loads_janus
from rlang.frontend.janus.printer import format_janus_program
from rlang.frontend.janus.values import (format_janus_binding, format_janus_store,
                                         format_janus_value, render_printf)
from rlang.interp.interpreter import Interpreter
from rlang.values import Stack


def _main(body: str, decls: str = "int x", modular: bool = False):
    lines = "\n".join("    " + line for line in (decls.split(";") + body.split(";")))
    return loads_janus(f"procedure main()\n{lines}\n", "t.ja", modular)


def _value(expr: str, decls: str = "int x; int y") -> object:
    unit = _main(f"x += {expr}", decls)
    return Interpreter(unit).run_main()[0][1]


@pytest.mark.parametrize("expr, value", [
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("10 - 3 - 2", 5), ("-7 / 2", -4),
    ("-7 % 3", 2), ("0x1F + 0o17", 46), ("- 5 + 1", -4), ("6 & 3 | 8", 10),
    ("5 ^ 1", 4), ("12 / 4 / 3", 1)])
def test_arithmetic_as_jana(expr, value):
    assert _value(expr) == value


def test_operator_precedence_of_the_tree():
    fn = _main("if 1 < 2 && !(3 = 4) || x != 0 then skip fi true").functions["main"]
    pre = fn.body[1].branches[0].pre
    assert pre.op == "||" and pre.left.op == "&&"
    assert pre.left.right == ast.Unary("!", ast.Binary("==", ast.IntLit(3), ast.IntLit(4)))


def test_statements_lower_to_revs_forms():
    unit = loads_janus("""
procedure p(int a, int c, int v[], stack s)
    local int t = a
    push(t, s)
    delocal int t = 0
    a <=> c
    uncall p(a, c, v, s)
procedure main()
    int a
    int c
    int v[2]
    stack s
    from a = 0 do a += 1 loop skip until a = 1
""", "t.ja")
    body = unit.functions["p"].body
    assert [type(s).__name__ for s in body] == ["Alloc", "Instr", "Dealloc", "Instr",
                                                "CallStmt"]
    assert body[1] == ast.Instr("PUSH", (ast.Name("s"), ast.Name("t")))
    assert body[4] == ast.CallStmt("p", tuple(map(ast.Name, "acvs")), True)
    params = unit.functions["p"].params
    assert [p.type for p in params] == [ast.TypeRef("i64"), ast.TypeRef("i64"),
                                        ast.TypeRef("i64", 1),
                                        ast.TypeRef("i64", is_stack=True)]
    assert unit.dialect == "janus" and unit.integers == "unbounded"


def test_swap_of_an_array_element_is_a_parse_error():
    with pytest.raises(ParseError) as error:
        _main("x[0] <=> y", "int x[2]; int y")
    assert error.value.span.line == 4


@pytest.mark.parametrize("source, message", [
    ("procedure main()\n    int if\n    skip\n", "Unexpected"),
    ("procedure p(int x)\n    int y\n    skip\nprocedure main()\n    skip\n",
     "only main declares variables"),
    ("procedure main()\n    int x\n", "Unexpected end of input"),
])
def test_parse_errors(source, message):
    with pytest.raises(ParseError, match=message):
        loads_janus(source, "t.ja")


def test_every_static_error_is_reported():
    with pytest.raises(CheckErrors) as errors:
        _main("y += 1; call q(x); x += (x < 1)")
    assert [e.message for e in errors.value.errors] == [
        "Variable `y' has not been declared", "Procedure `q' is not defined",
        "Couldn't match expected type `int' with actual type `bool'"]


def test_printer_reads_back_the_same_tree():
    source = """procedure p(int a, int b[], stack s)
    if !empty(s) && top(s) = a then
        b[size(b) - 1] -= a - (a - 1) * 2 / 3 % 4
    fi a != 0 || size(s) >= 1
    from a = 0 do
        a += 1
    loop
        skip
    until a = (3 ^ 0)
    local stack t = nil
    printf("%d %a", a, b)
    show(a, b, s)
    print("done\\n")
    delocal stack t = nil

procedure main()
    int a
    int b[4]
    stack s

    call p(a, b, s)
    error("no")
"""
    unit = loads_janus(source, "t.ja")
    assert format_janus_program(unit.program) == source
    again = loads_janus(format_janus_program(invert_program(unit.program)), "u.ja")
    assert invert_program(again.program) == unit.program


def test_values_as_jana_prints_them():
    assert format_janus_value(np.array([1, -2, 3])) == "{1, -2, 3}"
    assert format_janus_value(Stack("i64", [1, 2, 3])) == "<3, 2, 1]"
    assert format_janus_value(Stack("i64", [])) == "nil"
    assert format_janus_binding("a", np.zeros(3, dtype=np.int64)) == "a[3] = {0, 0, 0}"
    assert format_janus_store([("b", 2), ("a", 1)]) == "a = 1\nb = 2"


@pytest.mark.parametrize("fmt, args, text", [
    ("x=%d, a=%a, s=%t, 50%%", [("1", "int"), ("{1}", "array"), ("nil", "stack")],
     "x=1, a={1}, s=nil, 50%"),
    ("kept %d", [], "kept %d"),
])
def test_printf(fmt, args, text):
    assert render_printf(fmt, args) == text


@pytest.mark.parametrize("fmt, args, message", [
    ("%d %d", [("1", "int")], "Not enough arguments"),
    ("%d", [("1", "int"), ("2", "int")], "Not all arguments"),
    ("%a", [("1", "int")], "Type mismatch for `%a'"),
    ("%q", [("1", "int")], "Unrecognized format specifier: `%q'"),
])
def test_printf_errors(fmt, args, message):
    with pytest.raises(ValueError, match=message):
        render_printf(fmt, args)


def test_unbounded_integers_stay_exact_and_rev_wraps():
    unit = _main("y += 1; x += 9223372036854775807; x += y; x -= y * 2", "int x;int y")
    assert Interpreter(unit).run_main() == [("x", (1 << 63) - 2), ("y", 1)]
    unit = _main("y += 1; x += 9223372036854775807; x += y", "int x;int y")
    assert Interpreter(unit).run_main() == [("x", 1 << 63), ("y", 1)]
    unit.integers = "wrap"              # rev's i64
    assert Interpreter(unit).run_main() == [("x", -(1 << 63)), ("y", 1)]


def test_modular_integers_wrap_at_32_bits():
    unit = _main("x += 4294967301; x -= 2147483647; x -= 10", "int x", modular=True)
    assert [(n, int(v)) for n, v in Interpreter(unit).run_main()] == [("x", 2147483644)]
