"""Calls as Python builtins: `call_builtin(entries, call, max_depth)` is a builtin
function that makes a whole call as `call` (a NativeCall, rlang/ad/native_calls.py)
describes it: the arguments checked, the values it needs made (zero gradients
seeded, copies), the entry points run in turn (a function's; a forward run and a
gradient pass; their tangent runs for `rlang.hvp`), the caller's arrays put back,
the results' tuple; or gives back () where the caller must make the call; None
where no such builtin can be made (Note [Calls without ctypes], Note [Gradient
calls without Python]).

Note [Calls without ctypes]
~~~~~~~~~~~~~~~~~~~~~~~~~~~
`square!(y!, x)` (`y! += x * x`, GradBench's hello) took 5–8 µs a call, PyTorch's
`x * x` 1.7 µs: the native work is a nanosecond, the rest was Python around one
ctypes call (the module's `call`, the signature, `pack`, ctypes' own argument
conversion, `unpack`).  From the second call of a function with arguments of some
kinds (`LlvmFunctions.call`), its calls go through a builtin function
(METH_FASTCALL) generated in LLVM IR over CPython's C API: it reads the argument
objects, fills the entry point's holders on its stack, releases the GIL around the
entry point as ctypes does, and builds the tuple of new values (floats and ints
made, arrays the same objects, updated in place).  It decides nothing the general
call would decide differently:

- each argument must be exactly a `float` (f64), an `int` in i64's range (i64) or
  an `np.ndarray` of the canonical dtype, rank and last-axis stride kind of the
  signature the builtin was made for (a written one writable and, with the
  reversibility checks on, apart from the others' memory), so every argument the
  general call would convert, refuse or range-check goes there;
- any other count of arguments, a failed check in the code (a status other than 0)
  or a failed allocation of a result gives back the empty tuple, and the caller
  makes the general call from the start: the code has no `print` and its failed
  checks leave nothing changed that the second run would see differently (the
  run is the only one anybody sees: its error is the general call's, with its
  frame variables, once the first run's are dropped);
- modules whose code prints, recurses deeply (the big-stack thread) or runs
  `@parallel for` loops (their Python hook) are not given one, nor is code that is
  still the quick first tier (Note [A quick first call]).

The C structures read are CPython's object header (`ob_type` at 8 bytes), a float's
value (at 16) and a tuple's items (from 24), as CPython 3.8–3.13 lay them out, and
NumPy's array object (`marshal.array_header()` and its `descr`); `pyapi.layout_known()`
and `_descr_offset()` read them from live objects first, and where they differ (a
free-threaded or debug build) no builtin is made.

Note [Gradient calls without Python]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
`rlang.grad(f, loss, argnums=1)` on the 10-vertex graph embedding (invcheck off)
took 12.7 µs a call of which the native gradient pass was 4.4: the rest was the
short route's Python (Note [The gradient's short route], ad/gradient_route.py):
the signature and the plan's key, the zero gradients and the seed, the copies,
packing the buffer, unpacking it and the tuple.  All of it is decided by the
route's plan (the argument kinds, which gradients are arrays, the loss element,
which arrays are copied or kept), written down as a `NativeCall`, so a builtin
generated in LLVM IR over CPython's and NumPy's C APIs does it in one call:

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
- the holders are one word each, as the entry points' one-word layouts read them
  (arrays by their objects, Note [Arrays read by the entry point]), on the
  builtin's stack with one array of argument pointers per entry point (the forward
  and the pass share the holders of f's arguments, as on one packed buffer: Note
  [Two entry points on one buffer]), and the entry points run with the GIL
  released, as ctypes runs them;
- anything else, a failed check in the code (status ≠ 0) or a failed allocation
  gives back the empty tuple after putting the caller's arrays back and dropping
  what it made, and the route makes the call from the start, with its errors.

NumPy's C API is reached through its `_ARRAY_API` table, whose slots are NumPy's
stable ABI (an extension built against NumPy 1.x runs on 2.x); the table is checked
to hold `PyArray_Type` in its slot first.  Where it is not found, or the array
objects are not laid out as `marshal.array_header()` reads them, or the code
prints, recurses deeply or runs `@parallel for` loops (as for function calls), no
builtin is made.  On the embedding (invcheck off) a call now takes 2.9 µs, less
than the pass alone took through ctypes (3.1 µs).  `rlang.hvp` has the same: its
forward tangent run and the tangent run of the gradient pass, on copies of the
arrays and the vector's entries (None: zeros).
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np
from llvmlite import ir as ll

from ...lower.argument_types import DTYPE_SCALARS
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
_FLOAT64 = np.dtype(np.float64)


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


def call_builtin(entries: list, call, max_depth: int):
    """The builtin making `call` (a NativeCall) with `entries` ((NativeModule,
    symbol) per run of `call.runs`), or None where it cannot have one (see the
    Note)."""
    natives = [native for native, _ in entries]
    if not layout_known() or _numpy_api() is None or _descr_offset() is None or any(
            n.recursive or n.threaded_loops or not n.settled_now() for n in natives):
        return None
    codes = [n.settled() for n in natives]
    if any(code.prints for code in codes) or not all(
            _fits(call, holders, native.layout(symbol))
            for (native, symbol), holders in zip(entries, call.runs)):
        return None
    targets, kept = [], []
    for k, (native, symbol) in enumerate(entries):
        target, entry = entry_symbol(native, symbol, f"rev_derivative_run{k}")
        targets.append(target)
        kept.append(entry)
    dtypes = [_canonical(kind[0]) for kind in call.inputs if _is_array(kind)]
    if any(dtype is None for dtype in dtypes) or \
            any(i < 0 for _, index in _indexed(call) for i in index):
        return None
    builder = BuiltinBuilder("rev_derivative_call")
    _Writer(builder, call, max_depth).write(targets)
    return builder.finish(f"{entries[-1][1]}_call", tuple(codes + kept + dtypes))


def _indexed(call) -> set:
    """(input, index) of every element the call reads or writes at a constant index
    (its `inside`, its seeds, its reads), each checked to be inside its array."""
    elements = set(call.inside)
    elements.update((holder[1], holder[2]) for holder in call.holders
                    if holder[0] == "seeded")
    elements.update((call.holders[h][1], index) for _, h, index in call.reads
                    if index is not None)
    return elements


def _is_array(kind) -> bool:
    """Whether an input kind is an array's `(dtype, rank, unit last stride)`."""
    return isinstance(kind, tuple) and isinstance(kind[0], np.dtype)


