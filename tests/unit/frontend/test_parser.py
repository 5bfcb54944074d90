"""The parser as a user sees it: source text → AST, layout rules, literals, errors.

Only the public entry points are used: `parse(text, file)`, `parse_expression(text)`
and the `ParseError` they raise (message, span, `incomplete`).
"""
from __future__ import annotations

import pytest

from rlang.frontend import ast
from rlang.errors import ParseError
from rlang.frontend.parser import parse, parse_expression

A, B, X, Y, I, N = (ast.Name(n) for n in ("a", "b", "x", "y!", "i", "n"))
ONE, TWO = ast.IntLit(1), ast.IntLit(2)


def body(source: str) -> tuple:
    """The statements of `source` placed in a function body."""
    program = parse(f"function f(x, y!)\n{source}\nend\n")
    (function,) = program.items
    return function.body


def stmt(source: str):
    (only,) = body(source)
    return only


def error(source: str, parse_function=parse) -> ParseError:
    with pytest.raises(ParseError) as info:
        parse_function(source, "bad.rev")
    return info.value


# ------------------------------------------------------------------ statements

@pytest.mark.parametrize("source, op", [
    ("y! += 1", "+="), ("y! -= 1", "-="), ("y! *= 1", "*="), ("y! /= 1", "/="),
    ("y! ^= 1", "^="), ("y! ⊻= 1", "^="),
])
def test_update(source, op):
    assert stmt(source) == ast.Update(Y, op, ONE)


def test_update_of_views():
    assert stmt("a[i, 2].re -= x") == ast.Update(
        ast.Field(ast.Index(A, (I, TWO)), "re"), "-=", X)
    assert stmt("a[i][0] += 1") == ast.Update(
        ast.Index(ast.Index(A, (I,)), (ast.IntLit(0),)), "+=", ONE)


@pytest.mark.parametrize("source", ["x <=> y!", "x ↔ y!", "SWAP(x, y!)"])
def test_swap(source):
    assert stmt(source) == ast.Instr("SWAP", (X, Y))


def test_instructions_and_their_uncalls():
    assert stmt("NEG(x)") == ast.Instr("NEG", (X,))
    assert stmt("ROT(a, b, θ)") == ast.Instr("ROT", (A, B, ast.Name("θ")))
    assert stmt("PUSH(s, x)") == ast.Instr("PUSH", (ast.Name("s"), X))
    # `~INSTR(…)` is the inverse instruction
    assert stmt("~INC(x)") == ast.Instr("DEC", (X,))
    assert stmt("~ROT(a, b, 0.5)") == ast.Instr("IROT", (A, B, ast.FloatLit(0.5)))
    assert stmt("~PUSH(s, x)") == ast.Instr("POP", (ast.Name("s"), X))
    assert stmt("~FLIP(b)") == ast.Instr("FLIP", (B,))


@pytest.mark.parametrize("arrow", ["←", "<-"])
def test_alloc(arrow):
    assert stmt(f"n {arrow} 0.0") == ast.Alloc("n", ast.FloatLit(0.0))
    assert stmt(f"y!{arrow}1") == ast.Alloc("y!", ONE)


@pytest.mark.parametrize("arrow", ["→", "->"])
def test_dealloc(arrow):
    assert stmt(f"n {arrow} 0.0") == ast.Dealloc("n", ast.FloatLit(0.0))


def test_zeros():
    assert stmt("@zeros f64 a b c") == ast.Zeros(ast.TypeRef("f64"), ("a", "b", "c"))
    assert stmt("~@zeros f64 a") == ast.Zeros(ast.TypeRef("f64"), ("a",), inverse=True)
    assert stmt("@zeros i64[:,:] m") == ast.Zeros(ast.TypeRef("i64", 2), ("m",))
    assert stmt("@zeros stack{bool} s") == ast.Zeros(ast.TypeRef("bool", is_stack=True), ("s",))


def test_calls_and_uncalls():
    assert stmt("g(x, y!)") == ast.CallStmt("g", (X, Y))
    assert stmt("~g(x, y!)") == ast.CallStmt("g", (X, Y), inverse=True)
    assert stmt("h()") == ast.CallStmt("h", ())
    assert stmt("g(a[0], x + 1)") == ast.CallStmt(
        "g", (ast.Index(A, (ast.IntLit(0),)), ast.Binary("+", X, ONE)))


