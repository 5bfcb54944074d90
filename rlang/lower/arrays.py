"""Lowering of array ancillas and array-valued call arguments (LANGUAGE.md §5, §6).

The statements of `rlang/lower/statements.py` that make, free or pass whole arrays come here,
with the function lowering `fl` (its scope, sites and expression lowering):

- `array_alloc(fl, stmt)`: `a ← zeros(T, n…)`, `a ← [literal]` (constant elements:
  a copy of an `ir.ConstArray`; variable elements: zeros, then each element
  accumulated, `a[i] += e_i`, as a copy-in the gradient passes differentiate
  element by element, as the interpreter does), `a ← b` / `a ← K` (a copy of an
  array variable or a constant array: `Alloc(a, Read(b), dims of b)`);
- `array_dealloc(fl, stmt, var)`: the mirror images, the check comparing with zeros,
  a literal (variable elements are first subtracted again) or an array;
- `array_argument(fl, arg, k, callee, func)`: an array literal or a constant array
  passed to a call, as a temporary allocated before the call and deallocated (and
  checked unchanged) after it.  (before, argument, after) statement lists;
- `swap_arrays(fl, stmt, places)`: `SWAP(a, b)` of two whole arrays.

Returns IR statement lists; an array literal the interpreter would refuse is the
interpreter's RlangTypeError, a form the backends do not handle BackendUnsupported
with its span.
"""
from __future__ import annotations

import math

import numpy as np

from ..frontend import ast
from ..ir import nodes as ir
from ..errors import RlangTypeError
from .complex import as_pair, f64
from .expressions import convert
from ..types_rules import SUPPORTED_SCALARS, BackendUnsupported


def zeros_type(call: ast.Call) -> ast.TypeRef:
    """The element type of `zeros(T, n…)`; anything else as its first argument is the
    interpreter's type error (it reached the lowering as an internal error)."""
    first = call.args[0]
    if not isinstance(first, ast.TypeExpr):
        raise RlangTypeError("`zeros` needs a type (such as f64) as argument 1", first.span)
    return first.type


def array_alloc(fl, stmt: ast.Alloc) -> list | None:
    """The IR of an allocation whose value is an array (None: not an array form)."""
    value = stmt.value
    if isinstance(value, ast.Call) and value.func == "zeros":
        elem = zeros_type(value)
        if elem.ndim or elem.is_stack or elem.scalar not in SUPPORTED_SCALARS:
            raise BackendUnsupported("the compiled backends allocate zeros of scalar "
                                     "types only", value.span)

        dims = tuple(convert(fl.int_expr(d), "i64") for d in value.args[1:])
        var = _new(fl, stmt.name, ir.ArrayType(elem.scalar, len(dims), unit_stride=True))
        sites = (fl.error_site("zeros_memory", value.span, (elem.scalar, len(dims))),
                 *(fl.error_site("zeros", d.span) for d in value.args[1:]))
        return [ir.Alloc(var, None, dims, sites)]
    if isinstance(value, ast.ArrayLit):
        literal = _literal(fl, value)
        if isinstance(literal, ir.ConstArray):
            var = _new(fl, stmt.name, literal.type)
            return [ir.Alloc(var, literal, tuple(ir.Const(n, "i64") for n in literal.shape))]
        shape, elem, elements = literal
        var = _new(fl, stmt.name, ir.ArrayType(elem, len(shape), unit_stride=True))
        return [ir.Alloc(var, None, tuple(ir.Const(n, "i64") for n in shape))] + \
            _accumulate(var, elements, "+=")
    source = _array_named(fl, value)
    if source is not None:
        dims = tuple(ir.Dim(source, axis) for axis in range(source.type.ndim))
        return [ir.Alloc(_new(fl, stmt.name, source.type), ir.Read(source), dims)]
    return None


