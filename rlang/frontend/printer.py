"""AST → canonical rev source.

The printer is the inverse of the parser: for every tree `p` the parser can produce,
`parse(format_program(p)) == p` (spans are not compared), and printing is idempotent
(`format_program(parse(format_program(p))) == format_program(p)`).  `rlang invert`
and the REPL's `:inverse` print the trees the inverter builds with it.

Style: 4-space indentation, a blank line between top-level items, the Unicode arrows
`x ← e` / `x → e`, swaps as `SWAP(a, b)`, `@routine begin … end` always in its block
form, one space around every binary operator, and only the parentheses the grammar's
precedence requires (LANGUAGE.md §7).

Literals the parser never produces are printed as the nearest thing the language can
write; those trees do not round-trip exactly, only by value:

* negative numbers (`IntLit(-3)`) print as `-3` (parenthesised where a unary minus
  would be), which reads back as `Unary("-", IntLit(3))`;
* infinite and NaN floats print as the names `inf` / `nan` (`-inf` for -∞), which read
  back as `Name("inf")`;
* a TypeExpr prints its type (`f64`, `stack`, `f64[:]`, `stack{i64}`); only the plain
  scalar names and `stack` are expressions in the grammar;
* an ImagLit with an infinite or NaN coefficient prints as `inf * 1.0im`.

Expressions and statements are printed with explicit work stacks, not recursion, so any
depth of tree prints (the parser itself refuses nesting past a few hundred levels).
"""
from __future__ import annotations

import math

from . import ast
from ..values import format_float

INDENT = "    "

# ------------------------------------------------------------------ precedence

# Binding strength of each expression level, loosest first (rev.lark `?expr` chain).
_OR, _AND, _CMP, _BOR, _XOR, _BAND, _SHIFT, _ADD, _MUL, _UNARY, _POW, _POSTFIX = range(12)

_BINARY_LEVEL = {
    "||": _OR,
    "&&": _AND,
    "==": _CMP, "!=": _CMP, "<": _CMP, "<=": _CMP, ">": _CMP, ">=": _CMP,
    "|": _BOR,
    "^": _XOR,
    "&": _BAND,
    "<<": _SHIFT, ">>": _SHIFT,
    "+": _ADD, "-": _ADD,
    "*": _MUL, "/": _MUL, "//": _MUL, "%": _MUL,
    "**": _POW,
}

# Unicode / alternative spellings that the parser folds into the canonical ones.
_CANONICAL_OP = {"≠": "!=", "≤": "<=", "≥": ">=", "⊻": "^", "÷": "//"}


def _operand_levels(op: str, level: int) -> tuple[int, int]:
    """The least level the left and the right operand of `op` may have unparenthesised."""
    if level == _POW:
        return _POSTFIX, _UNARY                 # postfix ** unary_expr (right assoc)
    if level == _CMP:
        return _BOR, _BOR                       # bor_expr CMP_OP bor_expr (non-assoc)
    return level, level + 1                     # left associative


# ------------------------------------------------------------------ expressions

def format_expr(expr) -> str:
    """The source text of an expression, with the fewest parentheses that parse back."""
    return _expr(expr)[0]


def _children(expr) -> tuple:
    """The sub-expressions of `expr` that are printed by recursion, in order."""
    if isinstance(expr, ast.Binary):
        return (expr.left, expr.right)
    if isinstance(expr, ast.Unary):
        return (expr.operand,)
    if isinstance(expr, ast.Index):
        return (expr.base, *expr.indices)
    if isinstance(expr, ast.Field):
        return (expr.base,)
    if isinstance(expr, ast.ArrayLit):
        return tuple(expr.items)
    if isinstance(expr, ast.Call):
        return tuple(expr.args)
    return ()


def _expr(expr) -> tuple[str, int]:
    """(text, level) of an expression; `level` is how tightly the text binds.

    Iterative (an explicit stack) so that the deepest trees the parser accepts, and
    deeper ones an inverter may build, print without hitting Python's recursion limit.
    """
    results: list[tuple[str, int]] = []
    work: list[tuple[object, bool]] = [(expr, False)]
    while work:
        node, ready = work.pop()
        children = _children(node)
        if not ready and children:
            work.append((node, True))
            work.extend((child, False) for child in reversed(children))
            continue
        if children:
            parts = results[len(results) - len(children):]
            del results[len(results) - len(children):]
        else:
            parts = []
        results.append(_build(node, parts))
    return results[0]


def _paren(part: tuple[str, int], least: int) -> str:
    text, level = part
    return f"({text})" if level < least else text


def _join(parts) -> str:
    return ", ".join(text for text, _ in parts)


