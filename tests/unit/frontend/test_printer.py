"""The canonical pretty printer (rlang/frontend/printer.py).

The contract: for every tree `p` the parser can produce, `parse(format_program(p)) == p`
and printing is idempotent; the output follows one canonical style (LANGUAGE.md §6/§7)
with only the parentheses that the precedence of the grammar requires.
"""
from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlang.frontend import ast
from rlang.frontend.parser import parse, parse_expression
from rlang.primitives import INSTRUCTION_TABLE
from rlang.frontend.printer import (
    format_body,
    format_expr,
    format_function,
    format_program,
    format_stmt,
    format_type,
)


def round_trip(source: str) -> str:
    """parse → print → parse gives an equal tree, and printing again is a fixed point."""
    tree = parse(source)
    text = format_program(tree)
    again = parse(text)
    assert again == tree, text
    assert format_program(again) == text
    return text


def fn(body: str, params: str = "x, y!") -> str:
    """A function wrapping some statements."""
    indented = "\n".join("    " + line for line in body.strip("\n").splitlines())
    return f"function f({params})\n{indented}\nend\n"


# ------------------------------------------------------------- every statement form

STATEMENT_PROGRAMS = {
    "update": "y! += x * 2.0\ny! -= x\ny! *= x\ny! /= x\ny! ^= 3",
    "update views": "a[i] += 1\nm[i, j] -= m2[j, i]\nz.re += 1.0\nzs[i].im -= x\nq[0][1] += 2",
    "swap": "x <=> y!\na[0] ↔ a[1]\nSWAP(z.re, z.im)",
    "instructions": "NEG(x)\nINC(x)\nDEC(x)\nFLIP(b)\nCONJ(z)\nROT(a, b, θ)\nIROT(a, b, θ)\n"
                    "HADAMARD(a, b)\nPUSH(s, x)\nPOP(s, x)\n~INC(x)\n~ROT(a, b, 0.5)",
    "alloc dealloc": "n ← 0.0\nm <- [1, 2]\nn → 0.0\nm -> [1, 2]\ns ← stack(i64)\nz ← zero(f64)",
    "zeros": "@zeros f64 a b c\n~@zeros f64 a b c\n@zeros i64[:,:] m\n@zeros stack{i64} s",
    "calls": "g(x, y!)\n~g(x, y!)\nh()\n~h()\ng(a[i], x + 1, [1.0, 2.0])",
    "blocks": "begin\n    x += 1\nend\n~begin\n    x += 1\n    y! -= 2\nend\nbegin\nend\n"
              "begin x += 1 end",
    "routine": "@routine begin\n    n ← 0.0\n    n += abs(x)\nend\ny! += log(n)\n~@routine\n"
               "@routine x += 1\n~@routine\n@routine begin\n    begin\n        x += 1\n"
               "    end\nend\n~@routine",
    "if": "if x > 0\n    y! += 1\nend\n"
          "if (x > 0, y! > 0)\n    y! += 1\nelseif (x < 0, ~)\n    y! -= 1\n"
          "elseif x == 0\n    NEG(y!)\nelse\n    y! ^= 1\nend\n"
          "if (a + b) * c > 0\nelse\nend\n"
          "if (c, ~)\nend",
    "while": "while (i < n, i > 0)\n    i += 1\nend\nwhile (true, false)\nend",
    "from": "from i == 0 do\n    i += 1\nloop\n    INC(j)\nuntil i == n\n"
            "from i == 0 do\n    i += 1\nuntil i == n\n"
            "from i == 0 do i += 1 loop j += 1 until i == 3\n"
            "from i == 0 do\nloop\n    i += 1\nuntil i == 3",
    "for": "for i = 1:n\n    x += i\nend\nfor i = n:-1:1\nend\nfor i = 0:2:n - 1\nend\n"
           "for i = a[0]:length(a) - 1\n    x += a[i]\nend\nfor i = 1:1:3\nend",
    "parallel for": "@parallel for i = 0:n - 1\n    ys[i] += sin(xs[i]) ** 2\nend",
    "annotations": "@invcheckoff x += 1\n@inbounds for i = 1:3\n    z.re += a[i]\nend\n"
                   "@invcheckoff @inbounds begin\n    x += 1\nend\n"
                   "@routine begin\n    @invcheckoff x += 1\nend\n~@routine\n"
                   "@inbounds @parallel for i = 1:3\nend",
    "safe": "@safe print(\"x =\", x)\n@safe show(x, y!)\n@safe assert(x > 0, \"x must be > 0\")\n"
            "@safe print()\n@safe print(\"tab\\there \\\"quoted\\\" back\\\\slash\\nnew line\")",
    "nesting": "for i = 1:3\n    if (a[i] > 0, ~)\n        while (j < i, j > 0)\n"
               "            from k == 0 do\n                @routine begin\n"
               "                    t ← a[i] * 2\n                end\n"
               "                k += t\n                ~@routine\n            until k == 1\n"
               "            j += 1\n        end\n    end\nend",
}


