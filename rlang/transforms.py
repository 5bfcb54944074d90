"""Function transforms (LANGUAGE.md §13): `grad(f, loss, argnums=None)`,
`value_and_grad(f, loss, argnums=None)` and `jacrev(f, output, argnums=None)`
return functions, as JAX's do.

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
    from .ad.drivers import gradient    # (here, not in each call: 2.2 µs a call)

    pick = _picker(f, argnums, "grad")
    call = _by_builtin(f, loss, lambda args: gradient(f, args, loss), "call")

    def gradient_of(*args, **kwargs):
        return pick(call(args, kwargs))

    gradient_of.__name__ = gradient_of.__qualname__ = f"grad({_name(f)})"
    gradient_of.rlang_transform = ("grad", f, loss, pick)      # (for rlang.vmap)
    return gradient_of


def value_and_grad(f, loss, argnums=None):
    """A function giving `(value, gradient)`: the final value of `loss` (as a call
    returns it: a float, complex, fixed or ulog scalar) and `grad(f, loss,
    argnums)`'s result, from one forward and one gradient run."""
    from .ad.drivers import value_and_gradient

    pick = _picker(f, argnums, "value_and_grad")
    call = _by_builtin(f, loss, lambda args: value_and_gradient(f, args, loss), "value_call")

    def value_and_gradient_of(*args, **kwargs):
        value, gradients = call(args, kwargs)
        return value, pick(gradients)

    value_and_gradient_of.__name__ = value_and_gradient_of.__qualname__ = \
        f"value_and_grad({_name(f)})"
    value_and_gradient_of.rlang_transform = ("value_and_grad", f, loss, pick)
    return value_and_gradient_of


def jacrev(f, output, argnums=None):
    """A function giving the Jacobian of `output` (a parameter of `f`, by name or
    position: its final value) with respect to the arguments `argnums` picks, by
    reverse mode: per argument an array shaped as `output` followed by the
    argument (JAX's `jacrev` layout), None for integers and bools
    (rlang/ad/drivers.py `jacobians`).  Under `rlang.vmap`, one batched forward
    run and a batched gradient pass per W rows (Note [Batched Jacobians],
    rlang/ad/batched.py)."""
    from .ad.drivers import jacobians

    pick = _picker(f, argnums, "jacrev")

    def jacobian_of(*args, **kwargs):
        return pick(jacobians(f, f.positional(args, kwargs), output))

    jacobian_of.__name__ = jacobian_of.__qualname__ = f"jacrev({_name(f)})"
    jacobian_of.rlang_transform = ("jacrev", f, output, pick)     # (for rlang.vmap)
    return jacobian_of


def _by_builtin(f, loss, driver, which: str):
    """`call(args, kwargs)`: `driver(f.positional(args, kwargs))`, or, where the
    gradient route of the last call has a builtin (its attribute `which`: Note
    [Gradient calls without Python], rlang/backends/llvm/call_builtins.py), that
    builtin's result, which it tries first."""
    from .ad.gradient_route import route_of

    last = [None]   # the route of the last call, once it has a builtin; False: none

    def call(args: tuple, kwargs: dict):
        route = last[0]
        if route and not kwargs:
            result = getattr(route, which)(*args)
            if result:
                return result
            route.forget_frames()
        result = driver(f.positional(args, kwargs))
        if route is None and not kwargs:
            route = route_of(f, args, loss)
            builtin = getattr(route, which, None)
            if builtin is not None:
                last[0] = route if builtin else False
        return result
    return call


def _name(f) -> str:
    return f"{'~' if f.inverse else ''}{f.name}"


def _picker(f, argnums, transform: str):
    """The function choosing the gradients `argnums` asks for from all of them."""
    from .ad.drivers import argnum_positions

    if not (hasattr(f, "module") and hasattr(f, "positional")):
        raise RlangTypeError(f"rlang.{transform} takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(f).__name__}")
    if argnums is None:
        pick = lambda gradients: gradients      # noqa: E731
        pick.positions = None
        return pick
    chosen = argnum_positions(argnums, len(f.params), _name(f), transform)
    if not isinstance(argnums, (tuple, list)):
        pick = lambda gradients: gradients[chosen[0]]      # noqa: E731
    else:
        pick = lambda gradients: tuple(gradients[k] for k in chosen)      # noqa: E731
    pick.positions = frozenset(chosen)      # (the gradients it reads: Note [Scratch …])
    return pick

