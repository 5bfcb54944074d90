"""Typing rules on type names, shared by the interpreter's operators and the lowering.

`promote(a, b)` is NumPy's promotion of two scalar types (LANGUAGE.md §3): bool is
absorbed by the other type, i32 ⊔ i64 = i64, f32 ⊔ f64 = f64, an integer with an
f32 gives an f64, complex wins.  `builtin_type(name, arg_types)` is the result type
of a registry function (the rules of rlang/interp/scalar_functions.py).
"""
from __future__ import annotations

from .errors import RlangError, RlangTypeError
from .values import with_article

#: Rank of the promotable scalar types.
RANK = {"bool": 0, "i32": 1, "i64": 2, "f32": 3, "f64": 4, "complex": 5}

#: The scalar types the compiled backends handle so far.
SUPPORTED_SCALARS = ("bool", "i32", "i64", "f32", "f64", "fixed", "ulog", "complex")


#: The operators on integers and bools only (LANGUAGE.md §3: `^` is xor, not power).
BITWISE_OPS = ("^", "&", "|", "<<", ">>")


def bitwise_operand_message(op: str, operand_type: str) -> str:
    """What is wrong with `a op b`, op one of BITWISE_OPS, when an operand has the type
    `operand_type` (not an integer or bool): the same words from the interpreter, at
    run time, and from the checker, where the type is plain in the source."""
    hint = "; did you mean `**`?" if op == "^" and operand_type in ("f64", "f32") else ""
    return f"`{op}` needs integers or bools, got {with_article(operand_type)}{hint}"


#: The scalar types that each one-operand instruction updates (LANGUAGE.md §3's
#: table: INC and DEC step integers, FLIP flips bools, CONJ conjugates complex
#: numbers; NEG negates every signed number).  docs/language-decisions.md
#: "Instructions on the types of §3" says why a float is refused by INC and CONJ.
INSTRUCTION_OPERANDS = {
    "NEG": ("i64", "i32", "f64", "f32", "fixed", "complex"),
    "INC": ("i64", "i32"), "DEC": ("i64", "i32"),
    "FLIP": ("bool",), "CONJ": ("complex",),
}

_INSTRUCTION_HINTS = {
    ("INC", "real"): "; INC and DEC step integers: add 1.0 with `+= 1.0`",
    ("DEC", "real"): "; INC and DEC step integers: subtract 1.0 with `-= 1.0`",
    ("CONJ", "real"): "; a real number is its own conjugate",
    ("NEG", "bool"): "; did you mean FLIP?",
    ("NEG", "ulog"): "; a ulog is never negative",
}


def instruction_operand_message(name: str, operand_type: str) -> str | None:
    """What is wrong with instruction `name` (a key of INSTRUCTION_OPERANDS) updating
    a scalar of type `operand_type`, or None when it may: the same words from the
    checker, the interpreter and the compiled backends."""
    allowed = INSTRUCTION_OPERANDS[name]
    if operand_type in allowed:
        return None
    kind = "real" if operand_type in ("f64", "f32", "fixed") else operand_type
    hint = _INSTRUCTION_HINTS.get((name, kind), "")
    wanted = {"INC": "an integer", "DEC": "an integer", "FLIP": "a bool",
              "CONJ": "a complex", "NEG": "a signed number"}[name]
    return f"{name} needs {wanted}, got {with_article(operand_type)}{hint}"


class BackendUnsupported(RlangError):
    """A construct or a type that a compiled backend does not handle (yet)."""


class CompiledTypeError(BackendUnsupported, RlangTypeError):
    """A type error found while lowering a whole function for a compiled backend.

    The compiled backends type every statement of a function, the interpreter only
    those it runs: `false || 5` is an error to both, `true || 5` only to the
    compiled ones (the interpreter never evaluates the `5`).  So this is a
    RlangTypeError where a compiled backend was asked for, and a refusal under
    "auto", whose interpreter then runs the call (and raises its own error where
    it reaches the ill-typed expression)."""

    def plain(self) -> RlangTypeError:
        """The same error as the interpreter's class: what a module whose compiled
        backend was asked for by name raises (rlang/api.py)."""
        return RlangTypeError(self.message, self.span, self.notes)


def promote(a: str, b: str) -> str:
    """NumPy's promotion of the scalar types `a` and `b` (names of `RANK`)."""
    if a == b:
        return "i64" if a == "bool" else a
    if a == "bool":
        return b
    if b == "bool":
        return a
    low, high = (a, b) if RANK[a] < RANK[b] else (b, a)
    if high == "f32" and low in ("i32", "i64"):
        return "f64"
    return high


def builtin_type(builtin, arg_types: list) -> str:
    """The result type of the registry function `builtin` on `arg_types` (real)."""
    integers = ("bool", "i32", "i64")
    if builtin.int_preserving and all(t in integers for t in arg_types):
        return "i32" if "i32" in arg_types and "i64" not in arg_types else "i64"
    if "f32" in arg_types and all(t in (*integers, "f32") for t in arg_types):
        return "f32"
    return "f64"
