"""`rlang.torch.wrap(f, loss=None)`: a rev function as a PyTorch operation
(LANGUAGE.md §13).

Note [The PyTorch bridge]
~~~~~~~~~~~~~~~~~~~~~~~~~
A wrapped function is a `torch.autograd.Function` whose forward and backward run
rlang (compiled where the module's backend compiles, docs/interop.md):

- With `loss`, it returns the loss view's final value as a 0-d tensor.  When an
  input needs a gradient, the forward is `rlang.value_and_grad`'s one forward and
  one gradient run, and the backward scales the saved gradient by the incoming
  one: no second forward run.  Under `create_graph=True` (a Hessian, a gradient
  penalty) the backward instead calls `_Gradient`, itself an autograd.Function
  whose backward is the Hessian-vector product `rlang.hvp`, so second derivatives
  are rlang's forward-over-reverse.
- Without `loss`, it returns every output of `f` (its arguments' final values) as a
  tuple of tensors; the backward is `rlang.vjp`'s pull-back.  Under
  `create_graph=True` the pull-back is `_PullBack`, differentiable in the arguments
  and the incoming gradients: its backward is `rlang.jvp` and the forward-over-
  reverse run `drivers.vjp_tangent` (Note [Outputs in both modes], bridges/jax.py).
- CPU tensors cross as NumPy views (`Tensor.numpy()`, no copy) where they are
  float64; other float dtypes are widened to float64 (rlang computes in f64) and
  results come back in the tensor's dtype; tensors on another device are copied to
  the host and back.  rlang never writes the caller's tensors: a rev function
  updates its arguments, so `f` runs on copies of the arrays it writes, and
  gradients leave the inputs as they were (Note [The caller's arrays],
  ad/callers_arrays.py).  Integer and bool tensors, and Python numbers, have no gradient.
- `torch.compile` does not trace into the host code: the wrapped function is
  `torch.compiler.disable`d, so Dynamo breaks the graph at the call and runs it
  eagerly (compiling the code around it), and a compiled model with a rev layer
  gives the same values and gradients (tests/bridges/test_torch_bridge.py).  It is
  not a node inside one graph: that needs a `torch.library.custom_op` with a fixed
  schema per wrapped function and fake-tensor rules for every output shape.
"""
from __future__ import annotations

import numpy as np

import torch

from ..errors import RlangTypeError


def wrap(f, loss=None):
    """A PyTorch function with the arguments of `f` (an `api.Function`: `m.f` or
    `~m.f`), returning `f`'s outputs as a tuple of tensors, or with `loss` the loss
    view's value as a 0-d tensor (Note [The PyTorch bridge])."""
    if not (hasattr(f, "module") and hasattr(f, "positional")):
        raise RlangTypeError(f"rlang.torch.wrap takes a function of a loaded program "
                             f"(`module.f` or `~module.f`), got {type(f).__name__}")
    if loss is not None:
        from ..ad.loss import resolve_loss

        resolve_loss(f.module.unit.functions[f.name], loss)     # a bad loss: now

    def wrapped(*args, **kwargs):
        values = f.positional(args, kwargs)
        if loss is None:
            return _Outputs.apply(f, *values)
        return _Loss.apply(f, loss, torch.is_grad_enabled(), *values)

    wrapped.__name__ = wrapped.__qualname__ = f"torch({'~' if f.inverse else ''}{f.name})"
    return torch.compiler.disable(wrapped)      # opaque to Dynamo: Note [The PyTorch bridge]


def _host(value, copy: bool = False):
    """An argument as rlang takes it: a tensor as a NumPy array (a view of a float64
    CPU tensor, else a float64 copy for floats), 0-d tensors as scalars; others as
    they are."""
    if not isinstance(value, torch.Tensor):
        return value
    if value.dtype is torch.float64 and not value.shape and value.device.type == "cpu":
        return value.item()                     # the common scalar, without a view
    tensor = value.detach()
    if tensor.device.type != "cpu":
        tensor = tensor.cpu()
    if tensor.is_floating_point() and tensor.dtype != torch.float64:
        tensor = tensor.to(torch.float64)
    elif tensor.is_complex() and tensor.dtype != torch.complex128:
        tensor = tensor.to(torch.complex128)
    array = tensor.resolve_conj().resolve_neg().numpy()
    if array.ndim == 0:
        return array.item()
    return array.copy() if copy else array


