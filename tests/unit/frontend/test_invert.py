"""Tests of the inverter (rlang.frontend.invert), one group per statement form of the table in
LANGUAGE.md §6: the inverse each form gets, that inverting twice gives the form back,
that inverted nodes keep the spans of the nodes they come from, and, for `for` loops,
`~begin` and `@routine`, that the inverse *runs* as the inverse (the loop visits
exactly the reversed index sequence).
"""
from __future__ import annotations

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rlang
from rlang.frontend import ast
from rlang.errors import InternalError
from rlang.frontend.invert import invert_body, invert_function, invert_program, invert_stmt
from rlang.frontend.parser import parse
from rlang.frontend.printer import format_program


# ------------------------------------------------------------------------- helpers

def body(source: str, params: str = "x, y, z, a, b, c, s, θ") -> tuple:
    """The statements of `source` (lines separated by newlines or `;`), parsed as the
    body of a function."""
    lines = "".join(f"    {line}\n" for line in source.strip("\n").split("\n"))
    return parse(f"function f({params})\n{lines}end\n", "<test>").functions[0].body


def one(source: str):
    (stmt,) = body(source)
    return stmt


def assert_inverse(source: str, expected: str) -> None:
    """invert_body(source) == expected, and inverting back gives source again."""
    forward, backward = body(source), body(expected)
    assert invert_body(forward) == backward
    assert invert_body(backward) == forward
    assert invert_body(invert_body(forward)) == forward


def runner(source: str):
    """A loaded program whose `@safe print` output is collected: call(name, *args,
    inverse=False) returns (new argument values, printed lines)."""
    module = rlang.loads(source)

    def call(name, *args, inverse=False):
        out = io.StringIO()
        module.interpreter.out = out
        fn = module[name]
        values = (~fn if inverse else fn)(*args)
        return values, out.getvalue().splitlines()

    return call


# ---------------------------------------------------------------------- updates

@pytest.mark.parametrize("source, expected", [
    ("x += y * 2", "x -= y * 2"),
    ("x -= y * 2", "x += y * 2"),
    ("x *= y", "x /= y"),
    ("x /= y", "x *= y"),
    ("x ^= y", "x ^= y"),
    ("x ⊻= y", "x ^= y"),
    ("a[x % 3] += b[y] - z", "a[x % 3] -= b[y] - z"),
    ("c.re += z", "c.re -= z"),
])
def test_update(source, expected):
    assert_inverse(source, expected)


def test_xor_update_is_its_own_inverse():
    stmt = one("x ^= y & 7")
    assert invert_stmt(stmt) == stmt


# ------------------------------------------------------------------ instructions

@pytest.mark.parametrize("source, expected", [
    ("SWAP(x, y)", "SWAP(x, y)"),
    ("x <=> y", "SWAP(x, y)"),
    ("a[0] ↔ a[1]", "SWAP(a[0], a[1])"),
    ("NEG(x)", "NEG(x)"),
    ("INC(x)", "DEC(x)"),
    ("DEC(a[2])", "INC(a[2])"),
    ("FLIP(b)", "FLIP(b)"),
    ("CONJ(c)", "CONJ(c)"),
    ("ROT(x, y, θ)", "IROT(x, y, θ)"),
    ("IROT(x, y, θ + 1.0)", "ROT(x, y, θ + 1.0)"),
    ("HADAMARD(x, y)", "HADAMARD(x, y)"),
    ("PUSH(s, x)", "POP(s, x)"),
    ("POP(s, a[1])", "PUSH(s, a[1])"),
])
def test_instruction(source, expected):
    assert_inverse(source, expected)


# ----------------------------------------------------------- allocation, zeros

@pytest.mark.parametrize("source, expected", [
    ("n ← 0.0", "n → 0.0"),
    ("n → x + 1", "n ← x + 1"),
    ("m ← zeros(f64, 3)", "m → zeros(f64, 3)"),
    ("t ← stack(i64)", "t → stack(i64)"),
    ("@zeros f64 p q r", "~@zeros f64 p q r"),
    ("~@zeros i64[:] p", "@zeros i64[:] p"),
])
def test_allocation(source, expected):
    assert_inverse(source, expected)


def test_zeros_keeps_the_order_of_its_names():
    inverse = invert_stmt(one("@zeros i64 p q r"))
    assert inverse == ast.Zeros(ast.TypeRef("i64"), ("p", "q", "r"), inverse=True)


