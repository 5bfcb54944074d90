"""The LLVM IR of a call's builtin (Note [Gradient calls without Python],
call_builtins.py): `builtin_ir(call, max_depth, keys)` writes what `call` (a
NativeCall, rlang/ad/native_calls.py) describes as one METH_FASTCALL function over
CPython's and NumPy's C APIs, reading the process's addresses from its table
(Note [Builtins kept on disk])."""
from __future__ import annotations

import numpy as np
from llvmlite import ir as ll

from ...ad.native_calls import indexed_elements, is_array, rank_of
from .. import abi
from .marshal import WRITEABLE, array_header
from .process_table import FLOAT_AT, canonical, descr_offset
from .pyapi import ENTRY, PTR, BuiltinBuilder
from .types import F64, I32, I64, I8

#: the LLVM types of the NumPy C API functions builtins call (process_table.NUMPY_SLOTS)
_NUMPY_TYPES = {
    "PyArray_CopyInto": ll.FunctionType(I32, [PTR, PTR]),
    "PyArray_NewCopy": ll.FunctionType(PTR, [PTR, I32]),
    "PyArray_Zeros": ll.FunctionType(PTR, [I32, I64.as_pointer(), PTR, I32]),
}
_C_ORDER = 0                # NPY_CORDER
#: the largest array a builtin keeps for its next call (Note [Scratch arrays kept])
SCRATCH_BYTES = 64 << 20

# Note [Scratch arrays kept]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~
# A builtin makes arrays the caller never sees: the zero directions of arguments
# a jvp has none for, the copies a pass alone works on, and, for `rlang.jvp` of
# `rlang.grad(f, loss, argnums)`, the gradients `argnums` leaves out and their
# tangents (rlang/ad/hvp_call.py gives those back as None).  kmeans' `dir`
# (GradBench, k = 10, n = 10^4, d = 8: with respect to the centroids) made three of
# 640 kB for the points each call, and in most processes glibc gave their memory
# back to the system when they were freed (the top of its heap past its trim
# threshold), so every call took it back page by page: a third of the call's time
# was the kernel's (page faults, zeroing pages), 1.31-1.35 ms a call in 4 of 5
# processes, 0.64-0.66 ms where malloc kept its memory (MALLOC_TRIM_THRESHOLD_
# raised: 0.60 ms).  So each such holder has a word in the builtin's library, where
# the array made for it is left when the call ends (one over SCRATCH_BYTES is
# dropped); the next call takes it back (an atomic exchange with 0: calls on
# several threads take a word each or make their own) where its extents are the
# ones it needs, and zeroes it (memset) or copies into it (PyArray_CopyInto)
# instead of making one.  `dir` now takes 0.64-0.69 ms in 5 of 5 processes.  What
# is kept is one array per such holder of each builtin the process loaded, until
# the process ends (the code is shared by the builtins of one key, and so are its
# words: each call checks the extents).


def builtin_ir(call, max_depth: int, keys: tuple) -> str:
    """The LLVM IR text of the builtin making `call`, its table's keys `keys`."""
    builder = BuiltinBuilder("rev_derivative_call", keys, array_header()[0])
    _Writer(builder, call, max_depth).write()
    return str(builder.module)


