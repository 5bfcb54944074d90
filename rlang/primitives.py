"""The registry of primitives: every built-in function and instruction, described once.

Each `Builtin` says how many arguments the function takes, how it is computed on
Python scalars (`forward`), and its partial derivatives (`partials`, used by the AD
driver).  Each `Instruction` says which instruction undoes it and how it updates its
operands.  Backends and the checker read these tables; nothing else re-lists the
built-ins (tests walk the tables and fail when a column is missing).

Scalars here are Python `int` (i64, wrapped by the caller), `bool` and `float`;
`complex_forward` is the function on a complex argument where it has one.
Integer-valued results of `floor`, `ceil`, `round` stay floats, as in Julia.
"""
from __future__ import annotations

import cmath
import math

import numpy as np

from . import complex_math
from .dual import Dual
from .ieee import rule_at
from .records import record
from dataclasses import replace
from typing import Callable


def _float_domain(fn: Callable[..., float], ieee: Callable | None = None) -> Callable[..., float]:
    """Wrap a `math` function to give IEEE results where `math` raises instead.

    `math` raises at poles, outside the domain and on overflow; there the NumPy ufunc
    `ieee` (same meaning) gives -inf, nan or ±inf as IEEE 754 says.  The fast path
    stays `math`'s."""

    def wrapped(*args):
        floats = [float(a) for a in args]
        try:
            return fn(*floats)
        except (ValueError, OverflowError, ZeroDivisionError):
            if ieee is None:
                return math.nan
            with np.errstate(all="ignore"):
                return float(ieee(*floats))

    wrapped.__name__ = getattr(fn, "__name__", "fn")
    return wrapped


def _sign_value(x):
    if isinstance(x, float) and math.isnan(x):
        return x
    value = (x > 0) - (x < 0)
    return float(value) if isinstance(x, float) else value


def _round_half_even(x):
    return float(round(float(x))) if math.isfinite(float(x)) else float(x)


def _abs(x):
    return abs(x)


def _min(a, b):
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return math.nan
    return a if a <= b else b


def _max(a, b):
    if isinstance(a, float) and math.isnan(a) or isinstance(b, float) and math.isnan(b):
        return math.nan
    return a if a >= b else b


def _atan(y, x=None):
    return math.atan(y) if x is None else math.atan2(y, x)


def _atan_ieee(y, x=None):
    return np.arctan(y) if x is None else np.arctan2(y, x)


# ------------------------------------------------- the vocabulary of the rules

def select(condition, then, otherwise):
    """`then()` where `condition` holds, else `otherwise()`.

    On numbers and dual numbers only the chosen branch is computed.  A symbolic
    condition (rlang/ad/symbolic.py, which has `select`) builds both branches and
    chooses at run time; this is how the partial-derivative rules branch without
    branching in Python."""
    if hasattr(condition, "select"):
        return condition.select(then(), otherwise())
    return then() if condition else otherwise()


def lift(name: str):
    """The one-argument built-in `name`, on floats, on Duals, or on symbolic
    expressions (anything with `apply_builtin`, rlang/ad/symbolic.py)."""

    def apply(x):
        builtin = BUILTINS[name]
        if hasattr(x, "apply_builtin"):
            return x.apply_builtin(name)
        if type(x) is not Dual:         # NumPy floats in (ieee.rule_at), NumPy floats out
            if type(x) is np.float64:
                return np.float64(builtin.forward(float(x)))
            return builtin.forward(x)
        (derivative,) = rule_at(builtin.partials, (x.a,))
        return Dual(builtin.forward(x.a), float(derivative) * x.b)

    apply.__name__ = name
    return apply


# Partial derivatives are written with these lifted functions so that they can be
# evaluated on dual numbers too (second derivatives, for Hessians): rlang/dual.py.
# They never branch in Python on a value: a choice is a lazy `select`, so that the
# same rules also build symbolic expressions for the compiled backends (ad/symbolic.py).
_sin, _cos, _tan, _sinh, _cosh, _tanh, _exp, _log, _sqrt, _sign, _floor = (
    lift(name) for name in ("sin", "cos", "tan", "sinh", "cosh", "tanh", "exp", "log", "sqrt",
                            "sign", "floor"))