# ----------------------------------------------------------------------- calls

@pytest.mark.parametrize("source, expected", [
    ("g(x, y + 1)", "~g(x, y + 1)"),
    ("~g(x)", "g(x)"),
    ("h()", "~h()"),
])
def test_call_and_uncall(source, expected):
    assert_inverse(source, expected)


# ---------------------------------------------------------------------- blocks

def test_statement_lists_are_reversed_and_each_statement_inverted():
    assert_inverse("x += 1\nINC(y)\nz ← x\nSWAP(a, b)",
                   "SWAP(a, b)\nz → x\nDEC(y)\nx -= 1")


def test_begin_block():
    assert_inverse("begin\n x += 1\n y -= x\nend", "begin\n y += x\n x -= 1\nend")


def test_inverted_begin_block_keeps_its_tilde_and_inverts_its_body():
    # `~begin B end` runs ~B, so its inverse runs B: `~begin ~B end`
    assert_inverse("~begin\n x += 1\n y -= x\nend", "~begin\n y += x\n x -= 1\nend")


def test_inverted_begin_block_runs_backward():
    call = runner("function f(x, y)\n    ~begin\n        x += 1\n        y += x * 10\n"
                  "    end\nend\n\nfunction g(x, y)\n    y -= x * 10\n    x -= 1\nend\n")
    assert call("f", 5, 0)[0] == call("g", 5, 0)[0] == (4, -50)
    assert call("f", 4, -50, inverse=True)[0] == (5, 0)


def test_empty_body():
    assert invert_body(()) == ()
    assert invert_stmt(one("begin\nend")) == one("begin\nend")


# -------------------------------------------------------------------- @routine

def test_routine_segment_keeps_the_routine_and_inverts_the_middle():
    assert_inverse("@routine begin\n t ← 0\n t += x\nend\ny += t\nz -= t\n~@routine",
                   "@routine begin\n t ← 0\n t += x\nend\nz += t\ny -= t\n~@routine")


def test_routine_segments_are_items_of_the_reversed_list():
    assert_inverse("x += 1\n@routine begin\n t ← 0\nend\nINC(y)\n~@routine\nz += 2",
                   "z -= 2\n@routine begin\n t ← 0\nend\nDEC(y)\n~@routine\nx -= 1")


def test_nested_routine_pairs():
    assert_inverse(
        "@routine begin\n t ← x\nend\n"
        "INC(y)\n"
        "@routine begin\n u ← t\nend\n"
        "z += u\n"
        "~@routine\n"
        "NEG(y)\n"
        "~@routine",
        "@routine begin\n t ← x\nend\n"
        "NEG(y)\n"
        "@routine begin\n u ← t\nend\n"
        "z -= u\n"
        "~@routine\n"
        "DEC(y)\n"
        "~@routine")


def test_sequential_routine_pairs_swap_places():
    assert_inverse("@routine INC(x)\ny += x\n~@routine\n@routine INC(z)\ny -= z\n~@routine",
                   "@routine INC(z)\ny += z\n~@routine\n@routine INC(x)\ny -= x\n~@routine")


def test_routine_inside_a_compound_statement():
    assert_inverse("for i = 1:3\n @routine INC(x)\n y += x * i\n ~@routine\n z += 1\nend",
                   "for i = 3:-1:1\n z -= 1\n @routine INC(x)\n y -= x * i\n ~@routine\nend")


def test_routine_markers_alone_are_not_statements():
    routine, _, unroutine = body("@routine INC(x)\ny += x\n~@routine")
    with pytest.raises(InternalError):
        invert_stmt(routine)
    with pytest.raises(InternalError):
        invert_stmt(unroutine)


def test_routine_program_runs_backward():
    call = runner("function f(x, y)\n    @routine begin\n        t ← 0\n        t += x * x\n"
                  "    end\n    y += t\n    ~@routine\nend\n")
    assert call("f", 3, 1)[0] == (3, 10)
    assert call("f", 3, 10, inverse=True)[0] == (3, 1)


# ---------------------------------------------------------------------------- if

def test_if_swaps_pre_and_post():
    assert_inverse("if (x > 0, y > 0)\n y += 1\nend", "if (y > 0, x > 0)\n y -= 1\nend")