def _tensor(value, like, floats=None):
    """An rlang result as a tensor of `like`'s dtype, shape and device (a tensor), or
    for a Python number of its kind, floats in `floats` (default: PyTorch's default
    float dtype)."""
    if isinstance(like, torch.Tensor):
        dtype, device, shape = like.dtype, like.device, like.shape
    else:
        dtype, device, shape = _dtype_of_number(like), torch.device("cpu"), ()
        if floats is not None and dtype == torch.get_default_dtype():
            dtype = floats
    if device.type == "cpu":            # the common cases, without conversions
        if type(value) in (float, int, bool) and not shape:
            return torch.tensor(value, dtype=dtype)
        if type(value) is np.ndarray and value.dtype == np.float64 and \
                dtype == torch.float64 and value.shape == tuple(shape):
            return torch.from_numpy(value)
    array = np.asarray(value)
    if array.dtype == object or array.dtype.kind not in "biufc":
        array = np.asarray(array, dtype=np.float64)
    return torch.from_numpy(np.ascontiguousarray(array)).to(device=device, dtype=dtype) \
        .reshape(shape)


def _dtype_of_number(value):
    if isinstance(value, bool):
        return torch.bool
    if isinstance(value, int):
        return torch.int64
    if isinstance(value, complex):
        return torch.complex128
    return torch.get_default_dtype()


def _differentiable(value) -> bool:
    return isinstance(value, torch.Tensor) and (value.is_floating_point() or value.is_complex())


def _gradient_like(gradient, like):
    """A gradient as the tensor `like` takes (None where it has none)."""
    if gradient is None or not _differentiable(like):
        return None
    return _tensor(gradient, like)


def _promoted_float(values):
    floats = [v.dtype for v in values if isinstance(v, torch.Tensor) and v.is_floating_point()]
    if not floats:
        return torch.get_default_dtype()
    dtype = floats[0]
    for other in floats[1:]:
        dtype = torch.promote_types(dtype, other)
    return dtype


def _written(f) -> frozenset:
    return f.module.interpreter.written.get(f.name, frozenset())


def _arguments(f, values) -> list:
    """The host arguments of one run: copies of the arrays `f` writes."""
    written = _written(f)
    return [_host(v, copy=k in written) for k, v in enumerate(values)]


class _Loss(torch.autograd.Function):
    """The loss view's value; backward: the saved gradient, or `_Gradient` when a
    graph of the backward is asked for (Note [The PyTorch bridge])."""

    @staticmethod
    def forward(ctx, f, loss, recording, *values):
        """`recording`: whether grad mode was on at the call (inside `forward` it
        is always off)."""
        from ..ad.drivers import loss_value, value_and_gradient

        ctx.f, ctx.loss = f, loss
        _save(ctx, values)
        args = [_host(v) for v in values]       # (both keep the caller's arrays)
        if recording and any(ctx.needs_input_grad[3:]):
            value, gradients = value_and_gradient(f, args, loss)
            # ready now: the backward only scales them by its seed (the engine casts
            # a gradient to its input's dtype; a CPU scalar's stays a number)
            ctx.gradients = [g if type(g) is float and isinstance(v, torch.Tensor) and
                             not v.shape and v.device.type == "cpu" and _differentiable(v)
                             else _gradient_like(g, v) for g, v in zip(gradients, values)]
        else:
            value, ctx.gradients = loss_value(f, args, loss), None
        value = np.real(complex(value)) if isinstance(value, complex) else float(value)
        return torch.tensor(value, dtype=_promoted_float(values))

    @staticmethod
    def backward(ctx, seed):
        if torch.is_grad_enabled():                 # create_graph: differentiable
            values = _saved_values(ctx)
            gradients = _Gradient.apply(ctx.f, ctx.loss, *values)
            return (None, None, None) + tuple(seed * g if _differentiable(v) else None
                                              for g, v in zip(gradients, values))
        return (None, None, None) + tuple(None if g is None else seed * g
                                          for g in ctx.gradients)


_TENSOR = object()      # where a saved value is a tensor (saved_tensors has it)


def _save(ctx, values) -> None:
    """Keep `values` (tensors and others) for the backward: `_saved_values`."""
    ctx.save_for_backward(*[v for v in values if isinstance(v, torch.Tensor)])
    ctx.values = [_TENSOR if isinstance(v, torch.Tensor) else v for v in values]


def _saved_values(ctx) -> list:
    tensors = iter(ctx.saved_tensors)
    return [next(tensors) if v is _TENSOR else v for v in ctx.values]


