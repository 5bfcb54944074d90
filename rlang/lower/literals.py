"""Number literals against the types they meet in the compiled backends.

A literal adopts the type of what it is compared with or added to (`k → 0` with an
i64 `k` is the integer 0).  Where no value of that type equals the literal, the
conversion would change the program's meaning; such a program is refused here.
"""
from __future__ import annotations

import math

from ..frontend import ast
from ..frontend.ast import is_number_literal
from ..frontend.printer import format_expr
from ..ir import nodes as ir
from ..types_rules import CompiledTypeError
from ..values import with_article


def refuse_unequal_literal(stmt: ast.Dealloc, var: ir.Var) -> None:
    """An integer ancilla deallocated against a float literal that no integer equals
    (`k → 2.5`, `k → -1e309`) can never pass its check: refused, where converting the
    literal to the integer type would have truncated it and passed (found by
    tests/fuzz: llvm ran `k → -1e309` with k = 0; the interpreter's check failed)."""
    if var.type not in ("i64", "i32") or not is_number_literal(stmt.value):
        return
    literal = stmt.value.operand if isinstance(stmt.value, ast.Unary) else stmt.value
    if not isinstance(literal, ast.FloatLit):
        return
    value = float(literal.value)
    if not (math.isfinite(value) and value == int(value) and -2.0 ** 63 <= value < 2.0 ** 63):
        raise CompiledTypeError(f"`{stmt.name}` is {with_article(var.type)} and is deallocated "
                                f"against {format_expr(stmt.value)}, which no integer equals",
                                stmt.span)