def test_if_without_post_keeps_its_condition():
    assert_inverse("if x > 0\n y += 1\n z += y\nend", "if x > 0\n z -= y\n y -= 1\nend")
    stmt = invert_stmt(one("if x > 0\n y += 1\nend"))
    assert stmt.branches[0].post is None


def test_if_tilde_post_is_the_same_as_no_post():
    assert one("if (x > 0, ~)\n y += 1\nend") == one("if x > 0\n y += 1\nend")


def test_if_elseif_else():
    assert_inverse(
        "if (x > 0, y > 0)\n y += 1\nelseif x < -5\n INC(z)\n NEG(z)\nelse\n y -= 2\n z += 1\nend",
        "if (y > 0, x > 0)\n y -= 1\nelseif x < -5\n NEG(z)\n DEC(z)\nelse\n z -= 1\n y += 2\nend")


# ------------------------------------------------------------------------- while

def test_while_swaps_pre_and_post():
    assert_inverse("while (k < n, k > 0)\n x += k\n INC(k)\nend",
                   "while (k > 0, k < n)\n DEC(k)\n x -= k\nend")


# -------------------------------------------------------------------------- from

def test_from_swaps_start_and_stop_and_inverts_both_parts():
    assert_inverse("from k == 0 do\n x += k\n INC(k)\nloop\n y -= 1\n NEG(y)\nuntil k == n",
                   "from k == n do\n DEC(k)\n x -= k\nloop\n NEG(y)\n y += 1\nuntil k == 0")


def test_from_without_loop_part():
    assert_inverse("from k == 0 do\n INC(k)\nuntil k == 3",
                   "from k == 3 do\n DEC(k)\nuntil k == 0")


def test_from_program_runs_backward():
    call = runner("function f(x, n)\n    k ← 0\n    from k == 0 do\n        INC(k)\n"
                  "    loop\n        x += k\n    until k == n\n    k → n\nend\n")
    assert call("f", 0, 5)[0] == (10, 5)
    assert call("f", 10, 5, inverse=True)[0] == (0, 5)


# --------------------------------------------------------------------------- for

def test_for_unit_step():
    assert_inverse("for i = a:b\n x += i\nend", "for i = b:-1:a\n x -= i\nend")


def test_for_negative_unit_step():
    assert_inverse("for i = a:-1:b\n x += i\nend", "for i = b:a\n x -= i\nend")


def test_for_literal_bounds():
    assert_inverse("for i = 1:10\n x += i\nend", "for i = 10:-1:1\n x -= i\nend")


def test_for_larger_step_starts_at_the_last_value_reached():
    # 0:2:9 visits 0, 2, 4, 6, 8: the inverse starts at 0 + 2 * ((9 - 0) // 2) = 8
    assert_inverse("for i = 0:2:9\n x += i\nend",
                   "for i = 0 + 2 * ((9 - 0) // 2):-2:0\n x -= i\nend")


def test_for_negative_step_starts_at_the_last_value_reached():
    assert_inverse("for i = a:-3:b\n x += i\nend",
                   "for i = a + -3 * ((b - a) // -3):3:a\n x -= i\nend")


def test_for_computed_step():
    assert_inverse("for i = a:c + 1:b\n x += i\nend",
                   "for i = a + (c + 1) * ((b - a) // (c + 1)):-(c + 1):a\n x -= i\nend")


def test_for_parallel_flag_is_kept():
    inverse = invert_stmt(one("@parallel for i = 0:3\n a[i] += 1\nend"))
    assert inverse.parallel and inverse.start == ast.IntLit(3)


FOR_PROGRAM = """
function literal(x)
    for i = {a}:{s}:{b}
        @safe print(i)
        x += i
    end
end

function computed(x, lo, step, hi)
    for i = lo:step:hi
        @safe print(i)
        x += i * i
    end
end
"""

RANGES = [(0, 1, 9), (0, 2, 9), (0, 2, 8), (1, 3, 10), (5, -1, 0), (9, -2, 0), (10, -3, -4),
          (0, 1, 0), (3, 1, 2), (3, 2, 0), (0, -1, 5), (0, -3, 2), (-4, 4, 4), (-7, 5, 20),
          (2, 7, 2), (2, 7, 8), (6, -4, -9), (0, 100, 50), (-5, 1, -5)]


def _visited(a: int, s: int, b: int) -> list[str]:
    stop = b + 1 if s > 0 else b - 1
    return [str(i) for i in range(a, stop, s)]


