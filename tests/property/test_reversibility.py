"""Property tests of reversibility over generated programs (tests/property/generators.py).

For random well-formed programs over i64, bool, i64[:] and bool[:] (see the
generator's docstring for what they contain):

(a) running the top function forward and then its inverse `(~m.f)` gives back every
    input exactly, and so does inverse-then-forward; the `@safe print` trace of the
    inverse run is the forward trace reversed; turning invcheck off changes nothing;
(b) inversion is an involution, on the generated AST and on the AST parsed from its
    printed text, and inverted trees print and parse back unchanged and keep the
    spans of the statements they come from;
(c) the printed inverse program (`rlang invert`) parses, passes the checker and runs
    as the inverse of the original;
(d) the static checker accepts every generated program.

A failure prints the program and the arguments.  `RLANG_PROPERTY_SCALE=20` multiplies
the number of examples for a longer search.  The last section holds hand-written
cases of the open problems in PROBLEMS.md, marked xfail(strict=True).
"""
from __future__ import annotations

import io
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings

import rlang
from rlang.frontend import ast
from rlang.frontend.check import collect_errors
from rlang.frontend.invert import invert_function, invert_program
from rlang.frontend.loader import loads_unit
from rlang.frontend.parser import parse
from rlang.frontend.printer import format_program
from rlang.span import NO_SPAN

from generators import case_from_source, cases, main_calling, programs


#: Multiplies every example count, e.g. `RLANG_PROPERTY_SCALE=20` for a long search.
SCALE = float(os.environ.get("RLANG_PROPERTY_SCALE", "1"))


def _settings(n: int):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ------------------------------------------------------------------------- helpers

def copied(values) -> tuple:
    """Fresh copies of the arrays (the interpreter updates arrays in place)."""
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in values)


def same(actual, expected) -> bool:
    """Exactly the same values, types included (True is not 1)."""
    if len(actual) != len(expected):
        return False
    for a, e in zip(actual, expected):
        if isinstance(e, np.ndarray):
            if not (isinstance(a, np.ndarray) and a.dtype == e.dtype and np.array_equal(a, e)):
                return False
        elif type(a) is not type(e) or a != e:
            return False
    return True


def checked_unit(source: str, file: str):
    """The parsed unit of `source`, asserting that the checker accepts it."""
    unit = loads_unit(source, file)
    errors = collect_errors(unit)
    assert not errors, "\n".join(map(str, errors)) + f"\n--- {file} ---\n{source}"
    return unit


def run(module, name: str, args, inverse: bool = False):
    """(new argument values, lines printed by `@safe print/show`)."""
    out = io.StringIO()
    module.interpreter.out = out
    fn = module[name]
    result = (~fn if inverse else fn)(*copied(args))
    return result, out.getvalue().splitlines()


def describe(gp, args) -> str:
    return f"\n--- program (top: {gp.top}) ---\n{gp.source}--- arguments ---\n{args!r}"


# ------------------------------------------------------------------- (d) checker

@_settings(60)
@given(cases())
def test_checker_accepts_generated_programs(case):
    gp, _ = case
    checked_unit(gp.source, "<generated>")


# ------------------------------------------------------------- (a) reversibility

@_settings(100)
@given(cases())
def test_forward_then_inverse_restores_inputs(case):
    gp, args = case
    unit = checked_unit(gp.source, "<generated>")
    module = rlang.Module(unit)
    forward, trace = run(module, gp.top, args)
    back, inverse_trace = run(module, gp.top, forward, inverse=True)
    assert same(back, args), f"~f(f(x)) = {back!r}" + describe(gp, args)
    assert inverse_trace == trace[::-1], "the inverse does not retrace the forward run" \
        + describe(gp, args)

    # the inverse of a generated program is well formed too: f(~f(x)) == x
    backward, _ = run(module, gp.top, args, inverse=True)
    again, _ = run(module, gp.top, backward)
    assert same(again, args), f"f(~f(x)) = {again!r}" + describe(gp, args)

    # the checks of LANGUAGE.md §6 never change a result
    unchecked, unchecked_trace = run(rlang.Module(unit, invcheck=False), gp.top, args)
    assert same(unchecked, forward) and unchecked_trace == trace, describe(gp, args)


# ------------------------------------------------------------------ (b) involution

def _statement_spans(node, out: list) -> list:
    """The spans of every statement (and `if` arm) in a tree, in order."""
    stmt_types = (ast.Update, ast.Instr, ast.Alloc, ast.Dealloc, ast.Zeros, ast.CallStmt,
                  ast.Block, ast.Routine, ast.UnRoutine, ast.If, ast.IfBranch, ast.While,
                  ast.From, ast.For, ast.Annotated, ast.Safe)
    if isinstance(node, tuple):
        for item in node:
            _statement_spans(item, out)
    elif isinstance(node, stmt_types + (ast.Function, ast.Program)):
        if isinstance(node, stmt_types):
            out.append(node.span)
        for name in node.__dataclass_fields__:
            if name != "span":
                _statement_spans(getattr(node, name), out)
    return out


