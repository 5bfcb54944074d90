"""Gradient calls as Python builtins: `gradient_entry(forward, backward, shape,
max_depth)` is a builtin function that makes a gradient route's whole call (the
arguments checked, the zero gradients made and seeded, the arrays copied, the forward
run and the gradient pass, the caller's arrays put back, the gradients' tuple) on
the arguments of one signature, or gives back () where the route must make the
call; None where no such builtin can be made (Note [Gradient calls without Python]).

Note [Gradient calls without Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`rlang.grad(f, loss, argnums=1)` on the 10-vertex graph embedding (invcheck off)
took 12.7 µs a call of which the native gradient pass was 4.4: the rest was the
short route's Python (Note [The gradient's short route], ad/gradient_route.py):
the signature and the plan's key, the zero gradients and the seed, the copies,
packing the buffer, unpacking it and the tuple.  All of it is decided by the
route's `GradientCallShape` (the argument kinds, which gradients are arrays, the
loss element, which arrays are copied or kept), so a builtin generated in LLVM IR
over CPython's and NumPy's C APIs does it in one call:

- each argument must be exactly what the route's signature says: a `float` (f64),
  an `int` in i64's range (i64), an `np.ndarray` whose dtype is the canonical one
  (the same object as `np.dtype(…)`), of the rank and last-axis stride kind of the
  signature; an array the function writes must be writable, the loss element must
  be inside its array, and with the reversibility checks on no array the function
  writes may overlap another argument's memory (a test of address ranges, wider
  than `np.shares_memory`, so anything it refuses goes to the general rule);
- the zero gradients are `PyArray_Zeros` of the arguments' extents (float64, C
  order, as `np.zeros`) and float scalars; the seed is written into the loss's;
- the arrays the pass alone works on are `PyArray_NewCopy` copies (as `.copy()`),
  and with the forward run the arrays the function writes are copied before and
  put back after with `PyArray_CopyInto` (Note [The caller's arrays]);
- the buffer is the pass's EntryLayout of one-word holders (arrays by their
  objects, Note [Arrays read by the entry point]), on the builtin's stack, and the
  entry points run with the GIL released, as ctypes runs them;
- anything else, a failed check in the code (status ≠ 0) or a failed allocation
  gives back the empty tuple after putting the caller's arrays back and dropping
  what it made, and the route makes the call from the start, with its errors.

NumPy's C API is reached through its `_ARRAY_API` table, whose slots are NumPy's
stable ABI (an extension built against NumPy 1.x runs on 2.x); the table is checked
to hold `PyArray_Type` in its slot first.  Where it is not found, or the array
objects are not laid out as `marshal.array_header()` reads them, or the code
prints, recurses deeply or runs `@parallel for` loops (as for scalar calls), no
builtin is made.  On the embedding (invcheck off) a call now takes 2.9 µs, less
than the pass alone took through ctypes (3.1 µs).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir as ll

from .. import abi
from .marshal import WRITEABLE, array_header
from .pyapi import ENTRY, FLOAT_AT, PTR, BuiltinBuilder, entry_symbol, layout_known
from .types import F64, I32, I64

#: NumPy C API functions (their slots in `_ARRAY_API`) and LLVM types
_NUMPY = {
    "PyArray_CopyInto": (50, ll.FunctionType(I32, [PTR, PTR])),
    "PyArray_NewCopy": (85, ll.FunctionType(PTR, [PTR, I32])),
    "PyArray_Zeros": (183, ll.FunctionType(PTR, [I32, I64.as_pointer(), PTR, I32])),
}
_ARRAY_TYPE_SLOT = 2        # &PyArray_Type
_C_ORDER = 0                # NPY_CORDER


@functools.cache
def _numpy_api() -> dict | None:
    """{name: address} of the NumPy functions in `_NUMPY`, or None where NumPy's table
    is not found where and as expected."""
    try:
        try:
            from numpy._core import _multiarray_umath as umath
        except ImportError:                                 # (NumPy 1.x)
            from numpy.core import _multiarray_umath as umath
        get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
        get_pointer.restype = ctypes.c_void_p
        get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        get_name = ctypes.pythonapi.PyCapsule_GetName
        get_name.restype = ctypes.c_char_p
        get_name.argtypes = [ctypes.py_object]
        capsule = umath._ARRAY_API
        table = get_pointer(capsule, get_name(capsule))
        slots = (ctypes.c_void_p * 300).from_address(table)
    except (ImportError, AttributeError, ValueError, TypeError, OSError):
        return None
    if slots[_ARRAY_TYPE_SLOT] != id(np.ndarray):
        return None
    return {name: slots[slot] for name, (slot, _) in _NUMPY.items()}


@functools.cache
def _descr_offset() -> int | None:
    """The byte offset of an array object's dtype (`descr`), or None where the probes
    do not show it two words after `strides`' (PyArrayObject_fields: …, strides,
    base, descr, flags)."""
    header = array_header()
    if header is None:
        return None
    at = header[3] + 16
    probes = [np.zeros(3), np.arange(4)[::2], np.zeros((2, 2), dtype=np.complex128).T]
    if all(ctypes.c_void_p.from_address(id(p) + at).value == id(p.dtype) for p in probes):
        return at
    return None


def gradient_entry(forward, backward, shape, max_depth: int):
    """The builtin of a gradient route (see the Note), or None where it cannot have
    one.  `forward` is (NativeModule, symbol) of f's entry point, or None for a pass
    alone; `backward` that of the gradient pass; `shape` a GradientCallShape
    (ad/gradient_route.py)."""
    natives = [backward[0]] + ([forward[0]] if forward else [])
    numpy_api, descr_at = _numpy_api(), _descr_offset()
    if not layout_known() or numpy_api is None or descr_at is None or any(
            n.recursive or n.threaded_loops or not n.settled_now() for n in natives) or \
            shape.index is not None and min(shape.index, default=0) < 0:
        return None
    codes = [n.settled() for n in natives]
    if any(code.prints for code in codes) or not _fits(shape, backward):
        return None
    kept = []
    pass_target, entry = entry_symbol(*backward, "rev_gradient_pass")
    kept += [entry]
    forward_target = None
    if forward is not None:
        forward_target, entry = entry_symbol(*forward, "rev_gradient_forward")
        kept += [entry]
    dtypes = [np.dtype(a[0]) for a in shape.arguments if isinstance(a, tuple)]
    builder = BuiltinBuilder("rev_gradient_call")
    _Writer(builder, shape, numpy_api, descr_at, max_depth).write(forward_target, pass_target)
    return builder.finish(f"{backward[1]}_call", tuple(codes + kept + dtypes))


def _fits(shape, backward) -> bool:
    """Whether the pass's layout is one-word holders of the kinds the shape makes:
    f's arguments, then the gradients that are not None, arrays of float64."""
    layout = backward[0].layout(backward[1])
    if not layout.one_word:
        return False
    types = list(layout.types)
    expected = len(shape.arguments) + sum(g is not None for g in shape.gradients)
    if len(types) != expected:
        return False
    for argument, t in zip(shape.arguments, types):
        if isinstance(argument, tuple):
            dtype = np.dtype(argument[0])
            if getattr(t, "ndim", None) != argument[1] or dtype != argument[0] or \
                    dtype.itemsize != abi.ITEM_BYTES.get(t.elem) or not dtype.isnative:
                return False
        elif argument != t:
            return False
    gradients = iter(types[len(shape.arguments):])
    for gradient in shape.gradients:
        if gradient is not None:
            t = next(gradients)
            if gradient == "array" and getattr(t, "elem", None) != "f64" or \
                    gradient == "f64" and t != "f64":
                return False
    return True