@pytest.mark.parametrize("a, s, b", RANGES)
def test_for_inverse_visits_the_reversed_index_sequence(a, s, b):
    def literal(n):
        return str(n) if n >= 0 else f"-{-n}"
    source = FOR_PROGRAM.format(a=literal(a), s=literal(s), b=literal(b))
    call = runner(source)
    expected = _visited(a, s, b)
    for name, args in (("literal", (0,)), ("computed", (0, a, s, b))):
        (x, *rest), forward = call(name, *args)
        assert forward == expected
        (back, *_), backward = call(name, x, *rest, inverse=True)
        assert backward == expected[::-1]
        assert back == 0
    # the printed inverse program (`rlang invert`) visits the same reversed sequence
    inverted = runner(format_program(invert_program(parse(source))))
    assert inverted("literal", 0)[1] == expected[::-1]
    assert inverted("computed", 0, a, s, b)[1] == expected[::-1]


@settings(max_examples=60, deadline=None)
@given(st.integers(-12, 12), st.integers(-5, 5).filter(bool), st.integers(-12, 12))
def test_for_inverse_visits_the_reversed_index_sequence_for_any_range(a, s, b):
    call = runner(FOR_PROGRAM.format(a=0, s=1, b=0))
    expected = _visited(a, s, b)
    (x, *rest), forward = call("computed", 0, a, s, b)
    assert forward == expected
    (back, *_), backward = call("computed", x, *rest, inverse=True)
    assert backward == expected[::-1] and back == 0


# -------------------------------------------------------- annotations and @safe

@pytest.mark.parametrize("source, expected", [
    ("@invcheckoff x += 1", "@invcheckoff x -= 1"),
    ("@inbounds INC(a[1])", "@inbounds DEC(a[1])"),
    ("@invcheckoff @inbounds x += 1", "@invcheckoff @inbounds x -= 1"),
    ("@invcheckoff for i = 1:2\n x += i\nend", "@invcheckoff for i = 2:-1:1\n x -= i\nend"),
])
def test_annotations_wrap_the_inverse(source, expected):
    assert_inverse(source, expected)


@pytest.mark.parametrize("source", [
    '@safe print("x =", x)', "@safe show(x, y)", '@safe assert(x > 0, "positive")',
])
def test_safe_is_its_own_inverse(source):
    stmt = one(source)
    assert invert_stmt(stmt) == stmt


# --------------------------------------------------------- functions, programs

PROGRAM = """
function g(x)
    x += 1
end

function f(x, y)
    g(x)
    y += x
end

function main()
    x ← 1
    y ← 2
    f(x, y)
end
"""


def test_invert_function_keeps_name_and_parameters():
    f = parse(PROGRAM).functions[1]
    inverse = invert_function(f)
    assert (inverse.name, inverse.params) == (f.name, f.params)
    assert inverse.body == body("y -= x\n~g(x)")
    assert invert_function(inverse) == f


def test_invert_program_leaves_main_and_is_an_involution():
    program = parse(PROGRAM)
    inverse = invert_program(program)
    assert inverse.functions[2] == program.functions[2]
    assert invert_program(inverse) == program


def test_invert_program_calls_between_inverted_functions_run_their_inverses():
    """Every function is replaced by its inverse under its own name, so the inverted f
    calls plain `g`, which now means ~g (main's calls likewise)."""
    call = runner(format_program(invert_program(parse(PROGRAM))))
    original = runner(PROGRAM)
    assert call("f", 10, 0)[0] == original("f", 10, 0, inverse=True)[0] == (9, -10)
    assert call("g", 5)[0] == (4,)


def test_invert_program_only_one_function():
    program = parse(PROGRAM)
    only = invert_program(program, "g")
    assert only.items == (invert_function(program.functions[0]),)
    with pytest.raises(KeyError):
        invert_program(program, "nope")


# ------------------------------------------------------------------------ spans

SPAN_SOURCES = [
    "x += 1", "x ^= y", "SWAP(x, y)", "INC(x)", "PUSH(s, x)", "ROT(x, y, θ)", "n ← 0", "n → 0",
    "@zeros i64 p q", "g(x)", "~g(x)", "begin\n x += 1\n INC(y)\nend",
    "~begin\n x += 1\n INC(y)\nend", "if (x > 0, y > 0)\n y += 1\nelseif x < 0\n y -= 1\nelse\n"
    " NEG(y)\nend", "while (k < n, k > 0)\n INC(k)\n x += k\nend",
    "from k == 0 do\n INC(k)\nloop\n x += k\nuntil k == n", "for i = 0:2:9\n x += i\n y -= i\nend",
    "for i = a:b\n x += i\nend", "@invcheckoff x += 1", '@safe print(x)',
]