@_settings(80)
@given(programs())
def test_inversion_is_an_involution(gp):
    program = gp.program
    assert invert_program(invert_program(program)) == program, gp.source
    for fn in program.functions:
        assert invert_function(invert_function(fn)) == fn, gp.source

    parsed = parse(gp.source, "<generated>")
    assert parsed == program, "the generator's AST does not print and parse back\n" + gp.source
    assert invert_program(invert_program(parsed)) == parsed

    inverse = invert_program(parsed)
    text = format_program(inverse)
    reparsed = parse(text, "<inverse>")
    assert reparsed == inverse, "the printed inverse does not parse back\n" + text
    assert invert_program(reparsed) == parsed, "inverting the printed inverse\n" + text

    # inverted statements keep the spans of the statements they come from
    original_spans = _statement_spans(parsed, [])
    assert NO_SPAN not in original_spans
    assert sorted(_statement_spans(inverse, []), key=repr) == sorted(original_spans, key=repr)


# ------------------------------------------------------------ (c) printed inverse

def _check_printed_inverse(gp, args):
    inverse_source = format_program(invert_program(gp.program))
    original = rlang.Module(checked_unit(gp.source, "<generated>"))
    inverted = rlang.Module(checked_unit(inverse_source, "<inverse>"))
    expected, expected_trace = run(original, gp.top, args, inverse=True)
    actual, actual_trace = run(inverted, gp.top, args)
    assert same(actual, expected), (f"printed inverse gives {actual!r}, ~f gives {expected!r}"
                                    f"\n--- inverse source ---\n{inverse_source}"
                                    + describe(gp, args))
    assert actual_trace == expected_trace
    # and the inverse of the printed inverse is the original function
    forward, _ = run(original, gp.top, args)
    undone, _ = run(inverted, gp.top, args, inverse=True)
    assert same(undone, forward), describe(gp, args)

    # `main` is left as it is, so in the inverted program its call runs the inverse
    with_main = ast.Program(gp.program.items + (main_calling(gp, args),))
    main_source = format_program(invert_program(with_main))
    store = rlang.Module(checked_unit(main_source, "<inverse with main>")).run_main()
    assert same(tuple(value for _, value in store), expected), main_source


# `rlang invert FILE` replaces every function by its inverse under the same name, so a
# call `g(x)` in an inverted body must stay `g(x)` (the name g now runs ~g); flipping
# it to `~g(x)` would run the original g.  A hand-written case that shows it:
CALL_CASE = case_from_source(
    "function g(x: i64)\n    x += 1\nend\n\nfunction f(x: i64, y: i64)\n    g(x)\n"
    "    y += x\n    ~begin\n        g(y)\n    end\nend\n", "f", (10, 0))


@_settings(70)
@example(case=CALL_CASE)
@given(cases())
def test_printed_inverse_runs_as_inverse(case):
    _check_printed_inverse(*case)


# ------------------------------------------------------- regressions (PROBLEMS.md)

# The index expression of a view a statement writes reads memory that the same
# statement writes: the forward run would resolve the index before the write, the
# inverse after it, so they would touch different elements.  The checker refuses it.
WRITTEN_INDEX_CASES = {
    "update": "function f(a: i64[:])\n    a[a[0] % 3] += 1\nend\n",
    "INC": "function f(a: i64[:])\n    INC(a[a[0] % 3])\nend\n",
    "SWAP with a scalar": "function f(a: i64[:], x: i64)\n    SWAP(a[x % 3], x)\nend\n",
    "SWAP of two arrays": "function f(a: i64[:], b: i64[:])\n    SWAP(a[0], b[a[0] % 3])\nend\n",
    "call": "function g(y: i64, x: i64)\n    y += 5\n    x += 1\nend\n\n"
            "function f(a: i64[:], x: i64)\n    g(a[x % 3], x)\nend\n",
}


@pytest.mark.parametrize("case", WRITTEN_INDEX_CASES, ids=str)
def test_index_of_a_written_view_must_not_read_what_the_statement_writes(case):
    """PROBLEMS.md #1: such a statement is not reversible; the checker refuses it."""
    errors = collect_errors(loads_unit(WRITTEN_INDEX_CASES[case], "<case>"))
    assert errors, "accepted, but the inverse would update another element"


# `@invcheckoff` / `@inbounds` in front of a `@routine` or `~@routine` marker: the
# interpreter and the inverter pair only bare markers, so the parser refuses these.
ANNOTATED_ROUTINE_CASES = {
    "annotated @routine": "function f(x, y)\n    @invcheckoff @routine begin\n        x += 1\n"
                          "    end\n    y += x\n    ~@routine\nend\n",
    "annotated ~@routine": "function f(x, y)\n    @routine begin\n        x += 1\n    end\n"
                           "    y += x\n    @inbounds ~@routine\nend\n",
}


@pytest.mark.parametrize("case", ANNOTATED_ROUTINE_CASES, ids=str)
def test_annotated_routine_markers_are_refused(case):
    """PROBLEMS.md #2: they used to pass the checker and then fail at run time (and
    crash the inverter with an InternalError)."""
    source = ANNOTATED_ROUTINE_CASES[case]
    try:
        unit = loads_unit(source, "<case>")
    except rlang.ParseError as error:
        assert "routine marker" in error.message
        return
    assert collect_errors(unit), "accepted, but the interpreter cannot pair the markers"
