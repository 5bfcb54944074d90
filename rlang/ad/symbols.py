"""What compiled derivative code is called and what its gradients are, without the
transforms that make it (a call the disk cache serves needs the names, not the
transforms: Note [Code without LLVM], rlang/backends/llvm/shared_code.py).

`derived_symbol(kind, symbol)` is the symbol of `symbol`'s derivative of `kind`
(GRAD: the gradient pass, TAN: the tangent run; `rev_f__f64` → `rev_grad_f__f64`);
`laned_symbol(symbol, W)` that of its pass with W lanes; `split_lanes(derivative)`
and `lane_count(derivative)` read a derivative's name ("grad", "tan", "tan_grad",
with W ≥ 2 lanes: "grad4"); `without_gradients(derivative, positions)` names it
with the gradients of some arguments not wanted ("tan_grad-0-2"), and
`split_unwanted` reads that back; `shadow_type(t)` is the type of the gradient of
a value of IR type `t`, or None where it has none.
"""
from __future__ import annotations

from ..ir import nodes as ir

#: The kinds of derived functions: the suffix of shadow names and the prefix of
#: derived symbols (rlang/ad/shadow.py).
GRAD, TAN = "grad", "tan"
#: The derivatives a backend can be asked for (`native(…, derivative=…)`).
DERIVATIVES = (GRAD, TAN, "tan_grad")


def derived_symbol(kind: str, symbol: str) -> str:
    """The symbol of `symbol`'s derived function of `kind` (`rev_f__f64` →
    `rev_grad_f__f64`)."""
    return f"rev_{kind}_{symbol[len('rev_'):]}"


def without_gradients(derivative: str, positions) -> str:
    """`derivative` whose gradients of the arguments at `positions` nobody reads
    (Note [Gradients nobody reads], ad/derivatives.py): its name in the caches."""
    return derivative + "".join(f"-{k}" for k in sorted(positions))


def unwanted_positions(positions, wanted, kept=()) -> tuple:
    """The positions of `positions` (those with gradients) outside `wanted` (None:
    all are wanted) and `kept`, in order: the gradients nobody reads."""
    if wanted is None:
        return ()
    return tuple(k for k in positions if k not in wanted and k not in kept)


def split_unwanted(derivative: str) -> tuple:
    """(the derivative, the positions whose gradients nobody reads) of a name
    `without_gradients` made; (derivative, frozenset()) for any other."""
    base, *positions = derivative.split("-")
    return base, frozenset(int(k) for k in positions)


def laned_symbol(symbol: str, lanes: int) -> str:
    return f"{symbol}__x{lanes}"


def split_lanes(derivative: str) -> tuple:
    """(the derivative without lanes, W) of "grad<W>", "tan<W>" or "tan_grad<W>"
    (W ≥ 2); (derivative, 0) for any other."""
    base = derivative.rstrip("0123456789")
    count = derivative[len(base):]
    if base in DERIVATIVES and count and int(count) >= 2:
        return base, int(count)
    return derivative, 0


def lane_count(derivative: str) -> int:
    """W of a laned derivative (0 for one without lanes), gradients nobody reads or
    not."""
    return split_lanes(split_unwanted(derivative)[0])[1]


def shadow_type(t):
    """f64 for a scalar with a gradient (float, fixed, ulog), an f64 array (stack) for
    an array (stack) of them, complex (both parts' gradients) for complex, None
    otherwise."""
    if isinstance(t, ir.StackType):
        elem = shadow_type(t.elem)
        return None if elem is None else ir.StackType(elem)
    if isinstance(t, ir.ArrayType):
        if t.elem == "complex":
            return t
        return ir.ArrayType("f64", t.ndim, t.unit_stride) if t.elem in \
            ir.DIFFERENTIABLE_TYPES else None
    if t == "complex":          # the gradients of both parts (Note [Complex numbers …])
        return t
    return "f64" if t in ir.DIFFERENTIABLE_TYPES else None
