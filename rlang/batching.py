"""`rlang.vmap(f, in_axes=0)` (LANGUAGE.md §13): `f` mapped over a batch axis.

    g = rlang.vmap(m.f)                           # every argument batched on axis 0
    g = rlang.vmap(rlang.grad(m.f, "y!"), in_axes=(0, None))

`f` is a function of a loaded program (`m.f`, `~m.f`), a function made by
`rlang.grad`, `rlang.value_and_grad` or `rlang.jacrev`, or any other Python
callable.  `in_axes`
is an int, None (not batched) or a tuple with one of those per positional
argument; keyword arguments are batched on axis 0, as JAX's are.  Outputs have the
batch axis in front:

- a call returns one value per argument: a batched array is the caller's array,
  updated in place, seen with the batch axis in front (or, where a read-only
  argument needed widening, the widened batch); a batched scalar is a new array of
  the parameter's type (fixed and ulog in `FixedArray` / `ULogArray`); an argument
  that is not batched is repeated along the batch axis (a read-only view);
- a gradient has the batch axis in front for every argument (each item has its
  own gradient); `value_and_grad`'s value is an array of the items' loss values;
  a Jacobian (`jacrev`) likewise has the batch axis in front of every argument's.

On a backend with batches (llvm) a call, inverse or gradient over the batch is one
native call per pass (rlang/backends/llvm/batch.py, rlang/ad/batched.py).  On the
interpreter, the cuda backend, and for other callables, the items run one by one,
with the same results.  Decisions (docs/api.md, "Batches"): an argument `f` writes
must be batched; stacks are not taken; an empty batch of calls runs nothing, of
gradients is an error; an error in an item is that item's RlangError, with `batch_item` set and a note saying so.
"""
from __future__ import annotations

import numpy as np

from .errors import RlangError, RlangTypeError, in_batch_item
from .numbers import Fixed, FixedArray, ULog, ULogArray, fixed_array, ulog_array
from .values import Stack, read_element, repeated, scalar_dtype, stack_scalars, storage_of


def vmap(f, in_axes=0):
    """`f` mapped over a batch axis (module docstring)."""
    _check_axes(in_axes)
    transform = getattr(f, "rlang_transform", None)
    function = transform[1] if transform else f
    if not (hasattr(function, "module") and hasattr(function, "positional")):
        if not callable(f):
            raise RlangTypeError(f"rlang.vmap takes a function, got {type(f).__name__}")
        function = None

    def mapped(*args, **kwargs):
        if function is None:
            return _python_map(f, args, kwargs, in_axes)
        values, axes = _bound_axes(function, args, kwargs, in_axes)
        batch = _Batch(function, values, axes)
        if transform is None:
            return batch.call()
        kind, _, loss, pick = transform
        if kind == "jacrev":        # (`loss`: the output parameter)
            return pick(batch.jacobian(loss, getattr(pick, "positions", None)))
        value, gradients = batch.gradient(loss, kind == "value_and_grad")
        return (value, pick(gradients)) if kind == "value_and_grad" else pick(gradients)

    mapped.__name__ = mapped.__qualname__ = f"vmap({getattr(f, '__name__', 'f')})"
    return mapped


def _check_axes(in_axes) -> None:
    entries = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,)
    for axis in entries:
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
            raise RlangTypeError(f"rlang.vmap: in_axes takes ints, None, or a tuple of "
                                 f"them, got {in_axes!r}")


def _positional_axes(in_axes, count: int) -> list:
    """One axis per positional argument."""
    if not isinstance(in_axes, (tuple, list)):
        return [in_axes] * count
    if len(in_axes) != count:
        raise RlangTypeError(f"rlang.vmap: in_axes has {len(in_axes)} entries for "
                             f"{count} positional argument(s)")
    return list(in_axes)


def _bound_axes(function, args, kwargs, in_axes):
    """The arguments in parameter order, and the axis of each (keywords: 0)."""
    values = function.positional(args, kwargs)
    marks = function.positional(
        [("axis", a) for a in _positional_axes(in_axes, len(args))],
        {key: ("axis", 0) for key in kwargs})
    return values, [axis for _, axis in marks]