def _spans(node, out):
    """(type name, span) of every statement, `if` arm and function in a tree."""
    if isinstance(node, tuple):
        for item in node:
            _spans(item, out)
        return out
    kinds = (ast.Update, ast.Instr, ast.Alloc, ast.Dealloc, ast.Zeros, ast.CallStmt,
             ast.Block, ast.Routine, ast.UnRoutine, ast.If, ast.IfBranch, ast.While, ast.From,
             ast.For, ast.Annotated, ast.Safe, ast.Function)
    if isinstance(node, kinds):
        out.append((type(node).__name__ if not isinstance(node, (ast.Alloc, ast.Dealloc))
                    else "Alloc/Dealloc", node.span))
        for name in node.__dataclass_fields__:
            if name != "span":
                _spans(getattr(node, name), out)
    return out


@pytest.mark.parametrize("source", SPAN_SOURCES)
def test_inverted_statement_keeps_its_span(source):
    stmt = one(source)
    inverse = invert_stmt(stmt)
    assert inverse.span == stmt.span
    assert stmt.span.line == 2          # a real span, not NO_SPAN
    # every nested statement keeps its own span too (as a multiset: order is reversed)
    key = lambda pair: (pair[0], pair[1].line, pair[1].col)    # noqa: E731
    assert sorted(_spans(inverse, []), key=key) == sorted(_spans(stmt, []), key=key)


def test_inverted_body_statements_keep_their_spans_in_reverse_order():
    stmts = body("x += 1\nINC(y)\nz ← x")
    assert [s.span for s in invert_body(stmts)] == [s.span for s in reversed(stmts)]


def test_routine_segment_keeps_spans():
    stmts = body("@routine INC(x)\ny += x\n~@routine")
    inverse = invert_body(stmts)
    assert [s.span for s in inverse] == [s.span for s in stmts]


def test_for_inverse_bounds_point_at_the_loop():
    loop = one("for i = 0:2:9\n x += i\nend")
    inverse = invert_stmt(loop)
    assert inverse.start.span == loop.span          # the computed last value
    assert inverse.stop.span == loop.start.span     # the old start, moved


def test_function_and_program_spans():
    program = parse(PROGRAM, "<test>")
    inverse = invert_program(program)
    assert inverse.span == program.span
    assert [f.span for f in inverse.functions] == [f.span for f in program.functions]


# ------------------------------------------------------------------- involution

INVOLUTION_SOURCES = SPAN_SOURCES + [
    "x *= y", "@zeros f64 p\n~@zeros f64 p", "for i = a:-3:b\n x += i\nend",
    "for i = a:c:b\n x += i\nend", "for i = 5:-1:0\n x += i\nend",
    "@routine begin\n t ← x\nend\n@routine INC(t)\ny += t\n~@routine\n~@routine",
    "if x > 0\n begin\n  y += 1\n end\nend",
]


@pytest.mark.parametrize("source", INVOLUTION_SOURCES)
def test_inverting_twice_gives_back_the_statements(source):
    stmts = body(source)
    assert invert_body(invert_body(stmts)) == stmts
    # also through text: print the inverse, parse it, invert it again
    fn = parse(f"function f(x, y, z, a, b, c, s, θ, k, n)\n"
               + "".join(f"    {line}\n" for line in source.split("\n")) + "end\n")
    inverse_text = format_program(invert_program(fn))
    assert invert_program(parse(inverse_text)) == fn


@pytest.mark.parametrize("bounds", ["k - 1:--1:1", "k:-(-1):1", "a:-(-2):b", "1:-1:k"])
def test_inverting_a_for_loop_twice_gives_it_back_whatever_its_step(bounds):
    # `--1` inverts to the unit step `-1`, which a second inversion took for a loop
    # of its own and rewrote the end bound
    program = parse(f"function f(x, k, a, b)\n    for j = {bounds}\n        x += j\n"
                    "    end\nend\n")
    assert invert_program(invert_program(program)) == program