def test_blocks():
    update = ast.Update(X, "+=", ONE)
    assert stmt("begin\n    x += 1\nend") == ast.Block((update,))
    assert stmt("begin x += 1 end") == ast.Block((update,))
    assert stmt("~begin\n    x += 1\nend") == ast.Block((update,), inverse=True)
    assert stmt("begin\nend") == ast.Block(())


def test_routine():
    first, second = ast.Update(X, "+=", ONE), ast.Update(Y, "+=", TWO)
    assert body("@routine begin\n    x += 1\n    y! += 2\nend\n~@routine") == (
        ast.Routine((first, second)), ast.UnRoutine())
    # a single statement is a one-statement routine
    assert stmt("@routine x += 1") == ast.Routine((first,))
    # only a plain block is unwrapped
    assert stmt("@routine ~begin x += 1 end") == ast.Routine((ast.Block((first,), inverse=True),))


def test_if_forms():
    inc, dec = ast.Update(Y, "+=", ONE), ast.Update(Y, "-=", ONE)
    x_pos = ast.Binary(">", X, ast.IntLit(0))
    assert stmt("if x > 0\n    y! += 1\nend") == ast.If((ast.IfBranch(x_pos, None, (inc,)),))
    # `(c, ~)` means post = pre, the same as `c`
    assert stmt("if (x > 0, ~)\n    y! += 1\nend") == stmt("if x > 0\n    y! += 1\nend")
    full = stmt("if (x > 0, y! > 0)\n    y! += 1\nelseif x < 0\n    y! -= 1\n"
                "elseif (a, b)\nelse\n    y! += 1\nend")
    assert full == ast.If(
        (ast.IfBranch(x_pos, ast.Binary(">", Y, ast.IntLit(0)), (inc,)),
         ast.IfBranch(ast.Binary("<", X, ast.IntLit(0)), None, (dec,)),
         ast.IfBranch(A, B, ())),
        orelse=(inc,))
    assert stmt("if x\nelse\nend").orelse == ()
    assert stmt("if x\nend").orelse is None
    # a parenthesised condition that is not a pair
    assert stmt("if (a + b) * x > 0\nend").branches[0].pre == ast.Binary(
        ">", ast.Binary("*", ast.Binary("+", A, B), X), ast.IntLit(0))


def test_while():
    assert stmt("while (i < n, i > 0)\n    i += 1\nend") == ast.While(
        ast.Binary("<", I, N), ast.Binary(">", I, ast.IntLit(0)), (ast.Update(I, "+=", ONE),))


def test_from_loop():
    start, stop = ast.Binary("==", I, ast.IntLit(0)), ast.Binary("==", I, N)
    inc_i, inc_x = ast.Update(I, "+=", ONE), ast.Instr("INC", (X,))
    assert stmt("from i == 0 do\n    i += 1\nloop\n    INC(x)\nuntil i == n") == ast.From(
        start, (inc_i,), (inc_x,), stop)
    assert stmt("from i == 0 do\n    i += 1\nuntil i == n") == ast.From(start, (inc_i,), (), stop)
    assert stmt("from i == 0 do i += 1 loop INC(x) until i == n") == ast.From(
        start, (inc_i,), (inc_x,), stop)
    assert stmt("from i == 0\ndo\n    i += 1\nuntil i == n") == ast.From(start, (inc_i,), (), stop)


def test_for_loops():
    assert stmt("for i = 1:n\n    x += i\nend") == ast.For(
        "i", ONE, ONE, N, (ast.Update(X, "+=", I),))
    assert stmt("for i = n:-1:1\nend") == ast.For("i", N, ast.Unary("-", ONE), ONE, ())
    assert stmt("for i = 0:2:n - 1\nend") == ast.For(
        "i", ast.IntLit(0), TWO, ast.Binary("-", N, ONE), ())
    assert stmt("@parallel for i = 1:n\nend") == ast.For("i", ONE, ONE, N, (), parallel=True)


def test_annotations():
    update = ast.Update(X, "+=", ONE)
    assert stmt("@invcheckoff x += 1") == ast.Annotated("invcheckoff", update)
    assert stmt("@inbounds for i = 1:n\nend") == ast.Annotated(
        "inbounds", ast.For("i", ONE, ONE, N, ()))
    assert stmt("@invcheckoff @inbounds x += 1") == ast.Annotated(
        "invcheckoff", ast.Annotated("inbounds", update))