class _Writer:
    """Writes the builtin's body (see the Note) into a BuiltinBuilder."""

    def __init__(self, builder: BuiltinBuilder, call, max_depth: int):
        self.builder, self.b, self.call = builder, builder.b, call
        self.descr_at, self.max_depth = descr_offset(), max_depth
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
        returned = set(_returned_holders(call.results))
        self.scratch = {h: self._scratch_word(h) for h, holder in enumerate(call.holders)
                        if self._makes_object(holder) and h not in returned}
        for k in range(len(self.owned_at)):
            b.store(builder.null, self._owned(k))
        self.items: list = []

    def _makes_object(self, holder) -> bool:
        source = holder[0]
        return source in ("copy", "zeros", "seeded") or source == "direction" and \
            self.call.inputs[holder[2]] not in ("f64", "i64")

    def _scratch_word(self, h: int):
        """The library's word keeping holder h's array between calls (0: none)."""
        word = ll.GlobalVariable(self.builder.module, I64, f"scratch{h}")
        word.linkage, word.initializer = "internal", ll.Constant(I64, 0)
        return word

    def _take_scratch(self, h: int, like, ndim: int):
        """The array kept for holder h if it has `like`'s extents (it is then the
        builtin's), else NULL (one kept with other extents is dropped)."""
        builder, b = self.builder, self.b
        kept = b.inttoptr(b.atomic_rmw("xchg", self.scratch[h], ll.Constant(I64, 0),
                                       "seq_cst"), PTR)
        taken = b.alloca(PTR, name=f"taken{h}")
        b.store(builder.null, taken)
        with b.if_then(b.icmp_unsigned("!=", kept, builder.null)):
            same = ll.Constant(ll.IntType(1), 1)
            for axis in range(ndim):
                same = b.and_(same, b.icmp_signed("==", self._extent(kept, axis),
                                                  self._extent(like, axis)))
            with b.if_else(same) as (then, otherwise):
                with then:
                    b.store(kept, taken)
                with otherwise:
                    builder.call("Py_DecRef", [kept])
        return b.load(taken)

    def _leave_scratch(self, h: int, obj) -> None:
        """Leave `obj` (the builtin's array for holder h, or NULL) for the next call,
        dropping the array left there before; drop it instead where it is larger
        than SCRATCH_BYTES."""
        builder, b = self.builder, self.b
        with b.if_then(b.icmp_unsigned("!=", obj, builder.null)):
            ndim = _holder_rank(self.call, self.call.holders[h])
            small = b.icmp_unsigned("<=", self._bytes(obj, ndim), ll.Constant(I64, SCRATCH_BYTES))
            with b.if_else(small) as (then, otherwise):
                with then:
                    old = b.atomic_rmw("xchg", self.scratch[h], b.ptrtoint(obj, I64), "seq_cst")
                    builder.call("Py_DecRef", [b.inttoptr(old, PTR)])
                with otherwise:
                    builder.call("Py_DecRef", [obj])

    def _bytes(self, item, ndim: int):
        """The bytes of a float64 array of `item`'s extents."""
        size = ll.Constant(I64, 8)
        for axis in range(ndim):
            size = self.b.mul(size, self._extent(item, axis))
        return size

    # (small readers)
    def _word(self, array, k: int):
        return self.b.gep(array, [ll.Constant(I64, 0), ll.Constant(I64, k)])

    def _owned(self, k: int):
        return self._word(self.owned, k)

    def _numpy_call(self, name: str, args: list):
        return self.builder.call_slot(("numpy", name), _NUMPY_TYPES[name], args)

    def _copy(self, item, h: int | None = None, ndim: int = 0):
        """A new C-ordered copy of the array `item` (`.copy()`), or NULL; for holder
        h, into the array kept for it where there is one (Note [Scratch arrays kept])."""
        def new():
            return self._numpy_call("PyArray_NewCopy", [item, ll.Constant(I32, _C_ORDER)])

        def refill(kept):
            status = self._numpy_call("PyArray_CopyInto", [kept, item])
            copied = self.b.icmp_signed(">=", status, ll.Constant(I32, 0))
            with self.b.if_then(self.b.not_(copied)):
                self.builder.call("Py_DecRef", [kept])
            return self.b.select(copied, kept, self.builder.null)
        return new() if h not in self.scratch else self._kept_or_new(h, item, ndim, refill, new)

    def _kept_or_new(self, h: int, like, ndim: int, refill, new):
        """Holder h's array: the one kept for it, if it has `like`'s extents, as
        `refill(kept)` leaves it (that array, or NULL where refilling failed), else
        `new()` (Note [Scratch arrays kept])."""
        b = self.b
        kept = self._take_scratch(h, like, ndim)
        made = b.alloca(PTR, name=f"made{h}")
        with b.if_else(b.icmp_unsigned("!=", kept, self.builder.null)) as (then, otherwise):
            with then:
                b.store(refill(kept), made)
            with otherwise:
                b.store(new(), made)
        return b.load(made)

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

    def write(self) -> None:
        builder, b, call = self.builder, self.b, self.call
        builder.require(b.icmp_signed("==", builder.nargs, ll.Constant(I64, len(call.inputs))),
                        "counted")
        for j, kind in enumerate(call.inputs):
            self.items.append(builder.argument(j))
        for j, kind in enumerate(call.inputs):
            self._check_input(j, kind)
        for j in call.apart:
            self._require_apart(j)
        for j, index in sorted(indexed_elements(call)):
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
        status = self._run()
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
        if not is_array(kind) and kind not in ("f64", "i64"):
            return
        if kind == "f64":
            builder.require_type(item, "float", f"float{j}")
            return
        if kind == "i64":
            builder.require_type(item, "int", f"int{j}")
            return
        dtype, ndim, unit = kind
        dtype = np.dtype(dtype)
        self._require_array(item, canonical(dtype), ndim, f"{j}")
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
        builder.require_type(item, "ndarray", f"array{name}")
        builder.require(b.icmp_unsigned("==", builder.read(item, self.descr_at, PTR),
                                        builder.slot(("dtype", dtype.char))), f"dtype{name}")
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
            self._made(h, self._copy(self.items[j], h, rank_of(call, j)))
        elif source in ("zeros", "seeded"):
            zeros = self._zeros_like(self.items[j], rank_of(call, j), h)
            self._made(h, zeros)
            if source == "seeded":
                self._seed(zeros, self.items[j], holder[2])
        else:
            self._fill_direction(h, self.items[j], holder[2])

    def _made(self, h: int, obj) -> None:
        self._keep(("holder", h), obj)
        self._store_object(obj, h)

    def _zeros_like(self, item, ndim: int, h: int | None = None):
        """New float64 zeros of `item`'s extents (C order), or NULL; for holder h,
        the array kept for it zeroed where there is one (Note [Scratch arrays kept])."""
        builder = self.builder

        def new():
            float64 = builder.slot(("dtype", "d"))
            builder.call("Py_IncRef", [float64])         # (stolen)
            return self._numpy_call("PyArray_Zeros", [
                ll.Constant(I32, ndim), self._extents(item), float64, ll.Constant(I32, 0)])

        def refill(kept):
            if h in self.call.unread:       # (its values are never read)
                return kept
            memset = builder.module.declare_intrinsic("llvm.memset", [PTR, I64])
            self.b.call(memset, [builder.read(kept, self.data_at, PTR), ll.Constant(I8, 0),
                                 self._bytes(kept, ndim), ll.Constant(ll.IntType(1), 0)])
            return kept
        return new() if h not in self.scratch else self._kept_or_new(h, item, ndim, refill, new)

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
        is_none = b.icmp_unsigned("==", direction, builder.slot(("object", "None")))
        if self.call.inputs[k] == "f64":
            value = b.alloca(F64, name=f"direction{h}")
            b.store(ll.Constant(F64, 0.0), value)
            with b.if_then(b.not_(is_none)):
                builder.require_type(direction, "float", f"direction_float{h}")
                b.store(builder.read(direction, FLOAT_AT, F64), value)
            self._store_double(b.load(value), h)
            return
        like, ndim = self.items[k], rank_of(self.call, k)
        made = b.alloca(PTR, name=f"direction{h}")
        with b.if_else(is_none) as (then, otherwise):
            with then:
                b.store(self._zeros_like(like, ndim, h), made)
            with otherwise:
                self._require_array(direction, np.dtype("d"), ndim, f"_direction{h}")
                for axis in range(ndim):
                    same = b.icmp_signed("==", self._extent(direction, axis),
                                         self._extent(like, axis))
                    builder.require(same, f"extent{h}_{axis}")
                b.store(self._copy(direction, h, ndim), made)
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
        arrays = [j for j, kind in enumerate(self.call.inputs) if is_array(kind)]
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

    def _run(self):
        """Run the entry points in turn with the GIL released, each only where the one
        before succeeded; the last status."""
        builder, b = self.builder, self.b
        ctx = b.bitcast(self.ctx, PTR)
        state = builder.call("PyEval_SaveThread", [])
        status_at = b.alloca(I32, name="status")
        b.store(ll.Constant(I32, 0), status_at)
        for r, pointers in enumerate(self.pointers):
            with b.if_then(b.icmp_signed("==", b.load(status_at), ll.Constant(I32, 0))):
                status = builder.call_slot(("entry", r), ENTRY, [ctx, b.bitcast(pointers, PTR)])
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
        none = builder.slot(("object", "None"))
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
        """Drop the references the builtin still owns (leaving its scratch holders'
        arrays for the next call: Note [Scratch arrays kept])."""
        for what, k in self.owned_at.items():
            obj = self.b.load(self._owned(k))
            if what[0] == "holder" and what[1] in self.scratch:
                self._leave_scratch(what[1], obj)
            else:
                self.builder.call("Py_DecRef", [obj])


def _returned_holders(results):
    """The holders whose arrays a call's `results` give back (NativeCall)."""
    for item in results:
        if item is None:
            continue
        if isinstance(item[0], str):
            if item[0] == "array":
                yield item[1]
        else:
            yield from _returned_holders(item)


def _holder_rank(call, holder) -> int:
    """The rank of the array a holder that makes an object holds."""
    return rank_of(call, holder[2] if holder[0] == "direction" else holder[1])
