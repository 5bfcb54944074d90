"""LLVM IR for the instructions (SWAP NEG INC DEC FLIP ROT IROT HADAMARD), from the
registry's rules (Note [Instruction rules], rlang/primitives.py).

`emit_instr(em, stmt)` loads the places of an `ir.Instr`, runs the instruction's
forward rule on `LlvmNumber`s (LLVM values whose operators emit `fadd`/`add`, … for
their type) and stores what it returns.  A value the rule only moves (SWAP) is
stored as it was loaded; rules marked `in_f64` (ROT, IROT, HADAMARD) compute in f64
and round back, as the interpreter does.
"""
from __future__ import annotations

from llvmlite import ir as ll

from ...ir import nodes as ir
from ...numbers import ONE_RAW
from ...primitives import INSTRUCTION_TABLE
from .types import I1

_FLOATS = ("f32", "f64")


class LlvmNumber:
    """An LLVM value of representation type `t` (nodes.representation), held as
    loaded from memory (`stored`) or in its register form."""

    __slots__ = ("em", "value", "t", "stored")

    def __init__(self, em, value, t: str, stored: bool = False):
        self.em, self.value, self.t, self.stored = em, value, t, stored

    def register(self):
        return self.em.from_storage(self.value, self.t) if self.stored else self.value

    def storage(self):
        return self.value if self.stored else self.em.to_storage(self.value, self.t)

    def _operand(self, other):
        if isinstance(other, LlvmNumber):
            return other.register()
        return self.em.constant(other, self.t)          # a Python number of a rule

    def _op(self, float_op: str, int_op: str, other):
        b = self.em.builder
        op = getattr(b, float_op if self.t in _FLOATS else int_op)
        return LlvmNumber(self.em, op(self.register(), self._operand(other)), self.t)

    def __add__(self, other):
        return self._op("fadd", "add", other)

    def __sub__(self, other):
        return self._op("fsub", "sub", other)

    def __mul__(self, other):
        return self._op("fmul", "mul", other)

    def __neg__(self):
        b = self.em.builder
        x = self.register()
        return LlvmNumber(self.em, b.fneg(x) if self.t in _FLOATS else b.neg(x), self.t)


class LlvmVocabulary:
    """`v` of the rules: cos and sin from the C library; 1 of a fixed is its raw
    ONE_RAW (`fixed` tells whether the operands are fixed)."""

    def __init__(self, em, fixed: bool):
        self.em, self.fixed = em, fixed

    def cos(self, x: LlvmNumber) -> LlvmNumber:
        return LlvmNumber(self.em, self.em.call_math("cos", [x.register()]), "f64")

    def sin(self, x: LlvmNumber) -> LlvmNumber:
        return LlvmNumber(self.em, self.em.call_math("sin", [x.register()]), "f64")

    def one(self, x: LlvmNumber) -> LlvmNumber:
        return LlvmNumber(self.em, self.em.constant(ONE_RAW if self.fixed else 1, x.t), x.t)

    def not_(self, x: LlvmNumber) -> LlvmNumber:
        return LlvmNumber(self.em, self.em.builder.xor(x.register(), ll.Constant(I1, 1)), x.t)


def emit_instr(em, stmt: ir.Instr) -> None:
    """The code of one instruction statement (after its alias check, if any)."""
    places = stmt.places
    if stmt.alias_site is not None:
        same = ll.Constant(I1, 1)
        for a, b in zip(places[0].indices, places[1].indices):
            same = em.builder.and_(same, em.builder.icmp_signed(
                "==", em.expr(a), em.expr(b)))
        em.fail_if(same, stmt.alias_site, ())
    rule = INSTRUCTION_TABLE[stmt.name]
    t = ir.representation(places[0].type)
    pointers = [em.address(p) for p in places]
    loaded = [em.builder.load(p) for p in pointers]
    vocabulary = LlvmVocabulary(em, places[0].type == "fixed")
    if rule.in_f64:
        operands = [LlvmNumber(em, em.to_f64(x, t), "f64") for x in loaded]
        if stmt.angle is not None:
            operands.append(LlvmNumber(em, em.to_f64(em.expr(stmt.angle), t), "f64"))
        results = [em.from_f64(r.register(), t) for r in rule.apply(vocabulary, *operands)]
    else:
        operands = [LlvmNumber(em, x, t, stored=True) for x in loaded]
        results = [r.storage() for r in rule.apply(vocabulary, *operands)]
    for place, pointer, value in zip(places, pointers, results):
        em.claim(place)             # Note [Shared writes in compiled parallel loops]
        em.builder.store(value, pointer)