def _canonical(dtype):
    """NumPy's own object for `dtype` (the one plain arrays of it hold), or None."""
    canonical = np.dtype(dtype.char)
    return canonical if canonical == dtype and canonical.isnative else None


def _array_kind(call, j: int):
    """(element type name, rank) of array input j, or None."""
    kind = call.inputs[j]
    return (DTYPE_SCALARS.get(kind[0]), kind[1]) if _is_array(kind) else None


def _rank(call, j: int):
    kind = call.inputs[j]
    return kind[1] if _is_array(kind) else None


def _holder_type(call, holder):
    """The entry point type (an IR type name, or (element, rank) of an array) that a
    holder gives, or None where it gives none an entry point takes."""
    source = holder[0]
    if source == "number":
        return "f64"
    j = holder[1]
    if source == "input":
        kind = call.inputs[j]
        return kind if kind in ("f64", "i64") else _array_kind(call, j)
    if source == "copy":
        return _array_kind(call, j)
    if source in ("zeros", "seeded"):
        return ("f64", _rank(call, j))
    if source == "direction":
        like = call.inputs[holder[2]]
        return "f64" if like == "f64" else ("f64", _rank(call, holder[2]))
    return None


def _fits(call, holders: tuple, layout) -> bool:
    """Whether an entry point of `layout` takes these holders: one-word holders of
    the types they give."""
    if not layout.one_word or len(layout.types) != len(holders):
        return False
    for holder, t in zip(holders, layout.types):
        given = _holder_type(call, call.holders[holder])
        if isinstance(given, tuple):
            if getattr(t, "elem", None) != given[0] or getattr(t, "ndim", None) != given[1]:
                return False
        elif given is None or given != t:
            return False
    return True


