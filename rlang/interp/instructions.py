"""Execution of the built-in instructions (SWAP NEG INC DEC FLIP CONJ ROT IROT
HADAMARD PUSH POP) by the interpreter.

`execute_instruction(interp, stmt, env)` resolves the operands of `stmt` to refs,
checks that written operands do not alias (while invcheck is on), and updates them.
Which operands are written and which instruction undoes which is the registry's
(`primitives.INSTRUCTION_TABLE`); this module only says how each one computes.
"""
from __future__ import annotations

import numpy as np

from ..frontend import ast
from ..errors import ReversibilityError, RlangRuntimeError, RlangTypeError
from ..primitives import INSTRUCTION_TABLE, lift
from . import ops
from .limits import STACK_ITEM_BYTES
from ..dual import Dual
from ..numbers import F32, Fixed
from ..types_rules import instruction_operand_message
from ..values import Stack, a_type, type_name, zero_of

class Rev:
    """A value of the interpreter under the registry's instruction rules (Note
    [Instruction rules], rlang/primitives.py): its operators are rev's own
    (rlang/interp/ops.py: integers wrap, fixed rounds, Duals carry tangents)."""

    __slots__ = ("value", "span")

    def __init__(self, value, span):
        self.value, self.span = value, span

    def _other(self, other):
        return other.value if type(other) is Rev else other

    def __add__(self, other):
        return Rev(ops.binary("+", self.value, self._other(other), self.span), self.span)

    def __sub__(self, other):
        return Rev(ops.binary("-", self.value, self._other(other), self.span), self.span)

    def __mul__(self, other):
        return Rev(ops.binary("*", self.value, self._other(other), self.span), self.span)

    def __neg__(self):
        return Rev(ops.unary("-", self.value, self.span), self.span)


_cos, _sin = lift("cos"), lift("sin")


class Vocabulary:
    """`v` of the rules for the interpreter's values."""

    def cos(self, x: Rev) -> Rev:
        return Rev(_cos(x.value), x.span)

    def sin(self, x: Rev) -> Rev:
        return Rev(_sin(x.value), x.span)

    def one(self, x: Rev) -> Rev:
        v = x.value
        return Rev(Fixed.from_value(1) if isinstance(v, Fixed) else
                   1.0 if isinstance(v, Dual) else type(v)(1), x.span)

    def conj(self, x: Rev) -> Rev:
        return Rev(x.value.conjugate() if isinstance(x.value, complex) else x.value, x.span)

    def not_(self, x: Rev) -> Rev:
        return Rev(not x.value, x.span)


VOCABULARY = Vocabulary()


class PlainVocabulary:
    """`v` of the rules for plain Python numbers with Python's operators (floats,
    complex numbers, Duals, NumPy floats): how the gradient interpreter moves
    gradients by a "linear" rule."""

    def cos(self, x):
        return _cos(x)

    def sin(self, x):
        return _sin(x)

    def one(self, x):
        return 1.0

    def conj(self, x):
        return complex(x).conjugate()

    def not_(self, x):
        return not x


PLAIN = PlainVocabulary()


def apply_rule(name: str, operands: list, span) -> list:
    """The new values of the written operands of instruction `name` (its registry
    rule run on the interpreter's values; f32 operands of ROT, IROT and HADAMARD are
    computed in f64 and rounded back, as the compiled backends do)."""
    rule = INSTRUCTION_TABLE[name]
    wrapped = [Rev(float(x) if rule.in_f64 and type(x) is F32 else x, span) for x in operands]
    return [r.value for r in rule.apply(VOCABULARY, *wrapped)]


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
    INSTRUCTION_HANDLERS[stmt.name](interp, stmt, env, refs)


def _swap(interp, stmt, env, refs):
    """Whole arrays element by element; otherwise the registry's rule."""
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
    new_a, new_b = apply_rule("SWAP", [a, b], stmt.span)
    refs[0].set(new_a)
    refs[1].set(new_b)


def _one_operand(interp, stmt, env, refs):
    """NEG, INC, DEC, FLIP and CONJ, on the types of types_rules.INSTRUCTION_OPERANDS."""
    x = refs[0].get()
    wrong = instruction_operand_message(stmt.name, type_name(x))
    if wrong:
        raise RlangTypeError(wrong, stmt.span)
    refs[0].set(*apply_rule(stmt.name, [x], stmt.span))


def _rotation(interp, stmt, env, refs):
    """ROT and IROT."""
    a, b = _float_pair(refs, stmt)
    theta = angle_of(interp.evaluator, stmt, env)
    new_a, new_b = apply_rule(stmt.name, [a, b, theta], stmt.span)
    refs[0].set(same_kind(a, new_a))
    refs[1].set(same_kind(a, new_b))


def angle_of(evaluator, stmt, env):
    """The angle of ROT / IROT, which must be real."""
    theta = evaluator.eval(stmt.args[2], env)
    if isinstance(theta, bool) or not isinstance(theta, (int, float, Dual)):
        raise RlangTypeError(f"{stmt.name} needs a real angle, got {a_type(theta)}",
                             stmt.args[2].span)
    return theta


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
    new_a, new_b = apply_rule("HADAMARD", [a, b], stmt.span)
    refs[0].set(same_kind(a, new_a))
    refs[1].set(same_kind(a, new_b))


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
    if interp.budget is not None:
        interp.budget.reserve(STACK_ITEM_BYTES, stmt.span, "a PUSH")
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
    if interp.budget is not None:
        interp.budget.release(STACK_ITEM_BYTES)


#: The interpreter's handler of each instruction of the registry: the type checks
#: and errors of the interpreter around the registry's rule (stacks: their moves).
INSTRUCTION_HANDLERS = {
    "SWAP": _swap, "NEG": _one_operand, "INC": _one_operand, "DEC": _one_operand,
    "FLIP": _one_operand, "CONJ": _one_operand, "ROT": _rotation, "IROT": _rotation, "HADAMARD": _hadamard,
    "PUSH": _push, "POP": _pop,
}