@pytest.mark.parametrize("name", sorted(STATEMENT_PROGRAMS))
def test_statement_forms_round_trip(name):
    round_trip(fn(STATEMENT_PROGRAMS[name]))


TOP_LEVEL_PROGRAMS = [
    "",
    "const N = 10\n",
    "const TOL = 1e-10\nconst K = -3\nconst V = [1.0, 2.0]\n",
    'include "std/blas.rev"\n',
    'include "dir with \\"quotes\\"/and\\\\backslash.rev"\n',
    "function main()\nend\n",
    "@inline function f(x: f64, ys: f64[:,:], s: stack{i64}, b: bool, z: complex, u)\n"
    "    x += 1\nend\n",
    "function f(a: i64[:], m: f32[:,:,:], q: ulog, r: fixed, k: i32)\nend\n",
    'include "a.rev"\nconst N = 3\nfunction f(x)\n    x += N\nend\n\n\n'
    "function main()\n    x ← 1\n    f(x)\nend\n",
]


@pytest.mark.parametrize("source", TOP_LEVEL_PROGRAMS)
def test_top_level_round_trip(source):
    round_trip(source)


def test_canonical_style():
    source = (
        'include "std/blas.rev"\nconst N = 4\n'
        "@inline function f(x: f64, ys: f64[:,:], s: stack{i64}, y!)\n"
        "  n <- 0.0 ; x <=> y!\n"
        "  @routine n += x\n"
        "  ~@routine\n"
        "  n -> 0.0\n"
        "  ~g(x)\n"
        "  if (x > 0, ~)\n    y! += 1\n  elseif (x<0, y!<0)\n    y! ⊻= 1\n  else\n  end\n"
        "  while (x > 0, x < 1)\n  end\n"
        "  from x == 0 do\n    x += 1\n  loop\n  until x == 3\n"
        "  for i = 1:1:N\n  end\n"
        "  @parallel for i = N:-1:0\n    @inbounds ys[i, i] += ((x))\n  end\n"
        "  ~begin\n    @zeros f64 a b\n    ~@zeros f64 a b\n  end\n"
        '  @safe print("a", x)\n'
        "end\n"
    )
    expected = (
        'include "std/blas.rev"\n'
        "\n"
        "const N = 4\n"
        "\n"
        "@inline function f(x: f64, ys: f64[:,:], s: stack{i64}, y!)\n"
        "    n ← 0.0\n"
        "    SWAP(x, y!)\n"
        "    @routine begin\n"
        "        n += x\n"
        "    end\n"
        "    ~@routine\n"
        "    n → 0.0\n"
        "    ~g(x)\n"
        "    if x > 0\n"
        "        y! += 1\n"
        "    elseif (x < 0, y! < 0)\n"
        "        y! ^= 1\n"
        "    else\n"
        "    end\n"
        "    while (x > 0, x < 1)\n"
        "    end\n"
        "    from x == 0 do\n"
        "        x += 1\n"
        "    until x == 3\n"
        "    for i = 1:N\n"
        "    end\n"
        "    @parallel for i = N:-1:0\n"
        "        @inbounds ys[i, i] += x\n"
        "    end\n"
        "    ~begin\n"
        "        @zeros f64 a b\n"
        "        ~@zeros f64 a b\n"
        "    end\n"
        '    @safe print("a", x)\n'
        "end\n"
    )
    assert format_program(parse(source)) == expected
    assert round_trip(source) == expected


