"""The lowering of updates (`+= -= ^= *= /=`): the part of a function's lowering
(rlang/lower/statements.py `_FunctionLowering`) that turns `target op= value` into
IR Updates, with the right-hand side converted for the target (Note [f32 updates])
and the run-time checks that it reads no element it writes."""
from __future__ import annotations

from dataclasses import replace

from ..errors import RlangTypeError
from ..frontend import ast
from ..frontend.ast import is_number_literal
from ..ir import nodes as ir
from .complex import as_pair
from .expressions import convert
from .systems import nonzero_divisor, nonzero_factor, to_system
from ..values import OVERFLOW_MESSAGE, with_article


class UpdateLowering:
    """`_update` and its helpers, mixed into the function lowering."""

    def _update(self, stmt: ast.Update) -> list:
        target = self.place(stmt.target)
        if isinstance(target.type, (ir.ArrayType, ir.StackType)):
            raise RlangTypeError(f"`{stmt.op}` updates scalars; `{_text(stmt.target)}` is "
                                 f"{with_article(ir.type_text(target.type))} (loop over its "
                                 "elements)", stmt.target.span)     # (the interpreter's)
        if target.type == "ulog":
            return [self.ulog_update(stmt, target)]
        if target.type == "complex":
            return self.complex_update(stmt, target)
        if stmt.op in ("*=", "/="):
            raise RlangTypeError(f"`{stmt.op}` is reversible only on ulog; the target is "
                                 f"{target.type}", stmt.span)
        value = self.expr(stmt.value, target.type if is_number_literal(stmt.value) else None)
        value = self.accumulated(stmt, target.type, value)
        if target.type == "i64" and stmt.op in ("+=", "-=") and \
                self.lowering.unit.integers == "unbounded":
            value = self.overflow_checked(stmt, target, value)
        checks = self.alias_checks(stmt.target, target, stmt.value)
        return [ir.Update(target, stmt.op, value, checks)]

    def overflow_checked(self, stmt, target, value):
        """The value of `x += v` / `x -= v` on an i64, failing where the new value of
        `x` would overflow (a unit whose integers are "unbounded": Janus, Note [Janus
        integers]): the wrapped result moved the way the sign of `v` says, or not."""
        old = ir.Read(target.var) if isinstance(target, ir.VarPlace) else \
            ir.Load(target.var, target.indices, target.site)
        adds = stmt.op == "+="
        result = ir.Binary("+" if adds else "-", old, value, "i64", None)
        moved = ir.Compare(">=" if adds else "<=", result, old)
        holds = ir.Compare("==", ir.Compare(">=", value, ir.Const(0, "i64")), moved)
        return ir.Checked(value, holds, self.error_site("message", stmt.span,
                                                        (OVERFLOW_MESSAGE,)))

    def ulog_update(self, stmt, target):
        """`l *= e` / `l /= e` on a ulog: its logarithm goes up or down by log e (the
        IR's Update of a ulog adds logarithms; Note [Number systems in the IR])."""
        text = _text(stmt.target)
        if stmt.op not in ("*=", "/="):
            raise RlangTypeError(f"`{stmt.op}` is not reversible on the ulog `{text}`",
                                 stmt.span,
                                 notes=("a ulog is updated by `*=` and `/=`; to add, write "
                                        "`l *= 1.0 + …` or use `l *= a + b` with ulog a and b",))
        value = self.expr(stmt.value, "ulog" if is_number_literal(stmt.value) else None)
        if value.type not in ("ulog", "fixed", "bool", "i32", "i64", "f32", "f64"):
            raise RlangTypeError(f"`{stmt.op}` on the ulog `{text}` needs a ulog or a "
                                 f"non-negative real, got {ir.type_text(value.type)}", stmt.span)
        value = to_system(self, value, "ulog", stmt.span)
        guard = nonzero_divisor if stmt.op == "/=" else nonzero_factor
        value = guard(self, value, stmt.span, (text,))
        checks = self.alias_checks(stmt.target, target, stmt.value)
        return ir.Update(target, "+=" if stmt.op == "*=" else "-=", value, checks)

    def complex_update(self, stmt, target) -> list:
        """`z += e` / `z -= e` on a complex place: one update per part."""
        if stmt.op not in ("+=", "-="):
            raise RlangTypeError(f"`{stmt.op}` cannot update the complex `{_text(stmt.target)}`",
                                 stmt.span)
        value = as_pair(self.expr(stmt.value), f"`{stmt.op}`", stmt.span)
        checks = self.alias_checks(stmt.target, target, stmt.value)
        return [ir.Update(part_place(target, 0), stmt.op, value.re, checks),
                ir.Update(part_place(target, 1), stmt.op, value.im)]

    def field_value(self, node: ast.Field):
        """`z.re` / `z.im` as an f64 expression."""
        place = self.place(node)
        if isinstance(place, ir.VarPlace):
            return ir.Read(place.var, place.field)
        return ir.Load(place.var, place.indices, place.site, place.field)

    def accumulated(self, stmt, target_type: str, value):
        """The right-hand side converted to the target's type (same_kind casting), or
        for an f32 target and a wider value, to f64.

        Note [f32 updates]: `x += v` on an f32 `x` with an f64 (or integer) `v` is
        computed as the interpreter does (rlang/interp/ops.py `_add_update`): in f64,
        rounded to f32 once.  Rounding `v` to f32 first rounds twice, which can
        differ in the last bit (`1 + (2^-24 + 2^-50)` is 1 + 2^-23, not 1).  So the
        IR's Update of an f32 place may carry an f64 value; the backends widen the
        old value, add, and round the sum."""
        if stmt.op == "^=":
            if target_type == "bool" and value.type != "bool" or \
                    target_type in ("i32", "i64") and value.type not in ("bool", "i32", "i64"):
                raise RlangTypeError(f"`^=` on the {target_type} target needs "
                                     f"{'a bool' if target_type == 'bool' else 'an integer'}, "
                                     f"got {value.type}", stmt.span)
            if target_type not in ir.INTEGER_TYPES:
                raise RlangTypeError(f"`^=` needs an integer or bool target, got {target_type}",
                                     stmt.span)
            return convert(value, target_type)
        if target_type == "bool":
            raise RlangTypeError(f"`{stmt.op}` cannot update the bool `{_text(stmt.target)}`; "
                                 "use `^=` or FLIP", stmt.span)
        if target_type == "fixed":
            if value.type not in ("fixed", "bool", "i32", "i64"):
                raise _mix_error(stmt, value, target_type, "fixed(x)")
            return to_system(self, value, "fixed", stmt.span)
        allowed = ("bool", "i32", "i64") if target_type in ("i32", "i64") else \
            ("bool", "i32", "i64", "f32", "f64")
        if value.type not in allowed:
            raise _mix_error(stmt, value, target_type, f"{target_type}(…)")
        if target_type == "f32" and value.type != "f32":
            return convert(value, "f64")        # Note [f32 updates]
        return convert(value, target_type)

    def alias_checks(self, target_node, target, value_node) -> tuple:
        """Run-time checks that no element read by the right-hand side is the target
        element: one (indices of the read, site) per read of the target's array."""
        if not isinstance(target, ir.ElemPlace) or not self.checks:
            return ()
        checks = []
        field = getattr(target, "field", None)
        for read, part in _index_reads(value_node):
            if field is not None and part is not None and part != ("re", "im")[field]:
                continue                    # the other part of a complex element
            root = ast.view_root(read)
            if root is not None and self.scope.get(root.id) is target.var:
                indices = tuple(self.index(i) for i in read.indices)
                checks.append((indices, self.site("alias", read.span,
                                                  (_text(target_node), _text(read)))))
        return tuple(checks)