def array_dealloc(fl, stmt: ast.Dealloc, var: ir.Var) -> list:
    """`a → e` for an array ancilla `a`: e is zeros(…), a literal of a's type or an
    array variable of a's type.  With invcheck on, `a` must equal e, shape and all: a
    literal with variable elements is subtracted (so that gradients reach its
    elements) once a's extents are found to be the literal's; zeros' extents are
    evaluated (and checked) and compared with a's."""
    value, before, expected, shown, shape = stmt.value, [], None, None, ()
    zeros = isinstance(value, ast.Call) and value.func == "zeros"
    if isinstance(value, ast.ArrayLit):
        literal = _literal(fl, value)
        if isinstance(literal, ir.ConstArray):
            shown, literal = literal, _same_values_as(literal, var.type.elem)
        literal_type = literal.type if isinstance(literal, ir.ConstArray) else \
            ir.ArrayType(literal[1], len(literal[0]))
        if ir.kind(literal_type) != ir.kind(var.type):
            raise BackendUnsupported("deallocating an array with a literal of another "
                                     "type or rank", value.span)
        if isinstance(literal, ir.ConstArray):
            expected = literal
        else:                               # `a → [x, 2x]`: a − [x, 2x] must be zeros
            extents = literal[0]
            before = _accumulate(var, literal[2], "-=")
    elif _array_named(fl, value) is not None and \
            ir.kind(_array_named(fl, value).type) == ir.kind(var.type):
        expected = ir.Read(_array_named(fl, value))
    elif not zeros:
        raise BackendUnsupported("the compiled backends deallocate arrays with "
                                 "`zeros(T, n…)`, an array literal or an array of the "
                                 "same type", value.span)
    compared = None if zeros else _text(value)
    # what the check compares with, for its message (backends/errors.py, `_dealloc_array`): for
    # zeros, its element type and rank
    against = ("zeros", zeros_type(value).scalar, len(value.args) - 1) if zeros else \
        "literal" if before else "array" if isinstance(expected, ir.Read) else shown
    site = fl.site("dealloc_array", stmt.span, (stmt.name, compared, against,
                                                var.type.elem, var.type.ndim))
    if before:      # `a → [x, 2x]`: subtracted where the extents are the literal's
        return _subtract_literal(fl, stmt, var, extents, before) + \
            [ir.Dealloc(var, None, site)]
    if site is None:                        # invcheck off: nothing to compare
        return [ir.Dealloc(var, expected, None)]
    if zeros:
        shape = tuple(_checked_extent(fl, d) for d in value.args[1:])
    return [ir.Dealloc(var, expected, site, shape)]


def _subtract_literal(fl, stmt: ast.Dealloc, var: ir.Var, extents: tuple, subtract) -> list:
    """`a −= [x, 2x]` element by element (so that the gradient passes carry a's
    gradient to x) where a's extents are the literal's.  With invcheck on, other
    extents fail first (the interpreter's equality compares shapes); with it off,
    the subtraction is skipped (never a write past `a`)."""
    same = ir.Const(True, "bool")
    for axis, n in enumerate(extents):
        same = ir.Logic("&&", same, ir.Compare("==", ir.Dim(var, axis), ir.Const(n, "i64")))
    site = fl.site("dealloc_shape", stmt.span, (stmt.name, _text(stmt.value), extents))
    if site is None:
        return [ir.If((ir.Branch(same, same, tuple(subtract)),), (), None)]
    checked = ir.Var(f"{stmt.name}·extents", "i64")
    return [ir.Alloc(checked, ir.Checked(ir.Const(0, "i64"), same, site, tuple(
        ir.Dim(var, axis) for axis in range(min(var.type.ndim, 4))))),
        ir.Dealloc(checked, None, None)] + list(subtract)


def _checked_extent(fl, node):
    """An extent of `zeros(T, n…)`: an i64, checked not negative where evaluated."""

    extent = convert(fl.int_expr(node), "i64")
    return ir.Checked(extent, ir.Compare(">=", extent, ir.Const(0, "i64")),
                      fl.error_site("zeros", node.span), (extent,))


