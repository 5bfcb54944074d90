"""Arguments written on the command line (and in a debugger's launch request): rev
literals read as Python values (LANGUAGE.md §9, §13).

In: the text of one argument and its position (for messages).  Out: `parse_argument`
gives an int, float, bool, complex, `ULog`, `Stack` or nested lists (an array: the
parameter's declared type decides its dtype), or raises an RlangError naming the
argument.
"""
from __future__ import annotations

import math
import re

import numpy as np

from .errors import ParseError, RlangError
from .frontend import ast
from .frontend.parser import parse_expression
from .interp.evaluate import Evaluator
from .numbers import ULog
from .values import Stack, array_from_nested, array_to_nested, format_value


def parse_argument(text: str, position: int):
    """A command-line argument: a rev literal (`2`, `-1.5`, `[1.0, 2.0]`, `true`), a
    stack (`stack[1.0, 2.0]`, bottom first, or `stack{f64}[]`: LANGUAGE.md §13), or
    a ulog beyond f64's range as it prints, `ulog(log = -1385.9)` (Note [Printing
    ulogs f64 cannot hold], rlang/values.py), alone or in an array."""
    stack = _STACK.fullmatch(text)
    if stack is not None:
        return _stack_argument(stack.group(1), stack.group(2), text, position)
    try:
        expr = parse_expression(_ULOG_LOG.sub(_ULOG_LOG_CALL + "(", text),
                                f"<argument {position}>")
    except ParseError as error:
        raise RlangError(f"argument {position} ({text!r}) is not a rev literal: "
                         f"{error.message}") from None
    if not _is_literal(expr, ulogs=True):
        raise RlangError(f"argument {position} ({text!r}) is not a literal; write numbers, "
                         "true/false, arrays like [1.0, 2.0] or complex numbers like 1.0+2.0im")
    try:
        return _literal_value(expr)
    except ValueError as error:
        raise RlangError(f"argument {position} ({text!r}): {error}") from None


#: `stack[…]` and `stack{T}[…]`
_STACK = re.compile(r"\s*stack\s*(?:\{\s*(\w+)\s*\})?\s*(\[.*\])\s*", re.DOTALL)


def _stack_argument(elem: str | None, items_text: str, text: str, position: int) -> Stack:
    items = parse_argument(items_text, position)
    if any(isinstance(item, list) for item in items):
        raise RlangError(f"argument {position} ({text!r}): a stack holds scalars, not arrays")
    if elem is None:
        if not items:
            raise RlangError(f"argument {position} ({text!r}): an empty stack needs its "
                             "element type, as in stack{f64}[]")
        elem = array_from_nested(items).dtype.name if not isinstance(items[0], ULog) \
            else "ulog"
        elem = {"float64": "f64", "int64": "i64", "complex128": "complex",
                "bool": "bool"}.get(elem, elem)
    try:
        return Stack(elem, items)
    except RlangError as error:
        raise RlangError(f"argument {position} ({text!r}): {error.message}") from None


#: `ulog(log = …)` in an argument, read as a call of this name (a ulog of that log)
_ULOG_LOG = re.compile(r"\bulog\s*\(\s*log\s*=")
_ULOG_LOG_CALL = "ulog_of_log"


def _literal_value(expr):
    """The value of a literal argument; arrays as nested lists (the parameter's
    declared type decides the dtype)."""
    match expr:
        case ast.Call(func=name, args=(log,)) if name == _ULOG_LOG_CALL:
            value = _literal_value(log)
            if isinstance(value, complex) or math.isnan(value):
                raise ValueError(f"the logarithm of a ulog is a real number, not "
                                 f"{format_value(value)}")
            return ULog(float(value))
        case ast.ArrayLit(items=items) if _holds_ulog_logs(expr):
            return [_literal_value(item) for item in items]
    value = Evaluator({}).eval(expr, {})
    if isinstance(value, np.ndarray):
        return array_to_nested(value)
    return value


def _holds_ulog_logs(expr) -> bool:
    if isinstance(expr, ast.ArrayLit):
        return any(_holds_ulog_logs(item) for item in expr.items)
    return isinstance(expr, ast.Call) and expr.func == _ULOG_LOG_CALL


def _is_literal(expr, ulogs: bool = False) -> bool:
    """Whether `expr` is a literal; with `ulogs`, `ulog(log = …)` may be one (an
    argument, or an item of an array argument)."""
    match expr:
        case ast.IntLit() | ast.FloatLit() | ast.ImagLit() | ast.BoolLit():
            return True
        case ast.Name(id=name):
            return name in ("inf", "nan", "pi")
        case ast.Unary(op="-", operand=operand):
            return _is_literal(operand)
        case ast.Binary(op="+" | "-", left=left, right=right):
            return _is_literal(left) and _is_literal(right)
        case ast.ArrayLit(items=items):
            return all(_is_literal(item, ulogs) for item in items)
        case ast.Call(func="complex", args=args):
            return all(_is_literal(arg) for arg in args)
        case ast.Call(func=name, args=(log,)) if ulogs and name == _ULOG_LOG_CALL:
            return _is_literal(log) and not isinstance(log, ast.ArrayLit)
    return False