class _Gradient(torch.autograd.Function):
    """The loss's gradient (a tensor per argument; zeros for integers and numbers);
    backward: the Hessian-vector product `rlang.hvp`."""

    @staticmethod
    def forward(ctx, f, loss, *values):
        from ..ad.drivers import gradient

        ctx.f, ctx.loss = f, loss
        _save(ctx, values)
        gradients = gradient(f, _arguments(f, values), loss)
        out = [_gradient_like(g, v) for g, v in zip(gradients, values)]
        zeros = [k for k, g in enumerate(out) if g is None]
        out = [torch.zeros(()) if g is None else g for g in out]
        ctx.mark_non_differentiable(*[out[k] for k in zeros])
        return tuple(out)

    @staticmethod
    def backward(ctx, *vector):
        from ..ad.drivers import hvp

        values = _saved_values(ctx)
        directions = [_host(t) if _differentiable(v) else None
                      for t, v in zip(vector, values)]
        products = hvp(ctx.f, _arguments(ctx.f, values), directions, ctx.loss)
        return (None, None) + tuple(_gradient_like(p, v) for p, v in zip(products, values))


class _Outputs(torch.autograd.Function):
    """Every output of `f`; backward: `rlang.vjp`'s pull-back."""

    @staticmethod
    def forward(ctx, f, *values):
        ctx.f = f
        _save(ctx, values)
        written = _written(f)
        outputs = f(*_arguments(f, values))     # (arrays only read: copied out below)
        floats = _promoted_float(values)            # Python floats: as the tensors promote
        result = tuple(_tensor(o.copy() if isinstance(o, np.ndarray) and k not in written
                               else o, v, floats)
                       for k, (o, v) in enumerate(zip(outputs, values)))
        ctx.mark_non_differentiable(*[r for r in result if not _differentiable(r)])
        return result

    @staticmethod
    def backward(ctx, *cotangents):
        values = _saved_values(ctx)     # (a float output of a Python number has one)
        seeds = [c if c is not None and _differentiable(c) else None for c in cotangents]
        if not torch.is_grad_enabled():                 # a first derivative alone
            return (None,) + _pulled(ctx.f, values, seeds)
        pulled = _PullBack.apply(ctx.f, len(values), *values, *seeds)
        return (None,) + tuple(p if _differentiable(v) else None for p, v in zip(pulled, values))


def _pulled(f, values, seeds) -> tuple:
    """Jᵀc: `rlang.vjp`'s pull-back of `f` at `values`, seeded with `seeds` (tensors,
    None for none), as a gradient per value."""
    from ..ad.drivers import vjp

    _, pull = vjp(f, *_arguments(f, values))
    pulled = pull([None if s is None else _host(s) for s in seeds])
    return tuple(_gradient_like(g, v) for g, v in zip(pulled, values))


class _PullBack(torch.autograd.Function):
    """Jᵀc as a differentiable function of the arguments x and the cotangents c;
    backward (a second derivative: Note [Outputs in both modes], bridges/jax.py):
    for c, J w (`rlang.jvp`); for x, Σᵢ cᵢ Hᵢ w (`drivers.vjp_tangent`)."""

    @staticmethod
    def forward(ctx, f, n, *values_and_seeds):
        values, seeds = list(values_and_seeds[:n]), list(values_and_seeds[n:])
        ctx.f, ctx.n = f, n
        _save(ctx, values_and_seeds)
        pulled = [torch.zeros(()) if g is None else g for g in _pulled(f, values, seeds)]
        ctx.mark_non_differentiable(*[p for p, v in zip(pulled, values)
                                      if not _differentiable(v)])
        return tuple(pulled)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, *vector):
        from ..ad.drivers import jvp, vjp_tangent

        saved = _saved_values(ctx)
        values, seeds = saved[:ctx.n], saved[ctx.n:]
        directions = [_host(w) if _differentiable(v) else None for w, v in zip(vector, values)]
        args = _arguments(ctx.f, values)
        hosted = [None if s is None else _host(s) for s in seeds]
        moved = vjp_tangent(ctx.f, args, hosted, directions)[1]
        pushed = jvp(ctx.f, args, directions)[1]
        return (None, None) + tuple(_gradient_like(m, v) for m, v in zip(moved, values)) \
            + tuple(None if s is None else _gradient_like(p, s) for p, s in zip(pushed, seeds))