@record
class Builtin:
    """A pure built-in function of expressions (LANGUAGE.md §7).

    `forward(*args)` computes it on numbers; `partials(*args)` returns the tuple of
    partial derivatives with respect to each argument (None where not differentiable
    or not a number).  `int_preserving` functions keep integer arguments integer.
    """

    name: str
    min_args: int
    max_args: int
    forward: Callable
    partials: Callable | None
    int_preserving: bool = False
    complex_forward: Callable | None = None     # the function on complex numbers, if any
    complex_derivative: Callable | None = None  # f'(z) where f is holomorphic


def _b(name, arity, forward, partials, int_preserving=False, max_args=None):
    return Builtin(name, arity, arity if max_args is None else max_args, forward, partials,
                   int_preserving)


_f = _float_domain
BUILTINS: dict[str, Builtin] = {b.name: b for b in [
    _b("sin", 1, _f(math.sin, np.sin), lambda x: (_cos(x),)),
    _b("cos", 1, _f(math.cos, np.cos), lambda x: (-_sin(x),)),
    _b("tan", 1, _f(math.tan, np.tan), lambda x: (1.0 + _tan(x) ** 2,)),
    _b("asin", 1, _f(math.asin, np.arcsin), lambda x: (1.0 / _sqrt(1.0 - x * x),)),
    _b("acos", 1, _f(math.acos, np.arccos), lambda x: (-1.0 / _sqrt(1.0 - x * x),)),
    _b("atan", 1, _f(_atan, _atan_ieee), lambda y, x=None: ((1.0 / (1.0 + y * y),) if x is None else
                                               (x / (x * x + y * y), -y / (x * x + y * y))),
       max_args=2),
    _b("sinh", 1, _f(math.sinh, np.sinh), lambda x: (_cosh(x),)),
    _b("cosh", 1, _f(math.cosh, np.cosh), lambda x: (_sinh(x),)),
    _b("tanh", 1, _f(math.tanh, np.tanh), lambda x: (1.0 - _tanh(x) ** 2,)),
    _b("exp", 1, _f(math.exp, np.exp), lambda x: (_exp(x),)),
    _b("log", 1, _f(math.log, np.log), lambda x: (1.0 / x,)),
    _b("log1p", 1, _f(math.log1p, np.log1p), lambda x: (1.0 / (1.0 + x),)),
    _b("expm1", 1, _f(math.expm1, np.expm1), lambda x: (_exp(x),)),
    _b("sqrt", 1, _f(math.sqrt, np.sqrt), lambda x: (0.5 / _sqrt(x),)),
    _b("cbrt", 1, _f(lambda x: math.copysign(abs(x) ** (1.0 / 3.0), x)),
       lambda x: (1.0 / (3.0 * abs(x) ** (2.0 / 3.0)),)),
    _b("abs", 1, _abs, lambda x: (_sign(x),), int_preserving=True),
    _b("abs2", 1, lambda x: x * x, lambda x: (2.0 * x,), int_preserving=True),
    _b("angle", 1, lambda x: _f(math.atan2)(0.0, x), lambda x: (0.0,)),
    _b("real", 1, lambda x: x, lambda x: (1.0,), int_preserving=True),
    _b("imag", 1, lambda x: 0 if isinstance(x, int) else 0.0, lambda x: (0.0,),
       int_preserving=True),
    _b("conj", 1, lambda x: x, lambda x: (1.0,), int_preserving=True),
    _b("min", 2, _min, lambda a, b: _first_or_second(a <= b), int_preserving=True),
    _b("max", 2, _max, lambda a, b: _first_or_second(a >= b), int_preserving=True),
    _b("floor", 1, lambda x: float(math.floor(x)) if math.isfinite(x) else float(x),
       lambda x: (0.0,)),
    _b("ceil", 1, lambda x: float(math.ceil(x)) if math.isfinite(x) else float(x),
       lambda x: (0.0,)),
    _b("round", 1, _round_half_even, lambda x: (0.0,)),
    _b("sign", 1, _sign_value, lambda x: (0.0,), int_preserving=True),
    _b("hypot", 2, _f(math.hypot, np.hypot),
       lambda a, b: (a / _sqrt(a * a + b * b), b / _sqrt(a * a + b * b))),
]}