def _build(expr, parts: list) -> tuple[str, int]:
    """(text, level) of `expr` given the (text, level) of its `_children`."""
    if isinstance(expr, ast.Binary):
        op = _CANONICAL_OP.get(expr.op, expr.op)
        level = _BINARY_LEVEL.get(op)
        if level is None:
            raise ValueError(f"unknown binary operator {expr.op!r}")
        left, right = _operand_levels(op, level)
        return f"{_paren(parts[0], left)} {op} {_paren(parts[1], right)}", level
    if isinstance(expr, ast.Unary):
        if expr.op not in ("-", "!", "~"):
            raise ValueError(f"unknown unary operator {expr.op!r}")
        return f"{expr.op}{_paren(parts[0], _UNARY)}", _UNARY
    if isinstance(expr, ast.Index):
        return f"{_paren(parts[0], _POSTFIX)}[{_join(parts[1:])}]", _POSTFIX
    if isinstance(expr, ast.Field):
        return f"{_paren(parts[0], _POSTFIX)}.{expr.name}", _POSTFIX
    if isinstance(expr, ast.ArrayLit):
        return f"[{_join(parts)}]", _POSTFIX
    if isinstance(expr, ast.Call):
        return f"{expr.func}({_join(parts)})", _POSTFIX
    if isinstance(expr, ast.Name):
        return expr.id, _POSTFIX
    if isinstance(expr, ast.BoolLit):
        return ("true" if expr.value else "false"), _POSTFIX
    if isinstance(expr, ast.IntLit):
        value = int(expr.value)
        return str(value), (_UNARY if value < 0 else _POSTFIX)
    if isinstance(expr, ast.FloatLit):
        return _float(expr.value)
    if isinstance(expr, ast.ImagLit):
        value = float(expr.value)
        if not math.isfinite(value):
            return f"{_float(value)[0]} * 1.0im", _MUL
        text, level = _float(value)
        return text + "im", level
    if isinstance(expr, ast.StrLit):
        return format_string(expr.value), _POSTFIX
    if isinstance(expr, ast.TypeExpr):
        return format_type(expr.type), _POSTFIX
    raise TypeError(f"not an expression node: {expr!r}")


def _float(value) -> tuple[str, int]:
    """A float literal: its shortest text (values.format_float); inf/nan as names."""
    value = float(value)
    if math.isnan(value):
        return "nan", _POSTFIX
    if math.isinf(value):
        return ("inf", _POSTFIX) if value > 0 else ("-inf", _UNARY)
    text = format_float(value)
    if "." not in text and "e" not in text:       # repr always has one; be safe
        text += ".0"
    return text, (_UNARY if math.copysign(1.0, value) < 0 else _POSTFIX)


def _args(items) -> str:
    return ", ".join(format_expr(item) for item in items)


def format_string(value: str) -> str:
    """A string literal that the parser reads back as `value`."""
    out = []
    for char in value:
        if char == "\\":
            out.append("\\\\")
        elif char == '"':
            out.append('\\"')
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def format_type(t: ast.TypeRef) -> str:
    """`f64`, `f64[:,:]`, `stack{i64}`."""
    if t.is_stack:
        return f"stack{{{t.scalar}}}"
    if t.ndim:
        return f"{t.scalar}[{','.join(':' * t.ndim)}]"
    return t.scalar


# ------------------------------------------------------------------ statements

def format_stmt(stmt, indent: int = 0) -> str:
    """A statement at nesting level `indent` (4 spaces each); no trailing newline."""
    return "\n".join(_stmt_lines(stmt, indent))


def format_body(stmts: tuple, indent: int) -> str:
    """The statements of a body, one per line, at nesting level `indent`."""
    lines: list[str] = []
    for stmt in stmts:
        lines.extend(_stmt_lines(stmt, indent))
    return "\n".join(lines)


def _stmt_lines(stmt, indent: int) -> list[str]:
    """The lines of a statement.  Iterative, like `_expr`: a work stack holds finished
    lines (str) and statements still to expand (stmt, indent, prefix), where `prefix`
    collects the annotations (`@inbounds `…) written before the statement's first line."""
    lines: list[str] = []
    work: list = [(stmt, indent, "")]
    while work:
        item = work.pop()
        if isinstance(item, str):
            lines.append(item)
            continue
        node, level, prefix = item
        if isinstance(node, ast.Annotated):
            work.append((node.stmt, level, f"{prefix}@{node.annotation} "))
            continue
        pad = INDENT * level
        parts = _stmt_parts(node, pad + prefix, pad, level)
        work.extend(reversed(parts))
    return lines


def _body(stmts, level: int) -> list:
    return [(stmt, level + 1, "") for stmt in stmts]