def test_format_stmt_and_body_indent():
    body = parse(fn("if x > 0\n    x += 1\nend\ny! -= x")).items[0].body
    assert format_stmt(body[0]) == "if x > 0\n    x += 1\nend"
    assert format_stmt(body[0], 1) == "    if x > 0\n        x += 1\n    end"
    assert format_stmt(body[1], 2) == "        y! -= x"
    assert format_body(body, 1) == "    if x > 0\n        x += 1\n    end\n    y! -= x"
    assert format_body((), 1) == ""


def test_format_function_and_type():
    f = parse("function g(a: f64[:], s: stack{bool})\n    a[0] += 1\nend").items[0]
    assert format_function(f) == "function g(a: f64[:], s: stack{bool})\n    a[0] += 1\nend"
    assert format_type(ast.TypeRef("f64")) == "f64"
    assert format_type(ast.TypeRef("i64", 3)) == "i64[:,:,:]"
    assert format_type(ast.TypeRef("complex", is_stack=True)) == "stack{complex}"


# ------------------------------------------------------------- Unicode and ASCII

def test_unicode_and_ascii_spellings_are_the_same_program():
    unicode = fn("n ← 1\nn → 1\na ↔ b\nx ⊻= 3\nb ^= x ≠ y\nb ^= x ≤ y\nb ^= x ≥ y\n"
                 "x += a ⊻ b\nx += a ÷ b")
    ascii_ = fn("n <- 1\nn -> 1\na <=> b\nx ^= 3\nb ^= x != y\nb ^= x <= y\nb ^= x >= y\n"
                "x += a ^ b\nx += a // b")
    assert parse(unicode) == parse(ascii_)
    assert format_program(parse(unicode)) == format_program(parse(ascii_))
    text = round_trip(ascii_)
    assert "n ← 1" in text and "n → 1" in text and "SWAP(a, b)" in text
    assert "x ^= 3" in text and "x != y" in text and "a // b" in text


# ------------------------------------------------------------- expressions

