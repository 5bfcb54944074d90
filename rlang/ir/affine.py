"""Indices as a variable plus a constant: what the passes that reason about which
element a loop's pass touches (rlang/ir/onto_zeros.py, rlang/ir/guards.py) can
compare."""
from __future__ import annotations

from . import nodes as ir


def affine_index(e, written, index=None):
    """(base variable or None, integer offset) when `e` is an integer constant, or
    plus or minus one a variable not in `written` or the loop index `index`; else
    None."""
    e = ir.checks_peeled(e)
    if isinstance(e, ir.Const) and isinstance(e.value, int) and not isinstance(e.value, bool):
        return None, e.value
    if isinstance(e, ir.Read) and e.field is None and e.var.type in ("i64", "i32") and \
            (e.var is index or e.var not in written):
        return e.var, 0
    if isinstance(e, ir.Binary) and e.op in ("+", "-"):
        left = affine_index(e.left, written, index)
        right = affine_index(e.right, written, index)
        if left is None or right is None:
            return None
        if right[0] is None:
            return left[0], left[1] + right[1] if e.op == "+" else left[1] - right[1]
        if left[0] is None and e.op == "+":
            return right[0], left[1] + right[1]
    return None


def loop_direction(loop: ir.For) -> int:
    """+1 or -1 for a loop whose index moves by one each pass, 0 otherwise."""
    step = ir.unchecked(loop.reverse_of[1] if loop.reverse_of is not None else loop.step)
    if not isinstance(step, ir.Const) or step.value not in (1, -1) or \
            isinstance(step.value, bool):
        return 0
    return -step.value if loop.reverse_of is not None else step.value