#: The complex column: cmath's function of the same name where there is one, with
#: C99's values where cmath raises for exp, log and the functions made of sinh and
#: cosh (rlang/complex_math.py, Note [Complex overflow as C99 says]).
_COMPLEX_FORWARD = {
    "abs": abs, "abs2": lambda z: (z * z.conjugate()).real, "angle": cmath.phase,
    "real": lambda z: z.real, "imag": lambda z: z.imag, "conj": lambda z: z.conjugate(),
    **{name: getattr(cmath, name) for name in ("tan", "asin", "acos", "tanh", "sqrt")},
    **{name: getattr(complex_math, name) for name in ("sin", "cos", "sinh", "cosh", "exp",
                                                      "log")},
}
def _root_of_one_minus_square(z: complex) -> complex:
    """√(1 − z²) as cmath's asin computes it, √(1 − z)·√(1 + z) with the signs of
    zeros kept (1 − z has the imaginary part −im): on the branch cuts (real z past
    ±1) it is the root on the side the zero's sign picks, the side asin's value is
    on.  (1 − z·z loses that sign: the derivative at 4 + 0im came from the other side.)"""
    return cmath.sqrt(complex(1.0 - z.real, -z.imag)) * cmath.sqrt(complex(1.0 + z.real, z.imag))


#: The complex derivative of the holomorphic built-ins (the gradient rule multiplies
#: by its conjugate, see rlang/ad/gvar.py).
_COMPLEX_DERIVATIVE = {
    "sin": complex_math.cos, "cos": lambda z: -complex_math.sin(z),
    "tan": lambda z: 1 + cmath.tan(z) ** 2,
    "asin": lambda z: 1 / _root_of_one_minus_square(z),
    "acos": lambda z: -1 / _root_of_one_minus_square(z),
    "sinh": complex_math.cosh, "cosh": complex_math.sinh,
    "tanh": lambda z: 1 - cmath.tanh(z) ** 2, "exp": complex_math.exp, "log": lambda z: 1 / z, "sqrt": lambda z: 0.5 / cmath.sqrt(z),
}
BUILTINS = {name: replace(b, complex_forward=_COMPLEX_FORWARD.get(name),
                          complex_derivative=_COMPLEX_DERIVATIVE.get(name))
            for name, b in BUILTINS.items()}

def _first_or_second(first: bool):
    """The partials (1, 0) of min/max when the first argument is chosen, else (0, 1)."""
    return (select(first, lambda: 1.0, lambda: 0.0), select(first, lambda: 0.0, lambda: 1.0))


def complex_power(a, b) -> complex:
    """a ** b for complex numbers as rev computes it: CPython's, with its errors as
    values (0 to a negative or complex power is inf + nan·i, an overflow nan + nan·i,
    as the complex built-ins answer one)."""
    try:
        return complex(a) ** complex(b) if isinstance(b, complex) else complex(a) ** b
    except ZeroDivisionError:
        return complex(math.inf, math.nan)
    except OverflowError:
        return complex(math.nan, math.nan)


def _pow_partials(a, b):
    if isinstance(a, complex) or isinstance(b, complex):
        d_base = b * complex_power(a, b - 1) if b != 0 else 0.0
        return d_base, (complex_power(a, b) * cmath.log(a) if a != 0 else 0.0)
    return (select(b != 0, lambda: b * a ** (b - 1), lambda: 0.0),
            select(a > 0, lambda: a ** b * _log(a), lambda: 0.0))


#: Partial derivatives (∂/∂left, ∂/∂right) of the differentiable binary operators.
OPERATOR_PARTIALS: dict[str, Callable] = {
    "+": lambda a, b: (1.0, 1.0),
    "-": lambda a, b: (1.0, -1.0),
    "*": lambda a, b: (b, a),
    "/": lambda a, b: (1.0 / b, -a / (b * b)),
    "**": _pow_partials,
    "%": lambda a, b: (1.0, -_floor(a / b)),        # a - b·⌊a/b⌋, piecewise
    "//": lambda a, b: (0.0, 0.0),                  # piecewise constant
}

