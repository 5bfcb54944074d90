"""The types of Janus expressions, and jana's type errors, found before running.

`expr_type(node, scope, fail, file)` returns the type of a Janus expression tree --
"int", "bool", "array", "stack", or None where an error was reported -- calling
`fail(message, span)` for each type error in it.  `scope` maps a variable's name to
its `JDecl` (its kind: "int", "array" or "stack", and an array's size when declared).
`expect(node, wanted, …)` checks that an expression has type `wanted`.  The wording
and the position are jana's (Note [Janus types]).
"""
from __future__ import annotations

from .parser import tree_span, token_span

# Note [Janus types]
# ~~~~~~~~~~~~~~~~~~
# jana checks types while it runs, but every type in Janus is known from the text: a
# variable is an int, an array or a stack by its declaration; `< <= > >= = !=`,
# `&& || !`, `empty` and `true`/`false` are bools; everything else is an int.  So the
# front end reports jana's type errors before the run, with jana's words ("Couldn't
# match expected type `int' with actual type `bool'") at the operand jana points at
# (the left operand of a binary operator when both are wrong).  The difference from
# jana: a type error in code that never runs is reported too.  Without this, rev's
# interpreter would let a comparison be added to an int (a bool is an integer to
# NumPy) where jana refuses it.

_ARITHMETIC = ("+", "-", "*", "/", "%", "&", "|", "^")
_RELATIONAL = ("<", "<=", ">", ">=", "=", "!=")


def mismatch(expected, actual: str) -> str:
    wanted = " or ".join(f"`{t}'" for t in expected)
    return f"Couldn't match expected type {wanted} with actual type `{actual}'"


def expect(node, wanted: str, scope, fail, file: str) -> None:
    actual = expr_type(node, scope, fail, file)
    if actual is not None and actual != wanted:
        fail(mismatch([wanted], actual), tree_span(file, node))


def var_type(token, scope) -> str | None:
    decl = scope.get(str(token))
    return None if decl is None else decl.kind


def expr_type(node, scope, fail, file: str) -> str | None:
    kind, ch = node.data, node.children
    if kind == "binary":
        left, op, right = ch
        op = str(op)
        if op in ("&&", "||"):
            expect(left, "bool", scope, fail, file)
            expect(right, "bool", scope, fail, file)
            return "bool"
        for operand in (left, right):
            actual = expr_type(operand, scope, fail, file)
            if actual is not None and actual != "int":
                fail(mismatch(["int"], actual), tree_span(file, operand))
                return None
        return "bool" if op in _RELATIONAL else "int"
    if kind == "not_":
        expect(ch[0], "bool", scope, fail, file)
        return "bool"
    if kind in ("number", "top", "size"):
        if kind != "number":
            wanted = ("stack",) if kind == "top" else ("array", "stack")
            actual = var_type(ch[0], scope)
            if actual is not None and actual not in wanted:
                fail(mismatch(wanted, actual), token_span(file, ch[0]))
        return "int"
    if kind in ("true", "false"):
        return "bool"
    if kind == "empty":
        actual = var_type(ch[0], scope)
        if actual is not None and actual != "stack":
            fail(mismatch(["stack"], actual), token_span(file, ch[0]))
        return "bool"
    if kind == "nil":
        return "stack"
    if kind == "var":
        return var_type(ch[0], scope)
    return lookup_type(node, scope, fail, file)


def lookup_type(node, scope, fail, file: str) -> str | None:
    """The type of `a[i]` (an int), reporting a non-array `a` or a non-int `i`."""
    name, index = node.children
    expect(index, "int", scope, fail, file)
    actual = var_type(name, scope)
    if actual is not None and actual != "array":
        fail(mismatch(["array"], actual), token_span(file, name))
        return None
    return "int"