def part_place(place, field: int):
    """The re (0) or im (1) part of a complex place."""
    return replace(place, field=field)


def _index_reads(node, part=None):
    """The `a[…]` nodes of an expression (including inside indices), each with the
    part of a complex element it reads (`re`, `im`, or None: all of it)."""
    if isinstance(node, ast.Field) and isinstance(node.base, ast.Index):
        yield from _index_reads(node.base, node.name)
        return
    if isinstance(node, ast.Index):
        yield node, part
        for i in node.indices:
            yield from _index_reads(i)
        return
    for child in _children(node):
        yield from _index_reads(child)


def _children(node):
    if isinstance(node, ast.Binary):
        return (node.left, node.right)
    if isinstance(node, ast.Unary):
        return (node.operand,)
    if isinstance(node, ast.Call):
        return node.args
    if isinstance(node, ast.Field):
        return (node.base,)
    return ()


def _mix_error(stmt, value, target_type: str, conversion: str) -> RlangTypeError:
    """The interpreter's error for a right-hand side the target cannot take
    (rlang/interp/ops.py `_mix_error`)."""
    return RlangTypeError(
        f"cannot accumulate {with_article(ir.type_text(value.type))} into the {target_type} "
        f"`{_text(stmt.target)}`; the result would not fit its type", stmt.span,
        notes=(f"convert the right-hand side explicitly, e.g. {conversion}",))


def _text(node) -> str:
    from ..frontend.printer import format_expr

    return format_expr(node)