#: Built-ins whose arguments are arrays or types rather than numbers.  They are
#: evaluated by the interpreter itself; the table gives their arity (min, max).
STRUCTURAL_BUILTINS: dict[str, tuple[int, int]] = {
    "length": (1, 1),
    "size": (2, 2),
    "zero": (1, 1),
    "one": (1, 1),
    "zeros": (2, 64),
    "stack": (1, 1),
    "complex": (1, 2),
}

#: Conversions `T(x)`.
CONVERSIONS = ("f64", "f32", "i64", "i32", "fixed", "ulog", "bool")

#: `zeros(T, …)` and `stack(T)` may appear only as the value of an allocation.
ALLOCATION_ONLY = ("zeros", "stack")

#: The named constants of expressions.
CONSTANTS = {"pi": math.pi, "inf": math.inf, "nan": math.nan}


def is_builtin_function(name: str) -> bool:
    """True when `name(...)` in an expression is a built-in (not a user function)."""
    return name in BUILTINS or name in STRUCTURAL_BUILTINS or name in CONVERSIONS


def builtin_arity(name: str) -> tuple[int, int]:
    """(min, max) argument counts of the built-in `name`."""
    if name in BUILTINS:
        b = BUILTINS[name]
        return b.min_args, b.max_args
    if name in STRUCTURAL_BUILTINS:
        return STRUCTURAL_BUILTINS[name]
    if name in CONVERSIONS:
        return 1, 1
    raise KeyError(name)


# -------------------------------------------------------------------- instructions

# Note [Instruction rules]
# ~~~~~~~~~~~~~~~~~~~~~~~~
# Each instruction states its meaning once, here, and every consumer runs the same
# rule on its own kind of number (as the partial derivatives of built-ins are
# written once with `lift` and `select`):
#
# - `forward(v, *operands)` is the tuple of the new values of the written operands,
#   written with `+ - *`, unary `-`, Python floats, and the vocabulary `v`
#   (`v.cos`, `v.sin`, `v.one(x)`: 1 in x's type, `v.conj`, `v.not_`).  The
#   interpreter runs it on its values (interp/instructions.py), the gradient
#   interpreter on values and on gradients (ad/gradient_interpreter.py), the tangent
#   transform on dual IR expressions (ad/tangent_ir.py, ad/ir_numbers.py), the llvm
#   emitter on LLVM values and the cuda emitter on Python source text
#   (backends/llvm/instructions.py, backends/cuda/instructions.py).  ROT, IROT and
#   HADAMARD compute in f64 (`in_f64`): every consumer converts f32 operands first
#   and rounds the results back.  A rule's sums are written in the order all
#   consumers follow, since rounding makes the order visible (Note [Rotations of
#   dual numbers], ad/tangent_ir.py).  None for PUSH and POP, which move values
#   through a stack.
# - `gradient` says what the instruction does to the gradients of its written
#   operands where the gradient pass runs it: "linear": the forward rule itself,
#   applied to the gradients with the same read operands (SWAP NEG CONJ ROT IROT
#   HADAMARD are orthogonal maps, their own inverse transpose); "keep": nothing
#   (INC and DEC shift by a constant); "none": there is none (FLIP, on bools);
#   "moves": each gradient travels with its value (PUSH and POP; shadow stacks).
# - `read_gradient(values, gradients)` is the gradient the read operand receives
#   (ROT and IROT's angle), from the written operands' values and gradients before
#   the gradient pass runs the instruction (the adjoint transform runs it on IR,
#   ad/adjoint_ir.py); None where nothing is read.
# - the tangent rule is the forward rule on dual numbers: Duals in the
#   interpreter's Hessian, pairs of IR expressions in the tangent transform.
#
# tests/unit/test_instruction_registry.py walks this table and fails when a
# consumer has no handler for an entry.

#: √½, HADAMARD's factor.
SQRT_HALF = math.sqrt(0.5)


def _swap(v, a, b):
    return b, a


def _neg(v, x):
    return (-x,)


def _inc(v, x):
    return (x + v.one(x),)


def _dec(v, x):
    return (x - v.one(x),)


def _flip(v, x):
    return (v.not_(x),)


def _conj(v, z):
    return (v.conj(z),)