PRECEDENCE = [
    # (source, canonical text)
    ("a - (b - c)", "a - (b - c)"),
    ("(a - b) - c", "a - b - c"),
    ("a + b * c", "a + b * c"),
    ("(a + b) * c", "(a + b) * c"),
    ("a * (b * c)", "a * (b * c)"),
    ("a / (b / c)", "a / (b / c)"),
    ("(a // b) % c", "a // b % c"),
    ("a // (b % c)", "a // (b % c)"),
    ("-x**2", "-x ** 2"),
    ("-(x ** 2)", "-x ** 2"),
    ("(-x) ** 2", "(-x) ** 2"),
    ("a ** b ** c", "a ** b ** c"),
    ("a ** (b ** c)", "a ** b ** c"),
    ("(a ** b) ** c", "(a ** b) ** c"),
    ("2**-x", "2 ** -x"),
    ("2 ** (-x)", "2 ** -x"),
    ("2 ** !b", "2 ** !b"),
    ("a ** (b * c)", "a ** (b * c)"),
    ("(a * b) ** c", "(a * b) ** c"),
    ("a[i] ** 2", "a[i] ** 2"),
    ("f(x) ** z.re", "f(x) ** z.re"),
    ("(a < b) < c", "(a < b) < c"),
    ("a < (b < c)", "a < (b < c)"),
    ("(a == b) != (c >= d)", "(a == b) != (c >= d)"),
    ("a | b ^ c & d << e + f * g", "a | b ^ c & d << e + f * g"),
    ("(((a | b) ^ c) & d) << e", "(((a | b) ^ c) & d) << e"),
    ("a | (b | c)", "a | (b | c)"),
    ("x << (1 + 2)", "x << 1 + 2"),
    ("(x << 1) + 2", "(x << 1) + 2"),
    ("a || b && c", "a || b && c"),
    ("(a || b) && c", "(a || b) && c"),
    ("a || (b || c)", "a || (b || c)"),
    ("a < b && c > d || !e", "a < b && c > d || !e"),
    ("(a && b) == c", "(a && b) == c"),
    ("a == (b | c)", "a == b | c"),
    ("!(a && b)", "!(a && b)"),
    ("~(a & b)", "~(a & b)"),
    ("~a & b", "~a & b"),
    ("-(-x)", "--x"),
    ("- - x", "--x"),
    ("!!b", "!!b"),
    ("-~!x", "-~!x"),
    ("a - -b", "a - -b"),
    ("a - (-b)", "a - -b"),
    ("a * -b", "a * -b"),
    ("-a * b", "-a * b"),
    ("-(a * b)", "-(a * b)"),
    ("(a + b)[i]", "(a + b)[i]"),
    ("(-a).re", "(-a).re"),
    ("-a.re", "-a.re"),
    ("a[i].re[j, k]", "a[i].re[j, k]"),
    ("f(a)[0].im", "f(a)[0].im"),
    ("(a)", "a"),
    ("((((a))))", "a"),
    ("[a + b, (c)]", "[a + b, c]"),
    ("[[1, 2], [3, 4]][0][1]", "[[1, 2], [3, 4]][0][1]"),
    ("atan(y, x) + size(a, 0)", "atan(y, x) + size(a, 0)"),
    ("zeros(f64, 3, n)", "zeros(f64, 3, n)"),
    ("zero(complex) + one(i32)", "zero(complex) + one(i32)"),
    ("stack(i64)", "stack(i64)"),
    ("a ≠ b", "a != b"),
    ("a ≤ b", "a <= b"),
    ("a ≥ b", "a >= b"),
    ("a ⊻ b", "a ^ b"),
    ("a ÷ b", "a // b"),
    ("1.0 + 2.0im", "1.0 + 2.0im"),
    ("0x2A + 1_000", "42 + 1000"),
    ("1E3 + 1e+20 + 1.5e-07", "1000.0 + 1e20 + 1.5e-7"),
    ('"a\\"b"', '"a\\"b"'),
    ("true && false", "true && false"),
]


@pytest.mark.parametrize("source, canonical", PRECEDENCE)
def test_minimal_parentheses(source, canonical):
    tree = parse_expression(source)
    assert format_expr(tree) == canonical
    assert parse_expression(canonical) == tree


def test_built_trees_get_the_parentheses_they_need():
    a, b, c = ast.Name("a"), ast.Name("b"), ast.Name("c")
    cases = [
        (ast.Binary("-", a, ast.Binary("-", b, c)), "a - (b - c)"),
        (ast.Binary("-", ast.Binary("-", a, b), c), "a - b - c"),
        (ast.Binary("**", ast.Binary("**", a, b), c), "(a ** b) ** c"),
        (ast.Binary("**", a, ast.Binary("**", b, c)), "a ** b ** c"),
        (ast.Binary("**", ast.Unary("-", a), b), "(-a) ** b"),
        (ast.Unary("-", ast.Binary("**", a, b)), "-a ** b"),
        (ast.Binary("<", ast.Binary("<", a, b), c), "(a < b) < c"),
        (ast.Binary("<", a, ast.Binary("<", b, c)), "a < (b < c)"),
        (ast.Index(ast.Binary("+", a, b), (c,)), "(a + b)[c]"),
        (ast.Field(ast.Unary("-", a), "re"), "(-a).re"),
        (ast.Binary("&&", ast.Binary("||", a, b), c), "(a || b) && c"),
    ]
    for tree, text in cases:
        assert format_expr(tree) == text
        assert parse_expression(text) == tree