def test_safe():
    assert stmt('@safe print("x =", x)') == ast.Safe("print", (ast.StrLit("x ="), X))
    assert stmt("@safe show(x, y!)") == ast.Safe("show", (X, Y))
    assert stmt('@safe assert(x > 0, "bad")') == ast.Safe(
        "assert", (ast.Binary(">", X, ast.IntLit(0)), ast.StrLit("bad")))


def test_top_level_items():
    program = parse('include "std/blas.rev"\nconst N = 10\n'
                    "@inline function g(x: f64, ys: f64[:,:], s: stack{i64}, z)\nend\n")
    include, const, function = program.items
    assert include == ast.Include("std/blas.rev")
    assert const == ast.Const("N", ast.IntLit(10))
    assert function == ast.Function("g", (
        ast.Param("x", ast.TypeRef("f64")),
        ast.Param("ys", ast.TypeRef("f64", 2)),
        ast.Param("s", ast.TypeRef("i64", is_stack=True)),
        ast.Param("z")), (), inline=True)
    assert program.functions == (function,)
    assert parse("function main()\nend").items == (ast.Function("main", (), ()),)
    assert parse("") == ast.Program(())


def test_spans_point_at_the_source():
    program = parse("function f(x)\n    x += 1\n\n    y ← 2\nend\n", "prog.rev")
    function = program.items[0]
    update, alloc = function.body
    assert (update.span.file, update.span.line, update.span.col) == ("prog.rev", 2, 5)
    assert (alloc.span.line, alloc.span.col) == (4, 5)
    assert (function.span.line, function.span.col) == (1, 1)


# ------------------------------------------------------------------ layout

def test_newline_inside_brackets_continues():
    expected = ast.CallStmt("g", (A, B))
    assert stmt("g(a,\n  b)") == expected
    assert stmt("g(\n  a,\n  b\n)") == expected
    assert stmt("x += (a\n   + b)") == ast.Update(X, "+=", ast.Binary("+", A, B))
    assert stmt("x += m[a,\n  b]") == ast.Update(X, "+=", ast.Index(ast.Name("m"), (A, B)))
    assert stmt("n ← [1,\n     2]") == ast.Alloc("n", ast.ArrayLit((ONE, TWO)))
    program = parse("function f(a,\n           b)\nend")
    assert program.items[0].params == (ast.Param("a"), ast.Param("b"))


@pytest.mark.parametrize("op", ["+", "-", "*", "/", "**", "&&", "||", "==", "<", "|", "&", "^"])
def test_newline_after_binary_operator_continues(op):
    assert stmt(f"x += a {op}\n    b") == ast.Update(X, "+=", parse_expression(f"a {op} b"))


def test_newline_after_arrow_or_update_operator_continues():
    assert stmt("n ←\n    1") == ast.Alloc("n", ONE)
    assert stmt("x +=\n    1") == ast.Update(X, "+=", ONE)


def test_newline_before_an_operator_ends_the_statement():
    err = error("function f(x)\n    x += a\n    + b\nend")
    assert (err.span.line, err.span.col) == (3, 5)
    assert "unexpected '+'" in err.message


def test_semicolons_separate_statements():
    assert body("x += 1; y! += 2") == (ast.Update(X, "+=", ONE), ast.Update(Y, "+=", TWO))
    assert body("x += 1;; ;y! += 2;") == body("x += 1\ny! += 2")
    assert stmt("begin x += 1; y! += 2 end") == ast.Block(body("x += 1\ny! += 2"))
    assert parse("function f(x); x += 1; end") == parse("function f(x)\n    x += 1\nend")


def test_comments_and_blank_lines():
    source = ("# a program\n\n\n"
              "function f(x)   # the function\n"
              "    # a comment line\n\n"
              "    x += 1 +  # continues after the operator\n"
              "         2\n"
              "\n\n"
              "end\n\n# trailing\n")
    assert parse(source) == parse("function f(x)\n    x += 1 + 2\nend")
    assert parse("# only a comment") == ast.Program(())
    assert parse("\n\n\n") == ast.Program(())


def test_windows_line_endings():
    assert parse("function f(x)\r\n    x += 1\r\nend\r\n") == parse("function f(x)\n    x += 1\nend\n")