def array_argument(fl, arg, k: int, callee, func: str):
    """An array literal or constant array passed as argument k of `func`, as a
    temporary: (statements before the call, the argument, statements after it), or
    None when `arg` is not such an expression."""
    if isinstance(arg, ast.ArrayLit):
        literal = _literal(fl, arg)
    else:
        source = _array_named(fl, arg)
        if source is None:
            return None
        literal = None
    name = f"{callee.params[k].name}·arg"
    if literal is None or isinstance(literal, ir.ConstArray):
        value = ir.Read(source) if literal is None else literal
        var = ir.Var(name, value.type)
        dims = tuple(ir.Dim(source, a) for a in range(source.type.ndim)) if literal is None \
            else tuple(ir.Const(n, "i64") for n in literal.shape)
        before, undo = [ir.Alloc(var, value, dims)], []
    else:
        shape, elem, elements = literal
        var = ir.Var(name, ir.ArrayType(elem, len(shape), unit_stride=True))
        value = None
        before = [ir.Alloc(var, None, tuple(ir.Const(n, "i64") for n in shape))] + \
            _accumulate(var, elements, "+=")
        undo = _accumulate(var, elements, "-=")
    site = fl.site("argument_array", arg.span, (func, k, callee.params[k].name, _text(arg)))
    return before, ir.VarPlace(var), undo + [ir.Dealloc(var, value, site)]


def swap_arrays(fl, stmt: ast.Instr, places) -> list:
    """SWAP of two whole arrays: element by element, in loops over the axes, once
    their types and shapes are found equal (else the interpreter's RlangTypeError,
    which reports both shapes: at most four extents in all)."""
    a, b = (place.var for place in places)
    if a.type.ndim + b.type.ndim > 4:
        raise BackendUnsupported("the compiled backends swap whole arrays of up to two "
                                 "dimensions; loop over the elements", stmt.span)
    dims = tuple(ir.Dim(v, axis) for v in (a, b) for axis in range(v.type.ndim))
    alike = a.type.elem == b.type.elem and a.type.ndim == b.type.ndim
    same = ir.Const(alike, "bool")
    for axis in range(a.type.ndim if alike else 0):
        same = ir.Logic("&&", same, ir.Compare("==", ir.Dim(a, axis), ir.Dim(b, axis)))
    site = fl.error_site("swap_shape", stmt.span, (str(a.type), str(b.type),
                                                     a.type.ndim))
    checked = ir.Var("swap·count", "i64")
    check = [ir.Alloc(checked, ir.Checked(ir.Dim(a, None), same, site, dims)),
             ir.Dealloc(checked, None, None)]
    if not alike:                       # of two types: the check always fails
        return check
    index = [ir.Var(f"swap·{axis}", "i64") for axis in range(a.type.ndim)]
    reads = tuple(ir.Read(i) for i in index)
    fields = (0, 1) if a.type.elem == "complex" else (None,)
    body = tuple(ir.Instr("SWAP", (ir.ElemPlace(a, reads, None, f),
                                   ir.ElemPlace(b, reads, None, f))) for f in fields)
    for axis in reversed(range(a.type.ndim)):
        body = (ir.For(index[axis], ir.Const(0, "i64"), ir.Const(1, "i64"),
                       ir.Binary("-", ir.Dim(a, axis), ir.Const(1, "i64"), "i64"), body,
                       None, None),)
    return check + list(body)


# ------------------------------------------------------------------ helpers

def _new(fl, name: str, t) -> ir.Var:
    var = ir.Var(name, t)
    fl.scope[name] = var
    return var


def _array_named(fl, node) -> ir.Var | None:
    """The array variable (a local or a constant array) that a name denotes."""
    if not isinstance(node, ast.Name):
        return None
    var = fl.lookup_array(node.id)
    return var if var is not None and isinstance(var.type, ir.ArrayType) else None