@pytest.mark.parametrize("value, text", [
    (1.0, "1.0"), (0.1, "0.1"), (1e-10, "1e-10"), (1e20, "1e20"), (1e16, "1e16"),
    (2.5, "2.5"), (123456789.125, "123456789.125"), (1.7976931348623157e308,
                                                    "1.7976931348623157e308"),
    (5e-324, "5e-324"), (0.0, "0.0"),
])
def test_float_literals(value, text):
    assert format_expr(ast.FloatLit(value)) == text
    assert parse_expression(text) == ast.FloatLit(value)


def test_inf_and_nan_print_as_names():
    assert format_expr(ast.FloatLit(math.inf)) == "inf"
    assert format_expr(ast.FloatLit(math.nan)) == "nan"
    assert format_expr(ast.FloatLit(-math.inf)) == "-inf"
    assert parse_expression("inf") == ast.Name("inf")
    assert format_expr(ast.Binary("**", ast.FloatLit(-math.inf), ast.IntLit(2))) == "(-inf) ** 2"


def test_imaginary_and_other_literals():
    assert format_expr(ast.ImagLit(2.0)) == "2.0im"
    assert format_expr(ast.ImagLit(1e-10)) == "1e-10im"
    assert parse_expression("1e-10im") == ast.ImagLit(1e-10)
    assert format_expr(ast.BoolLit(True)) == "true"
    assert format_expr(ast.ArrayLit(())) == "[]"
    assert format_expr(ast.TypeExpr(ast.TypeRef("f64"))) == "f64"
    assert format_expr(ast.TypeExpr(ast.TypeRef("stack"))) == "stack"
    assert format_expr(ast.StrLit('say "hi"\\\n\tok')) == '"say \\"hi\\"\\\\\\n\\tok"'


def test_negative_literals_built_by_an_inverter_keep_their_value():
    # The parser never builds negative literals (it builds Unary("-", lit)); a tree
    # that contains one prints as a unary minus, parenthesised where one would be.
    assert format_expr(ast.IntLit(-3)) == "-3"
    assert format_expr(ast.Binary("-", ast.Name("a"), ast.IntLit(-3))) == "a - -3"
    square = ast.Binary("**", ast.IntLit(-3), ast.IntLit(2))
    assert format_expr(square) == "(-3) ** 2"
    assert parse_expression("(-3) ** 2") == ast.Binary(
        "**", ast.Unary("-", ast.IntLit(3)), ast.IntLit(2))
    assert format_expr(ast.Field(ast.FloatLit(-0.0), "re")) == "(-0.0).re"


def test_numpy_scalars_in_literals():
    np = pytest.importorskip("numpy")
    assert format_expr(ast.FloatLit(np.float64(0.1))) == "0.1"
    assert format_expr(ast.IntLit(np.int64(7))) == "7"


def test_trees_built_by_an_inverter():
    x, y, i = ast.Name("x"), ast.Name("y"), ast.Name("i")
    body = (
        ast.Update(x, "-=", ast.Binary("*", y, ast.IntLit(2))),
        ast.Instr("DEC", (x,)),
        ast.Dealloc("n", ast.FloatLit(0.0)),
        ast.Zeros(ast.TypeRef("f64", 1), ("a", "b"), inverse=True),
        ast.CallStmt("g", (x, y), inverse=True),
        ast.Block((ast.Update(x, "+=", ast.IntLit(1)),), inverse=True),
        ast.Routine((ast.Alloc("t", x),)),
        ast.UnRoutine(),
        ast.If((ast.IfBranch(y, x, (ast.Instr("NEG", (x,)),)),
                ast.IfBranch(ast.Binary("<", x, y), None, ())), orelse=()),
        ast.While(x, y, (ast.Instr("INC", (x,)),)),
        ast.From(x, (), (ast.Instr("DEC", (x,)),), y),
        ast.For("i", ast.Name("n"), ast.Unary("-", ast.IntLit(1)), ast.IntLit(1),
                (ast.Update(ast.Index(ast.Name("a"), (i,)), "+=", i),), parallel=True),
        ast.Annotated("invcheckoff", ast.Annotated("inbounds", ast.Block(()))),
        ast.Safe("print", (ast.StrLit("done"),)),
    )
    program = ast.Program((ast.Function("f", (ast.Param("x"), ast.Param("y")), body),))
    text = format_program(program)
    assert parse(text) == program
    assert "if (y, x)\n" in text and "elseif x < y\n" in text and "    else\n" in text
    assert "    from x\n    loop\n        DEC(x)\n    until y\n" in text     # no empty do
    assert "@parallel for i = n:-1:1\n" in text
    assert "@invcheckoff @inbounds begin\n    end\n" in text