def test_not_equal_and_bang_names():
    # `y!=3` is `y != 3`, while `y! += 3` updates the variable `y!`
    assert parse_expression("y!=3") == ast.Binary("!=", ast.Name("y"), ast.IntLit(3))
    assert stmt("y! += 3") == ast.Update(Y, "+=", ast.IntLit(3))
    assert stmt("y!+=3") == ast.Update(Y, "+=", ast.IntLit(3))
    assert stmt("x += y! * 2") == ast.Update(X, "+=", ast.Binary("*", Y, TWO))
    assert parse_expression("y! == 3") == ast.Binary("==", Y, ast.IntLit(3))


# ------------------------------------------------------------------ literals

@pytest.mark.parametrize("source, expected", [
    ("42", ast.IntLit(42)),
    ("0x2A", ast.IntLit(42)),
    ("0Xff_ff", ast.IntLit(0xFFFF)),
    ("1_000", ast.IntLit(1000)),
    ("3.5", ast.FloatLit(3.5)),
    ("1e-3", ast.FloatLit(1e-3)),
    ("1E+3", ast.FloatLit(1000.0)),
    ("2.5e10", ast.FloatLit(2.5e10)),
    ("1_000.5", ast.FloatLit(1000.5)),
    ("2.0im", ast.ImagLit(2.0)),
    ("3im", ast.ImagLit(3.0)),
    ("1e-3im", ast.ImagLit(1e-3)),
    ("true", ast.BoolLit(True)),
    ("false", ast.BoolLit(False)),
    ('"hello"', ast.StrLit("hello")),
    ('"say \\"hi\\"\\n\\tback\\\\slash"', ast.StrLit('say "hi"\n\tback\\slash')),
    ('""', ast.StrLit("")),
    ('"# not a comment; not a separator"', ast.StrLit("# not a comment; not a separator")),
    ("[1.0, 2.0]", ast.ArrayLit((ast.FloatLit(1.0), ast.FloatLit(2.0)))),
    ("[[1, 2], [3, 4]]", ast.ArrayLit((ast.ArrayLit((ONE, TWO)),
                                       ast.ArrayLit((ast.IntLit(3), ast.IntLit(4)))))),
    ("[]", ast.ArrayLit(())),
    ("f64", ast.TypeExpr(ast.TypeRef("f64"))),
    ("zero(f64)", ast.Call("zero", (ast.TypeExpr(ast.TypeRef("f64")),))),
    ("stack(i64)", ast.Call("stack", (ast.TypeExpr(ast.TypeRef("i64")),))),
    ("pi", ast.Name("pi")),
])
def test_literals(source, expected):
    assert parse_expression(source) == expected


def test_negative_numbers_are_unary_minus():
    assert parse_expression("-3") == ast.Unary("-", ast.IntLit(3))
    assert parse_expression("-1.5") == ast.Unary("-", ast.FloatLit(1.5))
    assert parse_expression("1.0+2.0im") == ast.Binary("+", ast.FloatLit(1.0), ast.ImagLit(2.0))


def test_greek_identifiers():
    assert parse_expression("θ + Δx") == ast.Binary("+", ast.Name("θ"), ast.Name("Δx"))
    assert parse_expression("αβ_1!") == ast.Name("αβ_1!")
    assert stmt("ω ← sin(θ)") == ast.Alloc("ω", ast.Call("sin", (ast.Name("θ"),)))
    program = parse("function ρ!(Ω!, λ)\n    Ω! += λ\nend")
    assert program.items[0].name == "ρ!"
    assert program.items[0].params == (ast.Param("Ω!"), ast.Param("λ"))


def test_keywords_are_not_names_but_prefixes_are():
    assert parse_expression("endx + true_ + format") == ast.Binary(
        "+", ast.Binary("+", ast.Name("endx"), ast.Name("true_")), ast.Name("format"))
    assert stmt("ifx += 1") == ast.Update(ast.Name("ifx"), "+=", ONE)


# ------------------------------------------------------------------ expressions

