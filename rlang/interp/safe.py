"""`@safe print(…)`, `@safe show(…)` and `@safe assert(…)`: irreversible side
effects that run the same way in both directions (LANGUAGE.md §6, §9).

print writes its arguments separated by spaces (strings as they are, values as rev
literals); show writes `a = 1, b = [2, 3]`; both to the interpreter's output
stream (stdout by default), one line each.  assert raises an RlangRuntimeError
when its condition is false, whatever the invcheck setting.
"""
from __future__ import annotations

import sys

from ..frontend import ast
from . import ops
from ..errors import RlangRuntimeError, RlangTypeError
from ..frontend.printer import format_expr
from ..values import format_value


def execute_safe(interp, stmt: ast.Safe, env) -> None:
    ev = interp.evaluator
    if stmt.func == "print":
        _write(interp, " ".join(_text(ev.eval(arg, env)) for arg in stmt.args))
    elif stmt.func == "show":
        _write(interp, ", ".join(f"{format_expr(arg)} = {_text(ev.eval(arg, env))}"
                                 for arg in stmt.args))
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


def _text(value) -> str:
    return value if isinstance(value, str) else format_value(value)


def _write(interp, line: str) -> None:
    out = interp.out if interp.out is not None else sys.stdout
    out.write(line + "\n")