def test_deep_trees_print_without_recursion():
    tree = ast.Name("a")
    for _ in range(5000):
        tree = ast.Binary("-", ast.Name("b"), tree)
    text = format_expr(tree)
    assert text.startswith("b - (b - (") and text.endswith("a" + ")" * 4999)
    stmt = ast.Update(ast.Name("x"), "+=", ast.IntLit(1))
    for _ in range(2000):
        stmt = ast.Annotated("inbounds", ast.Block((stmt,)))
    lines = format_stmt(stmt).splitlines()
    assert len(lines) == 4001 and lines[2000] == "    " * 2000 + "x += 1"


def test_deepest_expression_the_parser_accepts_round_trips():
    source = " + ".join(f"a{k}" for k in range(150))
    tree = parse_expression(source)
    assert format_expr(tree) == source
    assert format_expr(parse_expression(format_expr(tree))) == source


# ------------------------------------------------------------- random trees

KEYWORDS = {"function", "end", "if", "elseif", "else", "while", "from", "do", "loop", "until",
            "for", "begin", "const", "include", "true", "false"}
RESERVED = KEYWORDS | set(ast.SCALAR_TYPES) | {"stack"}

names = st.from_regex(r"[A-Za-z_α-ωΑ-Ω][A-Za-z0-9_α-ωΑ-Ω]{0,5}!?", fullmatch=True).filter(
    lambda name: name.rstrip("!") not in RESERVED)
call_names = names.filter(lambda name: name not in INSTRUCTION_TABLE)
texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                max_size=12)

BINARY_OPS = ["||", "&&", "==", "!=", "<", "<=", ">", ">=", "|", "^", "&", "<<", ">>",
              "+", "-", "*", "/", "//", "%", "**"]

# Leaves look like parser output: no negative literals, no inf/nan floats.
leaves = st.one_of(
    st.integers(min_value=0, max_value=2**63 - 1).map(ast.IntLit),
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=False)
      .filter(lambda v: math.copysign(1.0, v) > 0).map(ast.FloatLit),
    st.floats(min_value=0.0, allow_nan=False, allow_infinity=False)
      .filter(lambda v: math.copysign(1.0, v) > 0).map(ast.ImagLit),
    st.booleans().map(ast.BoolLit),
    names.map(ast.Name),
    st.sampled_from(ast.SCALAR_TYPES + ("stack",)).map(lambda t: ast.TypeExpr(ast.TypeRef(t))),
    texts.map(ast.StrLit),
)


def _extend(children):
    small = st.lists(children, max_size=3).map(tuple)
    return st.one_of(
        st.builds(ast.Binary, st.sampled_from(BINARY_OPS), children, children),
        st.builds(ast.Unary, st.sampled_from(["-", "!", "~"]), children),
        st.builds(ast.Index, children, st.lists(children, min_size=1, max_size=3).map(tuple)),
        st.builds(ast.Field, children, st.sampled_from(["re", "im", "x", "e5", "im!"])),
        st.builds(ast.Call, names, small),
        st.builds(ast.ArrayLit, small),
    )


expressions = st.recursive(leaves, _extend, max_leaves=25)

# Trees of operators only, over a few atoms: where the parentheses are decided.
atoms = st.one_of(st.sampled_from("abc").map(ast.Name), st.integers(0, 9).map(ast.IntLit),
                  st.just(ast.FloatLit(0.5)))
