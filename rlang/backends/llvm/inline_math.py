"""Math functions as LLVM IR of the module itself, which LLVM inlines and
vectorises: `exp`.

Note [An exp LLVM can vectorise]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A call of the C library's `exp` is opaque to LLVM: a loop that calls it runs one
call a pass (about 15 ns with the call), and it does not vectorise.  GradBench's
lse spent half its time in glibc's exp, and JAX, whose exp is a polynomial XLA
vectorises, was 2.5x faster on it.  `exp` is therefore emitted as a function of
the module (internal, always inlined) of plain floating-point operations:

- x = k·ln 2 + r with k = roundeven(x · log2 e) and |r| ≤ ln 2 / 2, r computed
  with two fused multiply-adds on a two-part ln 2 (fdlibm's ln2_hi has zeros in
  its low bits, so k · ln2_hi is exact);
- e^r = 1 + (r + r² · p(r)), p the Taylor polynomial of (e^r − 1 − r)/r² to
  degree 11 (truncation error below 5e-18 relative), by Estrin's scheme: a tree of
  fused multiply-adds four deep, where Horner's rule would be a chain of eleven
  (in GMM's logsumexp over 25 components, between a maximum and a log, the chain's
  latency made the objective 5 % slower than with glibc's exp);
- e^x = (e^r · 2^k1) · 2^k2 with k1 = k >> 1 and k2 = k − k1, so that neither power
  leaves the normal range and a subnormal result is rounded once; the integer k is
  taken from the bits of k + 1.5·2^52 (exact, |k| ≤ 1077), not by `fptosi`, which
  AVX2 has no vector instruction for: LLVM made it four scalar conversions and the
  shuffles to gather them, a sixth of the vector loop's instructions;
- x above 709.78271289338397 gives +inf, below −745.13321910194122 gives 0, NaN
  gives itself.

The result is within one unit in the last place of the exact value (the tests
compare it with glibc's over the whole range, subnormal results included); it can
differ from the C library's in the last bit, which LANGUAGE.md allows between
backends (DESIGN.md: floats agree to a tolerance).  What matters for reversibility
is that it is one function: the fused multiply-adds are `llvm.fma` calls, never
contractions LLVM may or may not make, so a vector lane computes the same bits as
the scalar code of a loop's remainder, and a forward loop and its inverse, however
each is vectorised, add and subtract the same values.

A loop that sums exps of a program's own values (`z += exp(x[i] - m)`, lse's and
GMM's logsumexp) vectorises only if its sum may be vectorised: the sum's order is
the program's, and LLVM reorders a sum only where it may (`reassoc`, Note
[Reassociable gradient sums]).  Our modules are therefore optimised with
`-force-ordered-reductions` (backends/llvm/jit.py): the vector loop computes four
exps at a time and adds them to the sum one after the other, in program order, so
the sum is the scalar code's to the bit.  lse (n = 160,000): primal 1.4 → 0.6 ms,
gradient 2.3 → 1.2 ms.
"""
from __future__ import annotations

import math

from llvmlite import ir as ll

from .types import F64, I64

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01          # fdlibm's ln2_hi, low 32 bits zero
_LN2_LO = 1.90821492927058770002e-10
_OVERFLOW = 709.78271289338397                 # the largest x with a finite e^x
_UNDERFLOW = -745.13321910194122               # below it e^x rounds to 0
#: (e^r − 1 − r) / r² = Σ r^j / (j + 2)!, highest degree first
_TAYLOR = tuple(1.0 / math.factorial(j + 2) for j in range(11, -1, -1))