def _stmt_parts(stmt, head: str, pad: str, level: int) -> list:
    """The lines of one statement, nested statements left as work items.  `head` is the
    indentation plus any annotations, for the first line; `pad` the plain indentation."""
    if isinstance(stmt, ast.Update):
        op = "^=" if stmt.op == "⊻=" else stmt.op
        return [f"{head}{format_expr(stmt.target)} {op} {format_expr(stmt.value)}"]
    if isinstance(stmt, ast.Instr):
        return [f"{head}{stmt.name}({_args(stmt.args)})"]
    if isinstance(stmt, ast.Alloc):
        return [f"{head}{stmt.name} ← {format_expr(stmt.value)}"]
    if isinstance(stmt, ast.Dealloc):
        return [f"{head}{stmt.name} → {format_expr(stmt.value)}"]
    if isinstance(stmt, ast.Zeros):
        tilde = "~" if stmt.inverse else ""
        return [f"{head}{tilde}@zeros {format_type(stmt.type)} {' '.join(stmt.names)}"]
    if isinstance(stmt, ast.CallStmt):
        tilde = "~" if stmt.inverse else ""
        return [f"{head}{tilde}{stmt.func}({_args(stmt.args)})"]
    if isinstance(stmt, ast.Derivative):
        tilde = "~" if stmt.inverse else ""
        targets = ", ".join(format_expr(t) for t in stmt.targets)
        return [f"{head}{tilde}{stmt.mode} {stmt.func}({_args(stmt.args)}) "
                f"wrt {', '.join(stmt.wrt)} into {targets}"]
    if isinstance(stmt, ast.Safe):
        return [f"{head}@safe {stmt.func}({_args(stmt.args)})"]
    if isinstance(stmt, ast.UnRoutine):
        return [f"{head}~@routine"]
    if isinstance(stmt, ast.Block):
        tilde = "~" if stmt.inverse else ""
        return [f"{head}{tilde}begin", *_body(stmt.body, level), f"{pad}end"]
    if isinstance(stmt, ast.Routine):
        return [f"{head}@routine begin", *_body(stmt.body, level), f"{pad}end"]
    if isinstance(stmt, ast.If):
        parts: list = []
        for number, branch in enumerate(stmt.branches):
            keyword = f"{head}if" if number == 0 else f"{pad}elseif"
            parts.append(f"{keyword} {_condition(branch.pre, branch.post)}")
            parts.extend(_body(branch.body, level))
        if stmt.orelse is not None:
            parts.append(f"{pad}else")
            parts.extend(_body(stmt.orelse, level))
        parts.append(f"{pad}end")
        return parts
    if isinstance(stmt, ast.While):
        cond = f"({format_expr(stmt.pre)}, {format_expr(stmt.post)})"
        return [f"{head}while {cond}", *_body(stmt.body, level), f"{pad}end"]
    if isinstance(stmt, ast.From):
        do = " do" if stmt.body or not stmt.step else ""   # `from e1 loop B until e2`
        parts = [f"{head}from {format_expr(stmt.start)}{do}", *_body(stmt.body, level)]
        if stmt.step:
            parts.append(f"{pad}loop")
            parts.extend(_body(stmt.step, level))
        parts.append(f"{pad}until {format_expr(stmt.stop)}")
        return parts
    if isinstance(stmt, ast.For):
        start, stop = format_expr(stmt.start), format_expr(stmt.stop)
        if stmt.step == ast.IntLit(1):
            rng = f"{start}:{stop}"
        else:
            rng = f"{start}:{format_expr(stmt.step)}:{stop}"
        parallel = "@parallel " if stmt.parallel else ""
        return [f"{head}{parallel}for {stmt.var} = {rng}", *_body(stmt.body, level),
                f"{pad}end"]
    raise TypeError(f"not a statement node: {stmt!r}")


def _condition(pre, post) -> str:
    if post is None:
        return format_expr(pre)
    return f"({format_expr(pre)}, {format_expr(post)})"


# ------------------------------------------------------------------ top level

def format_function(fn: ast.Function) -> str:
    """`[@inline ]function name(params)`, the body indented one level, `end`."""
    inline = "@inline " if fn.inline else ""
    params = ", ".join(_param(p) for p in fn.params)
    lines = [f"{inline}function {fn.name}({params})"]
    for stmt in fn.body:
        lines.extend(_stmt_lines(stmt, 1))
    lines.append("end")
    return "\n".join(lines)


def _param(param: ast.Param) -> str:
    if param.type is None:
        return param.name
    return f"{param.name}: {format_type(param.type)}"


def _item(item) -> str:
    if isinstance(item, ast.Function):
        return format_function(item)
    if isinstance(item, ast.Const):
        return f"const {item.name} = {format_expr(item.value)}"
    if isinstance(item, ast.Include):
        return f"include {format_string(item.path)}"
    raise TypeError(f"not a top-level item: {item!r}")


def format_program(program: ast.Program) -> str:
    """The whole program; items separated by a blank line, ending with a newline."""
    if not program.items:
        return ""
    return "\n\n".join(_item(item) for item in program.items) + "\n"