operator_trees = st.recursive(
    atoms,
    lambda children: st.one_of(
        st.builds(ast.Binary, st.sampled_from(BINARY_OPS), children, children),
        st.builds(ast.Binary, st.sampled_from(["**", "-", "<", "*"]), children, children),
        st.builds(ast.Unary, st.sampled_from(["-", "!", "~"]), children),
        st.builds(ast.Index, children, st.tuples(children)),
        st.builds(ast.Field, children, st.just("re")),
    ),
    max_leaves=12,
)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions)
def test_random_expressions_round_trip(expr):
    text = format_expr(expr)
    assert parse_expression(text) == expr, text
    assert format_expr(parse_expression(text)) == text


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(operator_trees)
def test_random_operator_trees_round_trip(expr):
    text = format_expr(expr)
    assert parse_expression(text) == expr, text


@settings(max_examples=200, deadline=None)
@given(texts)
def test_random_strings_round_trip(value):
    assert parse_expression(format_expr(ast.StrLit(value))) == ast.StrLit(value)
    include = ast.Program((ast.Include(value),))
    assert parse(format_program(include)) == include


# Random statements and programs shaped like parser output.

small_exprs = st.recursive(leaves, _extend, max_leaves=6)
views = st.recursive(
    names.map(ast.Name),
    lambda inner: st.one_of(
        st.builds(ast.Index, inner, st.lists(small_exprs, min_size=1, max_size=2).map(tuple)),
        st.builds(ast.Field, inner, st.sampled_from(["re", "im"])),
    ),
    max_leaves=3,
)
args = st.lists(small_exprs, max_size=3).map(tuple)
types = st.one_of(
    st.builds(ast.TypeRef, st.sampled_from(ast.SCALAR_TYPES), st.integers(0, 3)),
    st.builds(lambda s: ast.TypeRef(s, is_stack=True), st.sampled_from(ast.SCALAR_TYPES)),
)
simple_statements = st.one_of(
    st.builds(ast.Update, views, st.sampled_from(["+=", "-=", "*=", "/=", "^="]), small_exprs),
    st.builds(ast.Instr, st.sampled_from(sorted(INSTRUCTION_TABLE)), args),
    st.builds(ast.Alloc, names, small_exprs),
    st.builds(ast.Dealloc, names, small_exprs),
    st.builds(ast.Zeros, types, st.lists(names, min_size=1, max_size=3).map(tuple),
              st.booleans()),
    st.builds(ast.CallStmt, call_names, args, st.booleans()),
    st.just(ast.UnRoutine()),
    st.builds(ast.Safe, st.sampled_from(["print", "show", "assert"]), args),
)


def _compound(inner):
    body = st.lists(inner, max_size=3).map(tuple)
    post = st.one_of(st.none(), small_exprs)
    branch = st.builds(ast.IfBranch, small_exprs, post, body)
    step = st.one_of(st.just(ast.IntLit(1)), small_exprs)
    return st.one_of(
        st.builds(ast.Block, body, st.booleans()),
        st.builds(ast.Routine, body),
        st.builds(ast.If, st.lists(branch, min_size=1, max_size=3).map(tuple),
                  st.one_of(st.none(), body)),
        st.builds(ast.While, small_exprs, small_exprs, body),
        st.builds(ast.From, small_exprs, body, body, small_exprs),
        st.builds(ast.For, names, small_exprs, step, small_exprs, body, st.booleans()),
        st.builds(ast.Annotated, st.sampled_from(["invcheckoff", "inbounds"]),
                  inner.filter(lambda s: not isinstance(s, (ast.Routine, ast.UnRoutine)))),
    )


statements = st.recursive(simple_statements, _compound, max_leaves=12)
params = st.builds(ast.Param, names, st.one_of(st.none(), types))
items = st.one_of(
    st.builds(ast.Function, call_names, st.lists(params, max_size=3).map(tuple),
              st.lists(statements, max_size=4).map(tuple), st.booleans()),
    st.builds(ast.Const, names, small_exprs),
    st.builds(ast.Include, texts),
)
programs = st.lists(items, max_size=4).map(lambda xs: ast.Program(tuple(xs)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs)
def test_random_programs_round_trip(program):
    text = format_program(program)
    assert parse(text) == program, text
    assert format_program(parse(text)) == text
