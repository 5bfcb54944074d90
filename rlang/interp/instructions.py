"""Execution of the built-in instructions (SWAP NEG INC DEC FLIP CONJ ROT IROT
HADAMARD PUSH POP) by the interpreter.

`execute_instruction(interp, stmt, env)` resolves the operands of `stmt` to refs,
checks that written operands do not alias (while invcheck is on), and updates them.
Which operands are written and which instruction undoes which is the registry's
(`primitives.INSTRUCTION_TABLE`); this module only says how each one computes.
"""
from __future__ import annotations

import math

import numpy as np

from ..frontend import ast
from ..errors import ReversibilityError, RlangRuntimeError, RlangTypeError
from ..primitives import INSTRUCTION_TABLE, lift
from . import ops
from ..dual import Dual
from ..numbers import Fixed
from ..values import Stack, a_type, type_name, zero_of

_SQRT_HALF = math.sqrt(0.5)
_cos, _sin = lift("cos"), lift("sin")


def execute_instruction(interp, stmt: ast.Instr, env) -> None:
    info = INSTRUCTION_TABLE[stmt.name]
    if len(stmt.args) != info.arity:
        raise RlangTypeError(f"{stmt.name} takes {info.arity} operand(s), got {len(stmt.args)}",
                             stmt.span)
    ev = interp.evaluator
    refs = [ev.ref(stmt.args[i], env) for i in info.written]
    if interp.invcheck and len(refs) == 2 and refs[0].overlaps(refs[1]):
        raise ReversibilityError(f"{stmt.name} operands `{refs[0].text}` and `{refs[1].text}` "
                                 "are the same memory", stmt.span)
    _RUN[stmt.name](interp, stmt, env, refs)


def _number(value, name, stmt, kinds):
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise RlangTypeError(f"{name} cannot update {a_type(value)}", stmt.span)
    return value


def _swap(interp, stmt, env, refs):
    a, b = refs[0].get(), refs[1].get()
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        if a.shape != b.shape or a.dtype != b.dtype:
            raise RlangTypeError(f"SWAP needs arrays of one type and shape, got "
                                 f"{type_name(a)} {a.shape} and {type_name(b)} {b.shape}",
                                 stmt.span)
        saved = a.copy()
        a[...] = b
        b[...] = saved
        return
    if type_name(a) != type_name(b) or isinstance(a, (np.ndarray, Stack)):
        raise RlangTypeError(f"SWAP needs two values of one type, got {type_name(a)} and "
                             f"{type_name(b)}", stmt.span)
    refs[0].set(b)
    refs[1].set(a)


def _neg(interp, stmt, env, refs):
    x = _number(refs[0].get(), "NEG", stmt, (int, float, complex, Fixed, Dual))
    refs[0].set(ops.unary("-", x, stmt.span))


def _step(delta):
    def run(interp, stmt, env, refs):
        x = _number(refs[0].get(), stmt.name, stmt, (int, float, Fixed, Dual))
        one = Fixed.from_value(delta) if isinstance(x, Fixed) else \
            float(delta) if isinstance(x, Dual) else type(x)(delta)
        refs[0].set(ops.binary("+", x, one, stmt.span))
    return run


def _flip(interp, stmt, env, refs):
    x = refs[0].get()
    if not isinstance(x, bool):
        raise RlangTypeError(f"FLIP needs a bool, got {a_type(x)}", stmt.span)
    refs[0].set(not x)


def _conj(interp, stmt, env, refs):
    x = _number(refs[0].get(), "CONJ", stmt, (int, float, complex, Fixed, Dual))
    if isinstance(x, complex):          # the conjugate of a real number is itself
        refs[0].set(x.conjugate())


def _rotation(sign):
    def run(interp, stmt, env, refs):
        a, b = _float_pair(refs, stmt)
        theta = interp.evaluator.eval(stmt.args[2], env)
        if isinstance(theta, bool) or not isinstance(theta, (int, float, Dual)):
            raise RlangTypeError(f"{stmt.name} needs a real angle, got {a_type(theta)}",
                                 stmt.args[2].span)
        c, s = _cos(theta), sign * _sin(theta)
        refs[0].set(same_kind(a, c * a - s * b))
        refs[1].set(same_kind(a, s * a + c * b))
    return run


def same_kind(old, new):
    """`new` in the type of `old` (f32 stays f32; dual numbers stay dual)."""
    if type(new) is Dual or type(old) in (float, Dual):
        return new
    return type(old)(new)


def _float_pair(refs, stmt):
    """The two float operands of ROT/IROT/HADAMARD, which must be of one type."""
    a, b = refs[0].get(), refs[1].get()
    for value in (a, b):
        if not isinstance(value, (float, Dual)):
            raise RlangTypeError(f"{stmt.name} needs float operands, got {a_type(value)}",
                                 stmt.span)
    if type_name(a) != type_name(b):
        raise RlangTypeError(f"{stmt.name} needs two operands of one type, got {a_type(a)} "
                             f"and {a_type(b)}", stmt.span)
    return a, b


def _hadamard(interp, stmt, env, refs):
    a, b = _float_pair(refs, stmt)
    refs[0].set(same_kind(a, (a + b) * _SQRT_HALF))
    refs[1].set(same_kind(a, (a - b) * _SQRT_HALF))


def _stack_of(ref, stmt) -> Stack:
    stack = ref.get()
    if not isinstance(stack, Stack):
        raise RlangTypeError(f"{stmt.name} needs a stack as its first operand, got "
                             f"{a_type(stack)}", stmt.span)
    return stack


def _stack_operands(stmt, refs):
    """The stack and the scalar of PUSH/POP, checked to have matching types."""
    stack = _stack_of(refs[0], stmt)
    value = refs[1].get()
    if type_name(value) != stack.elem:
        raise RlangTypeError(f"{stmt.name} needs {a_type(zero_of(stack.elem))} to go with the "
                             f"stack{{{stack.elem}}} `{refs[0].text}`, got {a_type(value)}",
                             stmt.span)
    return stack, value


def _push(interp, stmt, env, refs):
    stack, value = _stack_operands(stmt, refs)
    stack.items.append(value)
    refs[1].set(zero_of(stack.elem))


def _pop(interp, stmt, env, refs):
    stack, value = _stack_operands(stmt, refs)
    if not stack.items:
        kind = ReversibilityError if interp.invcheck else RlangRuntimeError
        raise kind(f"POP from the empty stack `{refs[0].text}`", stmt.span)
    if interp.invcheck and value != zero_of(stack.elem):
        raise ReversibilityError(f"POP into `{refs[1].text}` = {value}, which must be zero",
                                 stmt.span)
    refs[1].set(stack.items.pop())


_RUN = {
    "SWAP": _swap, "NEG": _neg, "INC": _step(1), "DEC": _step(-1), "FLIP": _flip,
    "CONJ": _conj, "ROT": _rotation(1.0), "IROT": _rotation(-1.0), "HADAMARD": _hadamard,
    "PUSH": _push, "POP": _pop,
}