def _rot(v, a, b, theta):
    c, s = v.cos(theta), v.sin(theta)
    return c * a - s * b, s * a + c * b


def _irot(v, a, b, theta):
    c, s = v.cos(theta), v.sin(theta)
    return c * a + s * b, c * b - s * a


def _hadamard(v, a, b):
    return (a + b) * SQRT_HALF, (a - b) * SQRT_HALF


def _rot_angle(values, gradients):
    """∂L/∂θ of an executed ROT (which is a forward IROT): the torque g_a·b − g_b·a."""
    (a, b), (ga, gb) = values, gradients
    return ga * b - gb * a


def _irot_angle(values, gradients):
    return -_rot_angle(values, gradients)


#: What an instruction does to the gradients of its written operands (Note
#: [Instruction rules]).
GRADIENT_KINDS = ("linear", "keep", "none", "moves")


@record
class Instruction:
    """An instruction statement: operand count, which operands it writes, its inverse,
    and its rules (Note [Instruction rules])."""

    name: str
    arity: int
    written: tuple          # indices of the operands the instruction updates
    inverse: str
    description: str
    forward: Callable | None
    gradient: str
    read_gradient: Callable | None = None
    in_f64: bool = False    # f32 operands are computed in f64 and rounded back

    def apply(self, vocabulary, *operands) -> tuple:
        """The new values of the written operands (the forward rule)."""
        return self.forward(vocabulary, *operands)


INSTRUCTION_TABLE: dict[str, Instruction] = {i.name: i for i in [
    Instruction("SWAP", 2, (0, 1), "SWAP", "exchange two views", _swap, "linear"),
    Instruction("NEG", 1, (0,), "NEG", "x = -x", _neg, "linear"),
    Instruction("INC", 1, (0,), "DEC", "x = x + 1", _inc, "keep"),
    Instruction("DEC", 1, (0,), "INC", "x = x - 1", _dec, "keep"),
    Instruction("FLIP", 1, (0,), "FLIP", "b = !b", _flip, "none"),
    Instruction("CONJ", 1, (0,), "CONJ", "z = conj(z)", _conj, "linear"),
    Instruction("ROT", 3, (0, 1), "IROT", "rotate (a, b) by θ", _rot, "linear", _rot_angle,
                in_f64=True),
    Instruction("IROT", 3, (0, 1), "ROT", "rotate (a, b) by -θ", _irot, "linear",
                _irot_angle, in_f64=True),
    Instruction("HADAMARD", 2, (0, 1), "HADAMARD", "((a+b)/√2, (a-b)/√2)", _hadamard,
                "linear", in_f64=True),
    Instruction("PUSH", 2, (0, 1), "POP", "move x onto stack s; x becomes zero", None,
                "moves"),
    Instruction("POP", 2, (0, 1), "PUSH", "pop the top of s into x, which must be zero",
                None, "moves"),
]}

# ----------------------------------------------------------------- update operators

@record
class UpdateOperator:
    """An update statement's operator, `target op= value`, stated once: its inverse;
    `combines`, how the new target is made ("add", "subtract", "xor"; `*=` and `/=`
    are reversible on ulog only, where they add and subtract logarithms); and the
    gradient pass's rule (Note [Adjoints of executed statements],
    ad/gradient_interpreter.py): where the pass runs the operator (the forward ran
    its inverse), the value's leaves receive `seed_sign` times the target's
    gradient (divided by the value where `log_space` and the value is not a ulog);
    `differentiable` False: no gradient moves (`^=`, on integers and bools)."""

    op: str
    inverse: str
    combines: str
    seed_sign: float
    differentiable: bool = True
    log_space: bool = False


UPDATE_TABLE: dict[str, UpdateOperator] = {u.op: u for u in [
    UpdateOperator("+=", "-=", "add", -1.0),
    UpdateOperator("-=", "+=", "subtract", 1.0),
    UpdateOperator("*=", "/=", "add", -1.0, log_space=True),
    UpdateOperator("/=", "*=", "subtract", 1.0, log_space=True),
    UpdateOperator("^=", "^=", "xor", 0.0, differentiable=False),
]}

#: Names that are statements of `@safe`.
SAFE_FUNCTIONS = ("print", "show", "assert")
