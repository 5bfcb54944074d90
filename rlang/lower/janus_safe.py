"""Janus's printing statements and `error` in compiled code (Note [Janus in rev's AST]).

`lower_janus_safe(fl, stmt)` lowers the `@safe` statement of a Janus unit: `error("m")`
becomes a check that always fails with jana's "User error: m"; `print`/`printf` and
`show` become an `ir.Print` whose site's kind is "janus print" / "janus show", which
`rlang.backends.errors.print_line` formats as jana does.  A printf whose format does
not fit its arguments' types -- known here -- fails where it stands, with jana's words,
as the interpreter's does.
"""
from __future__ import annotations

from ..frontend import ast
from ..frontend.janus.values import render_printf
from ..ir import nodes as ir


def _janus_type(t) -> str:
    if isinstance(t, ir.ArrayType):
        return "array"
    if isinstance(t, ir.StackType):
        return "stack"
    return "bool" if t == "bool" else "int"


def _failing(fl, message: str, span) -> list:
    return [ir.Assert(ir.Const(False, "bool"), fl.error_site("message", span, (message,)))]


def lower_janus_safe(fl, stmt: ast.Safe) -> list:
    if stmt.func == "assert":
        return _failing(fl, f"User error: {stmt.args[-1].value}", stmt.span)
    args = []
    for arg in stmt.args:
        if isinstance(arg, ast.StrLit):
            args.append((arg.value, None))
        else:
            args.append((arg.id, fl.expr(arg)))
    if stmt.func == "print":
        try:
            render_printf(args[0][0], [("", _janus_type(v.type)) for _, v in args[1:]])
        except ValueError as error:
            return _failing(fl, str(error), stmt.span)
    shape = tuple((text, None if value is None else value.type) for text, value in args)
    site = fl.module.add_site(ir.Site("print", stmt.span, fl.fn.name, fl.inverse,
                                      (f"janus {stmt.func}", shape)))
    return [ir.Print(stmt.func, tuple(args), site)]