@pytest.mark.parametrize("source, expected", [
    ("a || b && x", ("||", "a", ("&&", "b", "x"))),
    ("a && b == x", ("&&", "a", ("==", "b", "x"))),
    ("a == b | x", ("==", "a", ("|", "b", "x"))),
    ("a | b ^ x", ("|", "a", ("^", "b", "x"))),
    ("a ^ b & x", ("^", "a", ("&", "b", "x"))),
    ("a & b << x", ("&", "a", ("<<", "b", "x"))),
    ("a << b + x", ("<<", "a", ("+", "b", "x"))),
    ("a + b * x", ("+", "a", ("*", "b", "x"))),
    ("a - b - x", ("-", ("-", "a", "b"), "x")),
    ("a / b // x % n", ("%", ("//", ("/", "a", "b"), "x"), "n")),
    ("a ** b ** x", ("**", "a", ("**", "b", "x"))),
    ("-a ** b", ("u-", ("**", "a", "b"))),
    ("a ** -b", ("**", "a", ("u-", "b"))),
    ("-a * b", ("*", ("u-", "a"), "b")),
    ("!a && b", ("&&", ("u!", "a"), "b")),
    ("~a & b", ("&", ("u~", "a"), "b")),
    ("a ≠ b", ("!=", "a", "b")),
    ("a ≤ b", ("<=", "a", "b")),
    ("a ≥ b", (">=", "a", "b")),
    ("a ⊻ b", ("^", "a", "b")),
    ("a ÷ b", ("//", "a", "b")),
])
def test_operator_precedence(source, expected):
    def build(shape):
        if isinstance(shape, str):
            return ast.Name(shape)
        if shape[0].startswith("u"):
            return ast.Unary(shape[0][1:], build(shape[1]))
        return ast.Binary(shape[0], build(shape[1]), build(shape[2]))

    assert parse_expression(source) == build(expected)


def test_postfix_forms():
    assert parse_expression("zs[i].re") == ast.Field(ast.Index(ast.Name("zs"), (I,)), "re")
    assert parse_expression("m[i, 0]") == ast.Index(ast.Name("m"), (I, ast.IntLit(0)))
    assert parse_expression("atan(y!, x)") == ast.Call("atan", (Y, X))
    assert parse_expression("(a + b)[0]") == ast.Index(ast.Binary("+", A, B), (ast.IntLit(0),))
    assert parse_expression("size(a, 0)[1]") == ast.Index(
        ast.Call("size", (A, ast.IntLit(0))), (ONE,))


def test_chained_comparison_is_an_error():
    err = error("a < b < x", parse_expression)
    assert "unexpected '<'" in err.message
    assert (err.span.line, err.span.col) == (1, 7)
    assert parse_expression("(a < b) < x") == ast.Binary("<", ast.Binary("<", A, B), X)


# ------------------------------------------------------------------ errors

def test_missing_end():
    err = error("function f(x)\n    x += 1\n")
    assert err.message.startswith("unexpected end of input")
    assert "'end'" in err.message
    assert err.incomplete
    assert (err.span.file, err.span.line, err.span.col) == ("bad.rev", 2, 11)


def test_missing_end_of_if():
    err = error("function f(x)\n    if x > 0\n        x += 1\n    end\n")
    assert "end of input" in err.message and "'end'" in err.message
    assert err.incomplete
    assert err.span.line == 4


def test_stray_closing_parenthesis():
    err = error("function f(x)\n    x += 1)\nend\n")
    assert err.message.startswith("unexpected ')'; expected")
    assert "a new line or ';'" in err.message
    assert not err.incomplete
    assert (err.span.line, err.span.col, err.span.end_col) == (2, 11, 12)


def test_unclosed_parenthesis_names_what_is_missing():
    err = error("function f(x)\n    x += (1\nend\n")
    assert err.message == "unexpected 'end'; expected ')'"
    assert (err.span.line, err.span.col) == (3, 1)


def test_unknown_annotation():
    err = error("function f(x)\n    @foo x += 1\nend\n")
    assert "unknown annotation" in err.message
    assert "@routine" in err.message and "@invcheckoff" in err.message
    assert (err.span.line, err.span.col) == (2, 5)


def test_unterminated_string():
    err = error('function f(x)\n    @safe print("abc)\nend\n')
    assert err.message == "unterminated string"
    assert (err.span.line, err.span.col) == (2, 17)


def test_unknown_type():
    err = error("function f(x: g64)\nend")
    assert "unknown type 'g64'" in err.message and "f64" in err.message
    assert (err.span.line, err.span.col) == (1, 15)
    err = error("function f(s: heap{i64})\nend")
    assert "stack{i64}" in err.message


def test_statement_outside_a_function():
    err = error("x += 1")
    assert err.message.startswith("unexpected 'x'; expected one of 'const', 'function'")
    assert (err.span.line, err.span.col) == (1, 1)