def _literal(fl, node: ast.ArrayLit):
    """An array literal: an `ir.ConstArray` when its elements are constants, else
    (shape, element type, [(indices, lowered element)…]) with the interpreter's
    element-type rule (all of one type keep it; any complex → complex; any float →
    f64; integers and bools → i64)."""
    try:
        return fl.const_array(node)
    except BackendUnsupported:
        pass
    shape, leaves = _shape_and_leaves(node, ())
    elements = [(index, fl.expr(leaf)) for index, leaf in leaves]
    kinds = {value.type for _, value in elements}
    for kind in kinds:
        if not isinstance(kind, str):
            raise BackendUnsupported("array literals with array elements in compiled code",
                                     node.span)
    elem = _literal_scalar(kinds, node)
    if elem == "ulog":
        raise BackendUnsupported("ulog array literals with variable elements in compiled "
                                 "code", node.span)
    return shape, elem, [(index, _as_element(value, elem, node)) for index, value in elements]


#: The range of each integer element type.
_INTEGER_RANGES = {"i32": (-2 ** 31, 2 ** 31), "i64": (-2 ** 63, 2 ** 63)}


def _same_values_as(literal: ir.ConstArray, elem: str) -> ir.ConstArray:
    """A constant literal as an array of `elem` where every element keeps its value
    there (`f → [0.0, 1.5]` for an f32 array `f`, `a → [0, 0]` for an f64 one): the
    interpreter compares the values, which the compiled check then compares in
    `elem`.  Else the literal unchanged (refused by the caller as another type)."""
    reals = ("bool", "i32", "i64", "f32", "f64")
    if literal.elem == elem or literal.elem not in reals or elem not in reals:
        return literal
    values = []
    for value in literal.values:
        converted = _converted(value, elem)
        if converted is None:
            return literal
        values.append(converted)
    return ir.ConstArray(tuple(values), literal.shape, elem)


def _converted(value, elem: str):
    """`value` as an element of `elem` where that keeps it exactly, else None."""
    if elem in ("f32", "f64"):
        converted = float(np.float32(value)) if elem == "f32" else float(value)
        same = converted == value or (math.isnan(converted) and math.isnan(value))
        return converted if same else None
    if isinstance(value, float) and not value.is_integer():
        return None
    if elem == "bool":
        return bool(value) if value in (0, 1) else None
    low, high = _INTEGER_RANGES[elem]
    return int(value) if low <= value < high else None


def _shape_and_leaves(node, index: tuple):
    if not isinstance(node, ast.ArrayLit):
        return (), [(index, node)]
    parts = [_shape_and_leaves(item, index + (i,)) for i, item in enumerate(node.items)]
    shapes = {shape for shape, _ in parts}
    if len(shapes) > 1:
        raise RlangTypeError("the rows of an array literal must all have the same shape, got "
                             f"{', '.join(str(s) for s in sorted(shapes))}", node.span)
    inner = shapes.pop() if shapes else ()
    return (len(parts),) + inner, [leaf for _, leaves in parts for leaf in leaves]


def _literal_scalar(kinds: set, node) -> str:
    if len(kinds) == 1:
        return next(iter(kinds))
    if "complex" in kinds:
        return "complex"
    if kinds & {"f64", "f32"}:      # fixed and ulog elements too (rlang/values.py)
        return "f64"
    if kinds <= {"bool", "i64", "i32"}:
        return "i64"
    raise RlangTypeError(f"invalid array literal: an array cannot mix "
                         f"{', '.join(sorted(kinds))}", node.span)


def _as_element(value, elem: str, node):

    if elem == "complex":
        return as_pair(f64(value) if value.type in ("fixed", "ulog") else value,
                       "an array literal", node.span)
    if elem in ("fixed", "bool") or value.type == elem:
        return value
    return convert(value, elem)


def _accumulate(var: ir.Var, elements, op: str) -> list:
    """`var[index] op= value` for each element (bools: `^=`; complex: both parts)."""
    out = []
    for index, value in elements:
        indices = tuple(ir.Const(i, "i64") for i in index)
        if var.type.elem == "complex":
            out += [ir.Update(ir.ElemPlace(var, indices, None, f), op, part)
                    for f, part in ((0, value.re), (1, value.im))]
        else:
            out.append(ir.Update(ir.ElemPlace(var, indices, None),
                                 "^=" if var.type.elem == "bool" else op, value))
    return out


def _text(node) -> str:
    from ..frontend.printer import format_expr

    return format_expr(node)