class _Writer:
    """Writes the builtin's body (see the Note) into a BuiltinBuilder."""

    def __init__(self, builder: BuiltinBuilder, call, max_depth: int):
        self.builder, self.b, self.call = builder, builder.b, call
        self.numpy, self.descr_at, self.max_depth = _numpy_api(), _descr_offset(), max_depth
        self.data_at, self.nd_at, self.dims_at, self.strides_at, self.flags_at = \
            array_header()
        b = self.b
        self.ctx = b.alloca(ll.ArrayType(I64, abi.CTX_WORDS), name="ctx")
        self.holders = b.alloca(ll.ArrayType(I64, max(1, len(call.holders))), name="holders")
        self.pointers = [b.alloca(ll.ArrayType(I64, max(1, len(run))), name=f"pointers{r}")
                         for r, run in enumerate(call.runs)]
        # what the builtin made and drops on leaving: arrays of holders, saved inputs
        self.owned_at = {("holder", h): j for j, h in enumerate(
            h for h, holder in enumerate(call.holders) if self._makes_object(holder))}
        for j in call.saved:
            self.owned_at[("saved", j)] = len(self.owned_at)
        self.owned = b.alloca(ll.ArrayType(PTR, max(1, len(self.owned_at))), name="owned")
        self.read_values = b.alloca(ll.ArrayType(F64, max(1, len(call.reads))), name="reads")
        for k in range(len(self.owned_at)):
            b.store(builder.null, self._owned(k))
        self.items: list = []

    def _makes_object(self, holder) -> bool:
        source = holder[0]
        return source in ("copy", "zeros", "seeded") or source == "direction" and \
            self.call.inputs[holder[2]] not in ("f64", "i64")

    # (small readers)
    def _word(self, array, k: int):
        return self.b.gep(array, [ll.Constant(I64, 0), ll.Constant(I64, k)])

    def _owned(self, k: int):
        return self._word(self.owned, k)

    def _numpy_call(self, name: str, args: list):
        return self.builder.call_address(f"rev_numpy_{name}", self.numpy[name],
                                         _NUMPY[name][1], args)

    def _copy(self, item):
        """A new C-ordered copy of the array `item` (`.copy()`), or NULL."""
        return self._numpy_call("PyArray_NewCopy", [item, ll.Constant(I32, _C_ORDER)])

    def _extents(self, item):
        return self.b.bitcast(self.builder.read(item, self.dims_at, PTR), I64.as_pointer())

    def _extent(self, item, axis: int):
        return self.b.load(self.b.gep(self._extents(item), [ll.Constant(I64, axis)]))

    def _keep(self, what: tuple, obj) -> None:
        """Keep `obj` (a new reference, or NULL: then go to `general`) as `what`."""
        b = self.b
        b.store(obj, self._owned(self.owned_at[what]))
        self.builder.require(b.icmp_unsigned("!=", obj, self.builder.null),
                             f"made_{what[0]}{what[1]}")

    def _store_double(self, value, h: int) -> None:
        self.b.store(value, self.b.bitcast(self._word(self.holders, h), F64.as_pointer()))

    def _store_object(self, obj, h: int) -> None:
        self.b.store(self.b.ptrtoint(obj, I64), self._word(self.holders, h))

    def write(self, targets: list) -> None:
        builder, b, call = self.builder, self.b, self.call
        builder.require(b.icmp_signed("==", builder.nargs, ll.Constant(I64, len(call.inputs))),
                        "counted")
        for j, kind in enumerate(call.inputs):
            self.items.append(builder.argument(j))
        for j, kind in enumerate(call.inputs):
            self._check_input(j, kind)
        for j in call.apart:
            self._require_apart(j)
        for j, index in sorted(_indexed(call)):
            for axis, i in enumerate(index):
                inside = b.icmp_signed("<", ll.Constant(I64, i), self._extent(self.items[j], axis))
                builder.require(inside, f"inside{j}_{axis}")
        for h, holder in enumerate(call.holders):
            self._fill(h, holder)
        for j in call.saved:
            self._keep(("saved", j), self._copy(self.items[j]))
        for pointers, run in zip(self.pointers, call.runs):
            for k, h in enumerate(run):
                b.store(b.ptrtoint(self._word(self.holders, h), I64), self._word(pointers, k))
        for k, value in ((abi.CTX_SITE, 0), (abi.CTX_DEPTH, 0),
                         (abi.CTX_MAX_DEPTH, self.max_depth), (abi.CTX_THREADS, 1)):
            b.store(ll.Constant(I64, value), self._word(self.ctx, k))
        status = self._run(targets)
        ran, undo = b.append_basic_block("ran"), b.append_basic_block("undo")
        b.cbranch(b.icmp_signed("!=", status, ll.Constant(I32, 0)), undo, ran)
        b.position_at_end(ran)
        self._put_back(builder.null)
        result = self._tuple(call.results)
        self._drop()
        b.ret(result)
        b.position_at_end(undo)         # a failed run: the caller's arrays back, then
        self._put_back(None)            # as `general`
        b.branch(builder.general)
        b.position_at_end(builder.general)
        self._drop()
        b.ret(builder.call("PyTuple_New", [ll.Constant(I64, 0)]))

    def _check_input(self, j: int, kind) -> None:
        """Go on where input j is of its kind (a direction's is checked where it is
        used, an input read by nothing is not)."""
        builder, b, item = self.builder, self.b, self.items[j]
        if not _is_array(kind) and kind not in ("f64", "i64"):
            return
        if kind == "f64":
            builder.require_type(item, float, f"float{j}")
            return
        if kind == "i64":
            builder.require_type(item, int, f"int{j}")
            return
        dtype, ndim, unit = kind
        dtype = np.dtype(dtype)
        self._require_array(item, _canonical(dtype), ndim, f"{j}")
        if ndim:
            strides = b.bitcast(builder.read(item, self.strides_at, PTR), I64.as_pointer())
            last = b.load(b.gep(strides, [ll.Constant(I64, ndim - 1)]))
            is_unit = b.icmp_signed("==", last, ll.Constant(I64, dtype.itemsize))
            builder.require(is_unit if unit else b.not_(is_unit), f"stride{j}")
        if j in self.call.writable:
            flags = builder.read(item, self.flags_at, I32)
            writable = b.and_(flags, ll.Constant(I32, WRITEABLE))
            builder.require(b.icmp_unsigned("!=", writable, ll.Constant(I32, 0)),
                            f"writable{j}")

    def _require_array(self, item, dtype, ndim: int, name: str) -> None:
        """Go on where `item` is exactly an ndarray of the canonical `dtype` and rank."""
        builder, b = self.builder, self.b
        builder.require_type(item, np.ndarray, f"array{name}")
        builder.require(b.icmp_unsigned("==", builder.read(item, self.descr_at, PTR),
                                        builder.address(dtype)), f"dtype{name}")
        builder.require(b.icmp_signed("==", builder.read(item, self.nd_at, I32),
                                      ll.Constant(I32, ndim)), f"rank{name}")

    def _fill(self, h: int, holder) -> None:
        """Put holder h's value into it (see NativeCall)."""
        builder, b, call = self.builder, self.b, self.call
        source, j = holder[0], holder[1] if len(holder) > 1 else None
        if source == "number":
            self._store_double(ll.Constant(F64, holder[1]), h)
        elif source == "input" and call.inputs[j] == "f64":
            self._store_double(builder.read(self.items[j], FLOAT_AT, F64), h)
        elif source == "input" and call.inputs[j] == "i64":
            overflow = b.alloca(I32, name="overflow")
            b.store(ll.Constant(I32, 0), overflow)
            value = builder.call("PyLong_AsLongLongAndOverflow", [self.items[j], overflow])
            builder.require(b.icmp_signed("==", b.load(overflow), ll.Constant(I32, 0)),
                            f"fits{j}")
            b.store(value, self._word(self.holders, h))
        elif source == "input":
            self._store_object(self.items[j], h)
        elif source == "copy":
            self._made(h, self._copy(self.items[j]))
        elif source in ("zeros", "seeded"):
            zeros = self._zeros_like(self.items[j], _rank(call, j))
            self._made(h, zeros)
            if source == "seeded":
                self._seed(zeros, self.items[j], holder[2])
        else:
            self._fill_direction(h, self.items[j], holder[2])

    def _made(self, h: int, obj) -> None:
        self._keep(("holder", h), obj)
        self._store_object(obj, h)

    def _zeros_like(self, item, ndim: int):
        builder = self.builder
        builder.call("Py_IncRef", [builder.address(_FLOAT64)])         # (stolen)
        return self._numpy_call("PyArray_Zeros", [
            ll.Constant(I32, ndim), self._extents(item), builder.address(_FLOAT64),
            ll.Constant(I32, 0)])

    def _seed(self, zeros, like, index: tuple) -> None:
        """1.0 at `index` of new C-ordered zeros of `like`'s extents."""
        b = self.b
        at = ll.Constant(I64, 0)
        for axis, i in enumerate(index):
            at = b.add(b.mul(at, self._extent(like, axis)), ll.Constant(I64, i))
        data = b.bitcast(self.builder.read(zeros, self.data_at, PTR), F64.as_pointer())
        b.store(ll.Constant(F64, 1.0), b.gep(data, [at]))

    def _fill_direction(self, h: int, direction, k: int) -> None:
        """A direction for input k: None gives zeros (0.0), a float its value, a
        float64 array of input k's extents a copy of it."""
        builder, b = self.builder, self.b
        is_none = b.icmp_unsigned("==", direction, builder.address(None))
        if self.call.inputs[k] == "f64":
            value = b.alloca(F64, name=f"direction{h}")
            b.store(ll.Constant(F64, 0.0), value)
            with b.if_then(b.not_(is_none)):
                builder.require_type(direction, float, f"direction_float{h}")
                b.store(builder.read(direction, FLOAT_AT, F64), value)
            self._store_double(b.load(value), h)
            return
        like, ndim = self.items[k], _rank(self.call, k)
        made = b.alloca(PTR, name=f"direction{h}")
        with b.if_else(is_none) as (then, otherwise):
            with then:
                b.store(self._zeros_like(like, ndim), made)
            with otherwise:
                self._require_array(direction, _FLOAT64, ndim, f"_direction{h}")
                for axis in range(ndim):
                    same = b.icmp_signed("==", self._extent(direction, axis),
                                         self._extent(like, axis))
                    builder.require(same, f"extent{h}_{axis}")
                b.store(self._copy(direction), made)
        self._made(h, b.load(made))

    def _bounds(self, j: int) -> tuple:
        """(first byte, one past the last byte) array input j's elements span."""
        b, builder = self.b, self.builder
        dtype, ndim, _ = self.call.inputs[j]
        item = self.items[j]
        low = high = b.ptrtoint(builder.read(item, self.data_at, PTR), I64)
        strides = b.bitcast(builder.read(item, self.strides_at, PTR), I64.as_pointer())
        zero = ll.Constant(I64, 0)
        for axis in range(ndim):
            extent = self._extent(item, axis)
            stride = b.load(b.gep(strides, [ll.Constant(I64, axis)]))
            reach = b.mul(b.sub(extent, ll.Constant(I64, 1)), stride)
            low = b.add(low, b.select(b.icmp_signed("<", reach, zero), reach, zero))
            high = b.add(high, b.select(b.icmp_signed(">", reach, zero), reach, zero))
        return low, b.add(high, ll.Constant(I64, np.dtype(dtype).itemsize))

    def _require_apart(self, i: int) -> None:
        """Array input i overlaps no other array input (its kind checked before)."""
        arrays = [j for j, kind in enumerate(self.call.inputs) if _is_array(kind)]
        if i not in arrays:
            return
        b = self.b
        low_i, high_i = self._bounds(i)
        for j in arrays:
            if j != i:
                low_j, high_j = self._bounds(j)
                apart = b.or_(b.icmp_unsigned("<=", high_i, low_j),
                              b.icmp_unsigned("<=", high_j, low_i))
                self.builder.require(apart, f"apart{i}_{j}")

    def _run(self, targets: list):
        """Run the entry points in turn with the GIL released, each only where the one
        before succeeded; the last status."""
        builder, b = self.builder, self.b
        ctx = b.bitcast(self.ctx, PTR)
        state = builder.call("PyEval_SaveThread", [])
        status_at = b.alloca(I32, name="status")
        b.store(ll.Constant(I32, 0), status_at)
        for r, (target, pointers) in enumerate(zip(targets, self.pointers)):
            with b.if_then(b.icmp_signed("==", b.load(status_at), ll.Constant(I32, 0))):
                status = b.call(builder.extern(target, ENTRY), [ctx, b.bitcast(pointers, PTR)])
                b.store(status, status_at)
                with b.if_then(b.icmp_signed("==", status, ll.Constant(I32, 0))):
                    for k, (after, h, index) in enumerate(self.call.reads):
                        if after == r:
                            b.store(self._read(h, index), self._word(self.read_values, k))
        builder.call("PyEval_RestoreThread", [state])
        return b.load(status_at)

    def _read(self, h: int, index):
        """The float in holder h, or the element `index` of the float64 array whose
        object it holds (by its strides)."""
        b = self.b
        word = self._word(self.holders, h)
        if index is None:
            return b.load(b.bitcast(word, F64.as_pointer()))
        array = b.inttoptr(b.load(word), PTR)
        strides = b.bitcast(self.builder.read(array, self.strides_at, PTR), I64.as_pointer())
        at = ll.Constant(I64, 0)
        for axis, i in enumerate(index):
            stride = b.load(b.gep(strides, [ll.Constant(I64, axis)]))
            at = b.add(at, b.mul(stride, ll.Constant(I64, i)))
        data = self.builder.read(array, self.data_at, PTR)
        return b.load(b.bitcast(b.gep(data, [at]), F64.as_pointer()))

    def _put_back(self, on_error) -> None:
        """The saved arrays written back into the caller's; with `on_error` (NULL), a
        failed write returns it (the error is set)."""
        b = self.b
        for j in self.call.saved:
            saved = b.load(self._owned(self.owned_at[("saved", j)]))
            status = self._numpy_call("PyArray_CopyInto", [self.items[j], saved])
            if on_error is not None:
                with b.if_then(b.icmp_signed("<", status, ll.Constant(I32, 0)), likely=False):
                    self._drop()
                    b.ret(on_error)

    def _tuple(self, items: tuple, outer: tuple = ()):
        """A new tuple of `items` (see NativeCall's `results`), inside the tuples
        `outer` being made; on a failed allocation what was made is dropped and NULL
        returned (the error is set)."""
        builder, b = self.builder, self.b
        result = builder.call("PyTuple_New", [ll.Constant(I64, len(items))])

        def fail():
            for made in outer:
                builder.call("Py_DecRef", [made])
            self._drop()
            b.ret(builder.null)
        with b.if_then(b.icmp_unsigned("==", result, builder.null), likely=False):
            fail()
        none = builder.address(None)
        for k, item in enumerate(items):
            if item is None:
                builder.call("Py_IncRef", [none])
                value = none
            elif item[0] in ("float", "read", "int"):
                word = self._word(self.read_values if item[0] == "read" else self.holders,
                                  item[1])
                value = builder.call("PyLong_FromLongLong", [b.load(word)]) \
                    if item[0] == "int" else \
                    builder.call("PyFloat_FromDouble", [b.load(b.bitcast(word, F64.as_pointer()))])
                with b.if_then(b.icmp_unsigned("==", value, builder.null), likely=False):
                    builder.call("Py_DecRef", [result])
                    fail()
            elif item[0] == "input":
                value = self.items[item[1]]
                builder.call("Py_IncRef", [value])
            elif item[0] == "array":
                owned = self._owned(self.owned_at[("holder", item[1])])
                value = b.load(owned)
                b.store(builder.null, owned)        # (the tuple's now)
            else:
                value = self._tuple(item, outer + (result,))
            builder.store_item(result, k, value)
        return result

    def _drop(self) -> None:
        """Drop the references the builtin still owns."""
        for k in range(len(self.owned_at)):
            self.builder.call("Py_DecRef", [self.b.load(self._owned(k))])
