"""Function transforms (LANGUAGE.md §13): `grad(f, loss, argnums=None)` and
`value_and_grad(f, loss, argnums=None)` return functions, as JAX's do.

A transformed function takes the arguments of `f` (an `api.Function`: `m.f` or
`~m.f`) positionally or by parameter name (`y!` spelled `y_`) and runs the
drivers of rlang/ad/drivers.py on them: one forward and one gradient run per call,
on the module's backend, the caller's arrays left as they were.

`argnums` picks gradients: None, every argument's (a tuple, `None` for integers and
bools, as `rlang.gradient`); an int, that argument's alone; a tuple of ints, a tuple
of those, in that order.  Negative positions count from the end, as Python's do;
they are checked when the transform is made against `f`'s parameters.
"""
from __future__ import annotations

from .errors import RlangTypeError


def grad(f, loss, argnums=None):
    """A function giving the gradient of the final value of `loss` (a view of
    `f`'s parameters, LANGUAGE.md §9) with respect to the arguments `argnums` picks."""
    pick = _picker(f, argnums, "grad")

    def gradient_of(*args, **kwargs):
        from .ad.drivers import gradient

        return pick(gradient(f, f.positional(args, kwargs), loss))

    gradient_of.__name__ = gradient_of.__qualname__ = f"grad({_name(f)})"
    return gradient_of


def value_and_grad(f, loss, argnums=None):
    """A function giving `(value, gradient)`: the final value of `loss` (as a call
    returns it: a float, complex, fixed or ulog scalar) and `grad(f, loss,
    argnums)`'s result, from one forward and one gradient run."""
    pick = _picker(f, argnums, "value_and_grad")

    def value_and_gradient_of(*args, **kwargs):
        from .ad.drivers import value_and_gradient

        value, gradients = value_and_gradient(f, f.positional(args, kwargs), loss)
        return value, pick(gradients)

    value_and_gradient_of.__name__ = value_and_gradient_of.__qualname__ = \
        f"value_and_grad({_name(f)})"
    return value_and_gradient_of


def _name(f) -> str:
    return f"{'~' if f.inverse else ''}{f.name}"


def _picker(f, argnums, transform: str):
    """The function choosing the gradients `argnums` asks for from all of them."""
    if not (hasattr(f, "module") and hasattr(f, "positional")):
        raise RlangTypeError(f"rlang.{transform} takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(f).__name__}")
    count = len(f.params)
    if argnums is None:
        return lambda gradients: gradients
    if _is_position(argnums):
        k = _position(argnums, count, f, transform)
        return lambda gradients: gradients[k]
    if isinstance(argnums, (tuple, list)) and all(_is_position(a) for a in argnums):
        chosen = tuple(_position(a, count, f, transform) for a in argnums)
        return lambda gradients: tuple(gradients[k] for k in chosen)
    raise RlangTypeError(f"rlang.{transform}: argnums must be None, an int or a tuple of "
                         f"ints, got {argnums!r}")


def _is_position(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _position(k: int, count: int, f, transform: str) -> int:
    if not -count <= k < count:
        raise RlangTypeError(f"rlang.{transform}: argnums {k} is not a parameter of "
                             f"`{_name(f)}`, which has {count}")
    return k % count
