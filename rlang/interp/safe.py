"""`@safe print(…)`, `@safe show(…)` and `@safe assert(…)`: irreversible side
effects that run the same way in both directions (LANGUAGE.md §6, §9).

print writes its arguments separated by spaces (strings as they are, values as rev
literals); show writes `a = 1, b = [2, 3]`; both to the interpreter's output
stream (stdout by default), one line each.  assert raises an RlangRuntimeError
when its condition is false, whatever the invcheck setting.  Nothing else: no
`@safe` statement reads or writes a file or calls out, which the sandbox relies on
(rlang/interp/limits.py, Note [Sandbox]).
"""
from __future__ import annotations

import sys

import numpy as np

from ..frontend import ast
from . import ops
from .limits import TEXT_ITEM_BYTES
from ..errors import RlangRuntimeError, RlangTypeError
from ..frontend.janus.values import (format_janus_binding, format_janus_value,
                                     janus_type_name, render_printf)
from ..frontend.printer import format_expr
from ..values import Stack, format_value


def execute_safe(interp, stmt: ast.Safe, env) -> None:
    ev = interp.evaluator
    if interp.unit.dialect == "janus":
        _janus_safe(interp, stmt, env)
    elif stmt.func == "print":
        values = [ev.eval(arg, env) for arg in stmt.args]
        _charge_text(interp, values, stmt.span)
        _write(interp, " ".join(_text(value) for value in values))
    elif stmt.func == "show":
        values = [ev.eval(arg, env) for arg in stmt.args]
        _charge_text(interp, values, stmt.span)
        _write(interp, ", ".join(f"{format_expr(arg)} = {_text(value)}"
                                 for arg, value in zip(stmt.args, values)))
    elif stmt.func == "assert":
        if not 1 <= len(stmt.args) <= 2:
            raise RlangTypeError("assert takes a condition and an optional message", stmt.span)
        if not ops.truth(ev.eval(stmt.args[0], env), "an assert condition", stmt.args[0].span):
            message = f"assertion failed: {format_expr(stmt.args[0])}"
            if len(stmt.args) == 2:
                message += f": {_text(ev.eval(stmt.args[1], env))}"
            raise RlangRuntimeError(message, stmt.span)
    else:
        raise RlangTypeError(f"`@safe {stmt.func}` is not allowed; use print, show or assert",
                             stmt.span)


def _janus_safe(interp, stmt: ast.Safe, env) -> None:
    """jana's print/printf, show and error (Note [Janus in rev's AST])."""
    values = [interp.evaluator.eval(arg, env) for arg in stmt.args]
    if stmt.func == "assert":                   # error("…"): always fails
        raise RlangRuntimeError(f"User error: {values[-1]}", stmt.span)
    _charge_text(interp, values, stmt.span)
    if stmt.func == "show":
        _write(interp, ", ".join(format_janus_binding(arg.id, value)
                                 for arg, value in zip(stmt.args, values)))
        return
    try:
        _write(interp, render_printf(values[0], [(format_janus_value(v), janus_type_name(v))
                                                 for v in values[1:]]))
    except ValueError as error:
        raise RlangRuntimeError(str(error), stmt.span) from None


def _charge_text(interp, values, span) -> None:
    """In a sandbox, refuse to write arrays whose text would pass the memory limit
    (the text is built whole before it is written)."""
    if interp.budget is not None:
        count = sum(value.size if isinstance(value, np.ndarray) else
                    len(value.items) if isinstance(value, Stack) else 0 for value in values)
        interp.budget.check(count * TEXT_ITEM_BYTES, span, "the text of the output")


def _text(value) -> str:
    return value if isinstance(value, str) else format_value(value)


def _write(interp, line: str) -> None:
    out = interp.out if interp.out is not None else sys.stdout
    out.write(line + "\n")