def inline_exp(module: ll.Module) -> ll.Function:
    """The module's `exp` (Note [An exp LLVM can vectorise]), defined on first use."""
    existing = module.globals.get("rev_exp")
    if existing is not None:
        return existing
    fn = ll.Function(module, ll.FunctionType(F64, [F64]), name="rev_exp")
    fn.linkage = "internal"
    fn.attributes.add("alwaysinline")
    fn.attributes.add("nounwind")
    b = ll.IRBuilder(fn.append_basic_block("entry"))
    x = fn.args[0]
    fma = _intrinsic(module, "llvm.fma.f64", 3)
    roundeven = _intrinsic(module, "llvm.roundeven.f64", 1)

    def c(value: float):
        return ll.Constant(F64, value)

    clamped = b.select(b.fcmp_ordered(">", x, c(710.0)), c(710.0), x)
    clamped = b.select(b.fcmp_ordered("<", clamped, c(-746.0)), c(-746.0), clamped)
    kf = b.call(roundeven, [b.fmul(clamped, c(_LOG2E))])
    r = b.call(fma, [b.fneg(kf), c(_LN2_HI), clamped])
    r = b.call(fma, [b.fneg(kf), c(_LN2_LO), r])
    r2 = b.fmul(r, r)
    p = _estrin(b, fma, r, r2, [c(v) for v in reversed(_TAYLOR)])
    tail = b.call(fma, [r2, p, r])                      # e^r − 1
    er = b.fadd(c(1.0), tail)
    k = _exact_integer(b, kf)
    k1 = b.ashr(k, ll.Constant(I64, 1))
    k2 = b.sub(k, k1)
    scaled = b.fmul(b.fmul(er, _power_of_two(b, k1)), _power_of_two(b, k2))
    result = b.select(b.fcmp_ordered(">", x, c(_OVERFLOW)), c(math.inf), scaled)
    result = b.select(b.fcmp_ordered("<", x, c(_UNDERFLOW)), c(0.0), result)
    b.ret(b.select(b.fcmp_unordered("uno", x, x), x, result))
    return fn


def _estrin(b: ll.IRBuilder, fma, x, x2, coefficients: list):
    """Σ coefficients[j] x^j (lowest degree first) by Estrin's scheme: pairs
    a + b·x, then pairs of those with x², x⁴, …, a tree of fused multiply-adds
    about log2(degree) deep where Horner's rule is a chain of `degree`."""
    terms = [b.call(fma, [coefficients[j + 1], x, coefficients[j]])
             if j + 1 < len(coefficients) else coefficients[j]
             for j in range(0, len(coefficients), 2)]
    power = x2
    while len(terms) > 1:
        terms = [b.call(fma, [terms[j + 1], power, terms[j]]) if j + 1 < len(terms)
                 else terms[j] for j in range(0, len(terms), 2)]
        if len(terms) > 1:
            power = b.fmul(power, power)
    return terms[0]


def _intrinsic(module: ll.Module, name: str, arity: int) -> ll.Function:
    """An LLVM intrinsic on doubles, declared once."""
    existing = module.globals.get(name)
    return existing if existing is not None else \
        ll.Function(module, ll.FunctionType(F64, [F64] * arity), name=name)


#: 1.5 · 2^52: adding it to an integer-valued double of magnitude below 2^51 puts
#: the integer, in two's complement, in the low bits of the sum's mantissa
_SHIFTER = 6755399441055744.0


def _exact_integer(b: ll.IRBuilder, kf):
    """The i64 of `kf`, an integer-valued double of magnitude below 2^51, as an
    addition and an integer subtraction: `fptosi` of a double vector has no AVX2
    instruction, and LLVM splits it into a scalar conversion a lane (Note [An exp
    LLVM can vectorise])."""
    bits = b.bitcast(b.fadd(kf, ll.Constant(F64, _SHIFTER)), I64)
    return b.sub(bits, ll.Constant(I64, 0x4338000000000000))     # _SHIFTER's bits


def _power_of_two(b: ll.IRBuilder, k):
    """2^k as a double, for k in the normal range (−1022 … 1023)."""
    bits = b.shl(b.add(k, ll.Constant(I64, 1023)), ll.Constant(I64, 52))
    return b.bitcast(bits, F64)