def test_assignment_is_not_a_statement():
    err = error("function f(x)\n    x = 1\nend")
    assert "unexpected '='" in err.message
    assert "update operator" in err.message
    assert (err.span.line, err.span.col) == (2, 7)


def test_end_of_line_where_something_else_was_expected():
    err = error("function f(x)\n    @zeros f64\nend")
    assert err.message.startswith("unexpected end of line; expected")
    assert (err.span.line, err.span.col) == (2, 15)


def test_binary_junk_decoded_as_latin1():
    elf = bytes(range(256)).decode("latin-1")
    err = error(elf)
    assert "NUL byte" in err.message
    png = b"\x89PNG\r\n\x1a\n\xff\xfe\x01\x02".decode("latin-1")
    err = error(png)
    assert err.message.startswith("unexpected character U+0089")
    assert (err.span.line, err.span.col) == (1, 1)
    noise = bytes(b % 255 + 1 for b in range(0, 2000, 7)).decode("latin-1")
    error(noise)


def test_strange_characters():
    err = error("function f(x)\n    x += 1 $ 2\nend")
    assert err.message.startswith("unexpected character '$'")
    assert (err.span.line, err.span.col) == (2, 12)


def test_deep_nesting_is_a_parse_error_not_a_crash():
    deep = "(" * 10_000 + "1" + ")" * 10_000
    err = error(f"function f(x)\n    x += {deep}\nend\n")
    assert "nesting" in err.message
    assert err.span.line == 2
    assert "nesting" in error(deep, parse_expression).message
    blocks = "function f(x)\n" + "begin\n" * 10_000 + "end\n" * 10_000 + "end\n"
    assert "nesting" in error(blocks).message


def test_deep_trees_without_brackets_parse():
    # long operator chains and prefix runs are parsed on a deep stack, not refused
    expr = parse_expression("-" * 10_000 + "x")
    depth = 0
    while isinstance(expr, ast.Unary):
        expr, depth = expr.operand, depth + 1
    assert depth == 10_000 and expr == ast.Name("x")
    power = parse_expression(" ** ".join(["x"] * 3_000))
    assert isinstance(power, ast.Binary) and power.op == "**" and power.left == ast.Name("x")
    program = parse("function f(x)\n    " + "@inbounds " * 3_000 + "x += 1\nend\n")
    stmt = program.items[0].body[0]
    assert isinstance(stmt, ast.Annotated) and stmt.annotation == "inbounds"


def test_moderate_nesting_is_fine():
    source = "(" * 100 + "1" + ")" * 100
    assert parse_expression(source) == ast.IntLit(1)
    assert parse_expression(" + ".join(["a"] * 100)).op == "+"


def test_half_a_program_is_incomplete():
    source = "function f(x)\n    from x == 0 do\n        x += 1\n    loop\n"
    err = error(source)
    assert err.incomplete
    assert error("function f(x)\n    x += ").incomplete
    assert error("function f(x)\n    x += g(1,\n").incomplete
    assert error("function").incomplete
    assert error("1 +", parse_expression).incomplete
    assert error("", parse_expression).incomplete
    # a wrong token is not incomplete: more text cannot fix it
    assert not error("function f(x)\n    x += 1)\n").incomplete


def test_not_text_is_a_parse_error():
    with pytest.raises(ParseError):
        parse(b"function f()\nend")  # type: ignore[arg-type]


def test_errors_render_with_the_source_line():
    err = error("function f(x)\n    x += 1)\nend\n")
    rendered = err.render()
    assert rendered.startswith("bad.rev:2:11: error: unexpected ')'")
    assert "    x += 1)" in rendered
    assert "^" in rendered


def test_a_janus_loop_may_leave_out_its_do_or_its_loop_part():
    # `from e1 loop B until e2` was "unexpected 'loop'; expected … 'do'" (LANGUAGE.md §6)
    from rlang.frontend.invert import invert_program
    from rlang.frontend.printer import format_program

    source = ("function f(i, n)\n    from i == 0 loop\n        i += 1\n    until i == n\n"
              "    from i == n do\n        i -= 1\n    until i == 0\nend\n")
    program = parse(source)
    first, second = program.items[0].body
    assert first.body == () and len(first.step) == 1
    assert len(second.body) == 1 and second.step == ()
    assert "from i == 0\n    loop" in format_program(program)
    assert parse(format_program(program)) == program
    assert invert_program(invert_program(program)) == program