def _as_array(value, name: str) -> np.ndarray:
    """A batched argument as a NumPy array (anything with `__array__` or `__dlpack__`,
    nested lists); a scalar has no axis to map over."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__cuda_array_interface__") and not hasattr(value, "__array__"):
        raise RlangTypeError(f"rlang.vmap: argument `{name}` is a device array; batches "
                             "are host arrays (copy it with copy_to_host())")
    if isinstance(value, Stack):
        raise RlangTypeError(f"rlang.vmap does not batch stacks (argument `{name}`)")
    try:
        if hasattr(value, "__dlpack__") and not hasattr(value, "__array__"):
            return np.from_dlpack(value)
        array = np.asarray(value)
    except (ValueError, TypeError, BufferError) as error:   # ragged lists, foreign memory
        raise RlangTypeError(f"rlang.vmap: argument `{name}` is not an array NumPy can "
                             f"read ({error})") from None
    if array.ndim == 0:
        raise RlangTypeError(f"rlang.vmap: argument `{name}` is a scalar, which has no "
                             "axis to map over (give it in_axes None)")
    return array


def _moved(value, axis: int, name: str) -> np.ndarray:
    """The batch of one argument with its batch axis first (a view)."""
    array = _as_array(value, name)
    if axis == 0 and array.ndim:
        return array
    if not -array.ndim <= axis < array.ndim:
        raise RlangTypeError(f"rlang.vmap: argument `{name}` of shape {array.shape} has no "
                             f"axis {axis} to map over")
    return np.moveaxis(array, axis, 0)


def _batch_size(moved: list, names: list) -> int:
    sizes = [(m.shape[0], name) for m, name in zip(moved, names) if m is not None]
    if not sizes:
        raise RlangTypeError("rlang.vmap needs at least one batched argument "
                             "(in_axes are all None)")
    for size, name in sizes[1:]:
        if size != sizes[0][0]:
            raise RlangTypeError(f"rlang.vmap: the batch sizes differ: `{sizes[0][1]}` has "
                                 f"{sizes[0][0]} items, `{name}` has {size}")
    return sizes[0][0]


def _item(moved: np.ndarray, k: int):
    """Item k of a batch: a view of a sub-array, or a scalar as a rev value."""
    if moved.shape[0] == 0:         # an empty batch: a stand-in item, never run
        moved = np.zeros((1,) + moved.shape[1:], dtype=moved.dtype).view(type(moved))
        k = 0
    return read_element(moved, (k,)) if moved.ndim == 1 else moved[k]


class _Batch:
    """The arguments of one mapped call: `moved[k]` is argument k's batch (axis 0
    first) or None, `n` the batch size."""

    def __init__(self, function, values: list, axes: list):
        self.function, self.values = function, values
        module = function.module
        fn = module.unit.functions[function.name]
        names = [p.name for p in fn.params]
        self.written = written = module.interpreter.written.get(function.name, frozenset())
        if all(axis is None for axis in axes):
            _batch_size([], [])         # (the error)
        for k, (value, axis) in enumerate(zip(values, axes)):
            if isinstance(value, Stack):
                raise RlangTypeError(f"rlang.vmap does not take stacks (argument "
                                     f"`{names[k]}` of `{function.name}`)")
            if axis is None and k in written:
                raise RlangTypeError(f"rlang.vmap: `{function.name}` writes its argument "
                                     f"`{names[k]}`, which is not batched (in_axes None); "
                                     "give it a batch axis")
        self.moved = [None if axis is None else _moved(value, axis, name)
                      for value, axis, name in zip(values, axes, names)]
        self.n = _batch_size(self.moved, names)

    def items(self, k: int) -> list:
        return [v if m is None else _item(m, k) for v, m in zip(self.values, self.moved)]

    def _compiled(self, run):
        """`run(compiled)` where the module's backend has batches; None where it has
        not, or falls back to the interpreter for this call."""
        module = self.function.module
        if module.compiled is None or not module.compiled.batches:
            return None
        return module.compiled_or_none(run)

    def _conform(self, compiled):
        """(the first item's values for the entry point's layout, the batches in the
        parameters' storage types), bound by the interpreter's rules."""
        items = self.items(0)
        bound = compiled.bind(self.function.name, items)
        batches = [None if m is None else _conformed(m, b, i, k in self.written)
                   for k, (m, b, i) in enumerate(zip(self.moved, bound, items))]
        values = [b if batch is None or batch.ndim == 1 or not self.n else batch[0]
                  for b, batch in zip(bound, batches)]
        return values, batches, bound

    # ------------------------------------------------------------ calls
    def call(self) -> tuple:
        outputs = self._compiled(self._compiled_call)
        return outputs if outputs is not None else self._call_by_item()

    def _compiled_call(self, compiled) -> tuple:
        from .ad.batched import batched_call

        values, batches, bound = self._conform(compiled)
        if self.n:
            batched_call(compiled, self.function.name, values, batches, self.n,
                         self.function.inverse)
        return tuple(repeated(b, self.n) if batch is None else batch
                     for b, batch in zip(bound, batches))

    def _call_by_item(self) -> tuple:
        passed = self.items(0)
        results = [_each(k, self.function, *(passed if k == 0 else self.items(k)))
                   for k in range(self.n)]
        firsts = results[0] if results else passed      # (an empty batch: types only)
        outputs = []
        for j, (moved, first) in enumerate(zip(self.moved, firsts)):
            if moved is None:
                outputs.append(repeated(first, self.n))
            elif not isinstance(first, np.ndarray):
                outputs.append(stack_scalars([r[j] for r in results], first))
            elif first is passed[j]:
                outputs.append(moved)           # updated in place, item by item
            else:                               # (converted: a new array per item)
                outputs.append(_stacked([r[j] for r in results], first))
        return tuple(outputs)

    # ------------------------------------------------------------ gradients
    def gradient(self, loss, value: bool) -> tuple:
        """(the loss values or None, the gradients of every argument)."""
        result = self._compiled(lambda compiled: self._compiled_gradient(compiled, loss, value))
        return result if result is not None else self._gradient_by_item(loss, value)

    def _compiled_gradient(self, compiled, loss, value: bool) -> tuple:
        """The batched passes; the caller's arrays that they write (in place) are put
        back bit for bit (Note [The caller's arrays], ad/callers_arrays.py)."""
        from .ad.batched import batched_gradient
        from .ad.callers_arrays import callers_arrays_kept

        values, batches, _ = self._conform(compiled)
        if not self.n:
            return None
        written = [b for k, b in enumerate(batches) if k in self.written and b is self.moved[k]]
        with callers_arrays_kept(written):
            return batched_gradient(compiled, self.function.name, values, batches, self.n,
                                    loss, self.function.inverse, value)

    def _gradient_by_item(self, loss, value: bool) -> tuple:
        from .ad.drivers import gradient, value_and_gradient

        if value:
            pairs = [_each(k, value_and_gradient, self.function, self.items(k), loss)
                     for k in range(self.n)]
        else:
            pairs = [(None, _each(k, gradient, self.function, self.items(k), loss))
                     for k in range(self.n)]
        if not pairs:
            raise RlangTypeError("rlang.vmap of a gradient needs at least one item "
                                 "(the batch is empty)")
        values = stack_scalars([v for v, _ in pairs], pairs[0][0]) if value else None
        gradients = tuple(None if first is None else _stacked([g[j] for _, g in pairs], first)
                          for j, first in enumerate(pairs[0][1]))
        return values, gradients


    # ------------------------------------------------------------ Jacobians
    def jacobian(self, output, wanted=None) -> tuple:
        """Per argument, the Jacobian of `output` (a parameter name or position) in
        every item, the batch axis first (None for integers and bools; for those
        outside `wanted`, the positions the caller reads, it may be None too)."""
        from .ad.drivers import parameter_position

        position = parameter_position(self.function, output)
        result = self._compiled(
            lambda compiled: self._compiled_jacobian(compiled, position, wanted))
        return result if result is not None else self._jacobian_by_item(output)

    def _compiled_jacobian(self, compiled, output: int, wanted=None):
        """One forward run and a laned pass per group of rows (Note [Batched
        Jacobians], ad/batched.py), or None where those do not apply."""
        from .ad.batched import batched_jacobian
        from .ad.callers_arrays import callers_arrays_kept

        values, batches, _ = self._conform(compiled)
        if not self.n:
            return None
        written = [b for k, b in enumerate(batches) if k in self.written and b is self.moved[k]]
        with callers_arrays_kept(written):
            return batched_jacobian(compiled, self.function.name, values, batches, self.n,
                                    output, self.function.inverse, wanted)

    def _jacobian_by_item(self, output) -> tuple:
        from .ad.drivers import jacobians

        found = [_each(k, jacobians, self.function, self.items(k), output)
                 for k in range(self.n)]
        if not found:
            raise RlangTypeError("rlang.vmap of a Jacobian needs at least one item "
                                 "(the batch is empty)")
        return tuple(None if first is None else np.stack([np.asarray(j[k]) for j in found])
                     for k, first in enumerate(found[0]))


def _each(k: int, run, *args):
    """`run(*args)` for item k; its error marked as item k's."""
    try:
        return run(*args)
    except RlangError as error:
        raise in_batch_item(error, k) from None


def _stacked(arrays: list, like: np.ndarray) -> np.ndarray:
    if not arrays:
        return np.zeros((0,) + like.shape, dtype=like.dtype).view(type(like))
    return np.stack(arrays).view(type(like))


def _conformed(moved: np.ndarray, bound, item, written: bool) -> np.ndarray:
    """A batch in the storage type of its parameter, as `bound` (item 0 bound by the
    interpreter's rules) has it: the caller's array where item 0 needed nothing (an
    array) or the batch has the scalars' storage type already and is only read,
    else a converted copy (widened, never narrowed: the binding refused that).  A
    batch of scalars the function writes is always a copy: it becomes the output."""
    if isinstance(bound, np.ndarray):
        if bound is item:
            return moved
        if type(bound) is type(moved) or type(bound) is np.ndarray:
            return np.array(moved, dtype=bound.dtype).view(type(bound))
        return (fixed_array if isinstance(bound, FixedArray) else ulog_array)(moved)
    if moved.dtype == object:
        moved = np.array([storage_of(v) for v in moved]) if isinstance(bound, (Fixed, ULog)) \
            else moved
    if isinstance(bound, Fixed):
        return moved.copy() if isinstance(moved, FixedArray) else fixed_array(moved)
    if isinstance(bound, ULog):
        return moved.copy() if isinstance(moved, ULogArray) else ulog_array(moved)
    dtype = scalar_dtype(bound)
    if not written and type(moved) is np.ndarray and moved.dtype == dtype:
        return moved
    return np.array(moved, dtype=dtype)


def _python_map(f, args, kwargs, in_axes):
    """Any other callable, item by item; its outputs (nested tuples and lists of
    arrays and scalars, None) stacked along a new axis 0."""
    axes = _positional_axes(in_axes, len(args))
    named = [f"argument {k + 1}" for k in range(len(args))] + list(kwargs)
    values = list(args) + list(kwargs.values())
    moved = [None if axis is None else _moved(v, axis, name)
             for v, axis, name in zip(values, axes + [0] * len(kwargs), named)]
    n = _batch_size(moved, named)
    results = []
    for k in range(n):
        items = [v if m is None else _item(m, k) for v, m in zip(values, moved)]
        results.append(_each(k, f, *items[:len(args)],
                             **dict(zip(kwargs, items[len(args):]))))
    if not results:
        raise RlangTypeError("rlang.vmap of a Python function needs at least one item "
                             "(the batch is empty)")
    return _stack_tree(results)


def _stack_tree(results: list):
    first = results[0]
    if first is None:
        return None
    if isinstance(first, (tuple, list)):
        return type(first)(_stack_tree([r[j] for r in results]) for j in range(len(first)))
    if isinstance(first, np.ndarray):
        return _stacked(results, first)
    return stack_scalars(results, first)