class _Writer:
    """Writes the builtin's body (see the Note) into a BuiltinBuilder."""

    def __init__(self, builder: BuiltinBuilder, shape, numpy_api: dict, descr_at: int,
                 max_depth: int):
        self.builder, self.b, self.shape = builder, builder.b, shape
        self.numpy, self.descr_at, self.max_depth = numpy_api, descr_at, max_depth
        self.data_at, self.nd_at, self.dims_at, self.strides_at, self.flags_at = \
            array_header()
        n = self.n = len(shape.arguments)
        self.gradient_slots = [k for k, g in enumerate(shape.gradients) if g is not None]
        self.m = n + len(self.gradient_slots)           # the pass's holders
        words = abi.CTX_WORDS + 2 * self.m
        self.buffer = self.b.alloca(ll.ArrayType(I64, words), name="buffer")
        # what the builtin made and drops on leaving: the gradient arrays, the copies
        # of the pass alone, the saved arrays (put back first)
        arrays = [k for k, g in enumerate(shape.gradients) if g == "array"]
        self.owned_at = {("gradient", k): j for j, k in enumerate(arrays)}
        for k in shape.copied:
            self.owned_at[("copy", k)] = len(self.owned_at)
        for k in shape.saved:
            self.owned_at[("saved", k)] = len(self.owned_at)
        self.owned = self.b.alloca(ll.ArrayType(PTR, max(1, len(self.owned_at))),
                                   name="owned")
        for j in range(len(self.owned_at)):
            self.b.store(builder.null, self._owned(j))
        self.items: list = []

    # (small readers)
    def _word(self, k: int):
        return self.b.gep(self.buffer, [ll.Constant(I64, 0), ll.Constant(I64, k)])

    def _holder(self, k: int):
        return self._word(abi.CTX_WORDS + self.m + k)

    def _owned(self, j: int):
        return self.b.gep(self.owned, [ll.Constant(I64, 0), ll.Constant(I64, j)])

    def _numpy_call(self, name: str, args: list):
        return self.builder.call_address(f"rev_numpy_{name}", self.numpy[name],
                                         _NUMPY[name][1], args)

    def _extents(self, item):
        return self.b.bitcast(self.builder.read(item, self.dims_at, PTR), I64.as_pointer())

    def _extent(self, item, axis: int):
        return self.b.load(self.b.gep(self._extents(item), [ll.Constant(I64, axis)]))

    def _made(self, what: tuple, obj) -> None:
        """Keep `obj` (a new reference, or NULL: then go to `general`) as `what`."""
        b = self.b
        b.store(obj, self._owned(self.owned_at[what]))
        self.builder.require(b.icmp_unsigned("!=", obj, self.builder.null),
                             f"made_{what[0]}{what[1]}")

    def write(self, forward_target, pass_target) -> None:
        builder, b, shape = self.builder, self.b, self.shape
        builder.require(b.icmp_signed("==", builder.nargs, ll.Constant(I64, self.n)),
                        "counted")
        self._read_arguments()
        if shape.aliasing:
            self._require_apart()
        self._seed_fits()
        self._make_gradients()
        for k in shape.copied:
            copy = self._numpy_call("PyArray_NewCopy", [self.items[k], ll.Constant(I32, _C_ORDER)])
            self._made(("copy", k), copy)
            b.store(b.ptrtoint(copy, I64), self._holder(k))
        for k in shape.saved:
            saved = self._numpy_call("PyArray_NewCopy", [self.items[k], ll.Constant(I32, _C_ORDER)])
            self._made(("saved", k), saved)
        for j in range(self.m):
            b.store(b.ptrtoint(self._word(abi.CTX_WORDS + self.m + j), I64),
                    self._word(abi.CTX_WORDS + j))
        for k, value in ((abi.CTX_SITE, 0), (abi.CTX_DEPTH, 0),
                         (abi.CTX_MAX_DEPTH, self.max_depth), (abi.CTX_THREADS, 1)):
            b.store(ll.Constant(I64, value), self._word(k))
        status = self._run(forward_target, pass_target)
        failed = b.icmp_signed("!=", status, ll.Constant(I32, 0))
        ran = b.append_basic_block("ran")
        undo = b.append_basic_block("undo")
        b.cbranch(failed, undo, ran)
        b.position_at_end(ran)
        self._put_back(builder.null)
        result = self._result()
        self._drop()
        b.ret(result)
        # a failed run: the caller's arrays back, then as `general`
        b.position_at_end(undo)
        self._put_back(None)
        b.branch(builder.general)
        b.position_at_end(builder.general)
        self._drop()
        b.ret(builder.call("PyTuple_New", [ll.Constant(I64, 0)]))

    def _read_arguments(self) -> None:
        """Check each argument's kind and put it into its holder."""
        builder, b = self.builder, self.b
        overflow = b.alloca(I32, name="overflow")
        written = set(self.shape.written)
        for k, kind in enumerate(self.shape.arguments):
            item = builder.argument(k)
            self.items.append(item)
            holder = self._holder(k)
            if kind == "f64":
                builder.require_type(item, float, f"float{k}")
                b.store(builder.read(item, FLOAT_AT, F64), b.bitcast(holder, F64.as_pointer()))
                continue
            if kind == "i64":
                builder.require_type(item, int, f"int{k}")
                b.store(ll.Constant(I32, 0), overflow)
                value = builder.call("PyLong_AsLongLongAndOverflow", [item, overflow])
                builder.require(b.icmp_signed("==", b.load(overflow), ll.Constant(I32, 0)),
                                f"fits{k}")
                b.store(value, holder)
                continue
            dtype, ndim, unit = kind
            dtype = np.dtype(dtype)
            builder.require_type(item, np.ndarray, f"array{k}")
            builder.require(b.icmp_unsigned("==", builder.read(item, self.descr_at, PTR),
                                            builder.address(dtype)), f"dtype{k}")
            builder.require(b.icmp_signed("==", builder.read(item, self.nd_at, I32),
                                          ll.Constant(I32, ndim)), f"rank{k}")
            if ndim:
                strides = b.bitcast(builder.read(item, self.strides_at, PTR), I64.as_pointer())
                last = b.load(b.gep(strides, [ll.Constant(I64, ndim - 1)]))
                is_unit = b.icmp_signed("==", last, ll.Constant(I64, dtype.itemsize))
                builder.require(is_unit if unit else b.not_(is_unit), f"stride{k}")
            if k in written:
                flags = builder.read(item, self.flags_at, I32)
                writable = b.and_(flags, ll.Constant(I32, WRITEABLE))
                builder.require(b.icmp_unsigned("!=", writable, ll.Constant(I32, 0)),
                                f"writable{k}")
            b.store(b.ptrtoint(item, I64), holder)

    def _bounds(self, k: int) -> tuple:
        """(first byte, one past the last byte) an array argument's elements span."""
        b, builder = self.b, self.builder
        _, ndim, _ = self.shape.arguments[k]
        item = self.items[k]
        low = high = b.ptrtoint(builder.read(item, self.data_at, PTR), I64)
        strides = b.bitcast(builder.read(item, self.strides_at, PTR), I64.as_pointer())
        zero = ll.Constant(I64, 0)
        for axis in range(ndim):
            extent = self._extent(item, axis)
            stride = b.load(b.gep(strides, [ll.Constant(I64, axis)]))
            reach = b.mul(b.sub(extent, ll.Constant(I64, 1)), stride)
            low = b.add(low, b.select(b.icmp_signed("<", reach, zero), reach, zero))
            high = b.add(high, b.select(b.icmp_signed(">", reach, zero), reach, zero))
        itemsize = np.dtype(self.shape.arguments[k][0]).itemsize
        return low, b.add(high, ll.Constant(I64, itemsize))

    def _require_apart(self) -> None:
        """No array the function writes overlaps another array argument."""
        arrays = [k for k, a in enumerate(self.shape.arguments) if isinstance(a, tuple)]
        bounds = {k: self._bounds(k) for k in arrays}
        b = self.b
        for i in self.shape.written:
            if i not in bounds:
                continue
            for j in arrays:
                if j == i:
                    continue
                (low_i, high_i), (low_j, high_j) = bounds[i], bounds[j]
                apart = b.or_(b.icmp_unsigned("<=", high_i, low_j),
                              b.icmp_unsigned("<=", high_j, low_i))
                self.builder.require(apart, f"apart{i}_{j}")

    def _seed_fits(self) -> None:
        """The loss element is inside its array (GradientPlan.fits)."""
        index = self.shape.index
        if index is None:
            return
        item = self.items[self.shape.position]
        for axis, i in enumerate(index):
            inside = self.b.icmp_signed("<", ll.Constant(I64, i), self._extent(item, axis))
            self.builder.require(inside, f"inside{axis}")

    def _make_gradients(self) -> None:
        """The zero gradients in their holders, the loss's seeded."""
        b, builder, shape = self.b, self.builder, self.shape
        float64 = np.dtype(np.float64)
        for slot, k in enumerate(self.gradient_slots):
            holder = self._holder(self.n + slot)
            seeded = k == shape.position
            if shape.gradients[k] == "f64":
                value = ll.Constant(F64, 1.0 if seeded else 0.0)
                b.store(value, b.bitcast(holder, F64.as_pointer()))
                continue
            item = self.items[k]
            ndim = shape.arguments[k][1]
            builder.call("Py_IncRef", [builder.address(float64)])     # (stolen)
            zeros = self._numpy_call("PyArray_Zeros", [
                ll.Constant(I32, ndim), self._extents(item), builder.address(float64),
                ll.Constant(I32, 0)])
            self._made(("gradient", k), zeros)
            b.store(b.ptrtoint(zeros, I64), holder)
            if seeded:
                at = ll.Constant(I64, 0)
                for axis, i in enumerate(shape.index):
                    at = b.add(b.mul(at, self._extent(item, axis)), ll.Constant(I64, i))
                data = b.bitcast(builder.read(zeros, self.data_at, PTR), F64.as_pointer())
                b.store(ll.Constant(F64, 1.0), b.gep(data, [at]))

    def _run(self, forward_target, pass_target):
        """Run the forward (if any) and the pass with the GIL released; their status."""
        builder, b = self.builder, self.b
        ctx = b.bitcast(self._word(0), PTR)
        args = b.bitcast(self._word(abi.CTX_WORDS), PTR)
        state = builder.call("PyEval_SaveThread", [])
        status_at = b.alloca(I32, name="status")
        b.store(ll.Constant(I32, 0), status_at)
        if forward_target is not None:
            status = b.call(builder.extern(forward_target, ENTRY), [ctx, args])
            b.store(status, status_at)
            with b.if_then(b.icmp_signed("==", status, ll.Constant(I32, 0))):
                b.store(b.call(builder.extern(pass_target, ENTRY), [ctx, args]), status_at)
        else:
            b.store(b.call(builder.extern(pass_target, ENTRY), [ctx, args]), status_at)
        builder.call("PyEval_RestoreThread", [state])
        return b.load(status_at)

    def _put_back(self, on_error) -> None:
        """The saved arrays written back into the caller's; with `on_error` (NULL), a
        failed write returns it (the error is set)."""
        b = self.b
        for k in self.shape.saved:
            saved = b.load(self._owned(self.owned_at[("saved", k)]))
            status = self._numpy_call("PyArray_CopyInto", [self.items[k], saved])
            if on_error is not None:
                with b.if_then(b.icmp_signed("<", status, ll.Constant(I32, 0)), likely=False):
                    self._drop()
                    b.ret(on_error)

    def _result(self):
        """The gradients' tuple: None for integer arguments, floats, the arrays made
        (their references move into the tuple); NULL where a float or the tuple
        cannot be made (the error is set)."""
        builder, b, shape = self.builder, self.b, self.shape
        result = builder.call("PyTuple_New", [ll.Constant(I64, self.n)])
        with b.if_then(b.icmp_unsigned("==", result, builder.null), likely=False):
            self._drop()
            b.ret(builder.null)
        slots = {k: slot for slot, k in enumerate(self.gradient_slots)}
        none = builder.address(None)
        for k, gradient in enumerate(shape.gradients):
            if gradient is None:
                builder.call("Py_IncRef", [none])
                item = none
            elif gradient == "f64":
                holder = self._holder(self.n + slots[k])
                item = builder.call("PyFloat_FromDouble",
                                    [b.load(b.bitcast(holder, F64.as_pointer()))])
                with b.if_then(b.icmp_unsigned("==", item, builder.null), likely=False):
                    builder.call("Py_DecRef", [result])
                    self._drop()
                    b.ret(builder.null)
            else:
                owned = self._owned(self.owned_at[("gradient", k)])
                item = b.load(owned)
                b.store(builder.null, owned)        # (the tuple's now)
            builder.store_item(result, k, item)
        return result

    def _drop(self) -> None:
        """Drop the references the builtin still owns."""
        for j in range(len(self.owned_at)):
            self.builder.call("Py_DecRef", [self.b.load(self._owned(j))])
