"""Pack Python values into the memory an entry point reads, and read them back.

An entry point `<symbol>_entry(int64 *ctx, void **args)` (rlang/backends/abi.py)
takes the error context, an array of argument pointers, and behind each pointer
the argument's storage: an array's descriptor `{data, shape…, strides…}`, a
complex number's two doubles, a scalar.  `EntryLayout(types, results)` lays all of
that out in one buffer of int64 words, so a call costs one allocation, one
`struct.pack_into` and one `struct.unpack_from` rather than a ctypes object per
argument (a call of a small kernel is dominated by this; docs/backends.md,
"Calling compiled code").

    layout = EntryLayout(types, results)
    buffer = layout.pack(values, max_depth)        # → ctypes int64 array
    status = entry(layout.ctx(buffer), layout.args(buffer))
    new_values, store = layout.unpack(buffer, values)

`values` are conformed to `types` already (rlang/backends/llvm/backend.py); arrays must be
aligned, in native byte order and with whole-element strides, otherwise `pack`
raises RlangTypeError (updates must land in place, so they are never copied).
`results` name the store variables `main` returns; their holders start zeroed and
an array among them is memory the generated code allocated, copied into NumPy and
freed by `unpack`.  A stack travels as `{data, length, capacity}`: its items are
copied into malloc memory that the generated code may realloc (backends/llvm/stacks.py),
and copied back into the `Stack` (in place) or into a new one for the store, after
which the memory is freed — also when the call fails, or packing a later argument
does.
"""
from __future__ import annotations

import ctypes
import struct

import numpy as np

from ...ir import nodes as ir
from ...errors import RlangRuntimeError, RlangTypeError
from ...numbers import F32, I32, Fixed, FixedArray, ULog, ULogArray
from ...types_rules import BackendUnsupported
from .. import abi

#: struct codes of one scalar holder (each holder takes whole 8-byte words).
_SCALAR_CODES = {"bool": "?7x", "i32": "i4x", "i64": "q", "f32": "f4x", "f64": "d",
                 "fixed": "q", "ulog": "d", "complex": "dd"}
#: site, depth, max depth, …, the threads a `@parallel for` may use (abi.CTX_THREADS)
_HEADER = struct.Struct(f"=qqq{(abi.CTX_WORDS - 4) * 8}xq")
_CTX = struct.Struct("=" + "q" * abi.CTX_WORDS)

_DTYPES = {"bool": "bool", "i32": "int32", "i64": "int64", "f32": "float32",
           "f64": "float64", "fixed": "int64", "ulog": "float64", "complex": "complex128"}


class EntryLayout:
    """The buffer layout of one entry point: the context words, the argument
    pointer array, then one holder per argument and per store result.  With
    `objects`, an array argument's holder is the address of its NumPy array object,
    which the entry point reads itself (`<symbol>_pyentry`, Note [Arrays read by the
    entry point]); without, it is the array's descriptor (`<symbol>_entry`)."""

    def __init__(self, types: tuple, results: tuple = (), objects: bool = False,
                 written: frozenset = frozenset(), changed: frozenset = frozenset()):
        self.types, self.results = tuple(types), tuple(results)
        holders = list(self.types) + [t for _, t in self.results]
        codes = [_holder_code(t, objects) for t in self.types] + \
            [_holder_code(t) for _, t in self.results]
        self._codes = codes
        self._pointers_at = abi.CTX_WORDS * 8
        self._holders_at = self._pointers_at + 8 * len(holders)
        self._holders = struct.Struct("=" + "".join(codes))
        self._whole = struct.Struct(_HEADER.format + "Q" * len(holders) + "".join(codes))
        self._words = (self._holders_at + self._holders.size) // 8
        # where each holder starts: in bytes from the first holder, in unpacked fields
        self._offsets, self._fields, at, field = [], [], 0, 0
        for code in codes:
            self._offsets.append(at)
            self._fields.append(field)
            at += struct.calcsize("=" + code)
            field += _field_count(code)
        self._packers = [_packer(t, objects, k if k in written else None)
                         for k, t in enumerate(self.types)]
        self._stacks = [k for k, t in enumerate(self.types) if isinstance(t, ir.StackType)]
        self.has_stacks = bool(self._stacks)
        # the positions the entry point may change: write, or add to (gradients)
        self.changed = frozenset(changed) | frozenset(written)
        self._zeros = [0] * sum(map(_field_count, codes[len(self.types):]))
        # Note [Calls of one-word arguments]
        self._one_word = objects and not self.results and all(
            isinstance(t, ir.ArrayType) or t in _ONE_WORD for t in self.types)
        self._objects = [(k, abi.ITEM_BYTES[t.elem]) for k, t in enumerate(self.types)
                         if isinstance(t, ir.ArrayType)]
        self._wrapped = [(k, _WRAPPERS[t]) for k, t in enumerate(self.types)
                         if t in _WRAPPERS]
        self._start = struct.Struct(_HEADER.format)
        self._spare: list = []          # buffers of finished calls, their pointers set

    def pack(self, values: list, max_depth: int, threads: int = 1):
        """A buffer holding `values` (arguments, in the order of `types`), its
        context allowing `threads` threads; hand it back with `reuse` after a call
        that succeeded."""
        if self._one_word:
            buffer = self._spare.pop() if self._spare else self._new_buffer()
            holders = list(values)
            for k, item in self._objects:
                holders[k] = _object_address(holders[k], item)
            self._start.pack_into(buffer, 0, 0, 0, max_depth, threads)
            self._holders.pack_into(buffer, self._holders_at, *holders)
            return buffer
        buffer = (ctypes.c_int64 * self._words)()
        base = ctypes.addressof(buffer) + self._holders_at
        fields = list(map(base.__add__, self._offsets))
        if self._stacks:
            return self._pack_with_stacks(buffer, fields, values, max_depth, threads)
        for pack, value in zip(self._packers, values):
            pack(value, fields)
        self._whole.pack_into(buffer, 0, 0, 0, max_depth, threads, *fields, *self._zeros)
        return buffer

    @property
    def one_word(self) -> bool:
        """Whether every holder is one word of the value itself (an array's object
        address): Note [Calls of one-word arguments]."""
        return self._one_word

    def leads(self, other: "EntryLayout") -> bool:
        """Whether this layout's entry point can run on a buffer `other` packed
        (Note [Two entry points on one buffer], backends/llvm/paired.py): its holders
        are `other`'s first ones, of the same codes, it has no store results, and both
        take one-word arguments."""
        n = len(self.types)
        return not self.results and self._one_word and other._one_word and \
            self.types == other.types[:n] and self._codes == other._codes[:n]

    def _new_buffer(self):
        """A buffer whose argument pointers point at its holders."""
        buffer = (ctypes.c_int64 * self._words)()
        base = ctypes.addressof(buffer) + self._holders_at
        struct.pack_into("=" + "Q" * len(self._offsets), buffer, self._pointers_at,
                         *map(base.__add__, self._offsets))
        return buffer

    def reuse(self, buffer) -> None:
        """Keep the buffer of a call that succeeded for a later call."""
        if self._one_word and len(self._spare) < 4:
            self._spare.append(buffer)

    def _pack_with_stacks(self, buffer, fields, values, max_depth, threads):
        copied = []                 # (field, type) of the stacks copied so far
        try:
            for pack, value, t in zip(self._packers, values, self.types):
                at = len(fields)
                pack(value, fields)
                if isinstance(t, ir.StackType):
                    copied.append((at, t))
        except BaseException:
            for at, t in copied:
                _free(ctypes.c_void_p(fields[at]))
            raise
        self._whole.pack_into(buffer, 0, 0, 0, max_depth, threads, *fields, *self._zeros)
        return buffer

    def release(self, buffer, values: list) -> None:
        """After the call, failed or not: the stack arguments' items back into their
        `Stack`s, in place (as the interpreter's stacks), and their memory freed."""
        if not self._stacks:
            return
        fields = self._holders.unpack_from(buffer, self._holders_at)
        for k in self._stacks:
            values[k].items[:] = _take_stack(fields, self._fields[k], self.types[k])

    def ctx(self, buffer) -> int:
        return ctypes.addressof(buffer)

    def args(self, buffer) -> int:
        return ctypes.addressof(buffer) + self._pointers_at

    def context(self, buffer) -> list:
        """The context words, after a failed check."""
        return list(_CTX.unpack_from(buffer, 0))

    def unpack(self, buffer, values: list) -> list:
        """The arguments' new values (arrays: the same objects, updated in place),
        then `(name, value)` for each store result."""
        fields = self._holders.unpack_from(buffer, self._holders_at)
        if self._one_word:
            new = list(fields)
            for k, _ in self._objects:
                new[k] = values[k]
            for k, wrap in self._wrapped:
                new[k] = wrap(new[k])
            return new
        new = [value if isinstance(t, (ir.ArrayType, ir.StackType)) else
               _scalar(fields, at, t) for value, t, at in zip(values, self.types, self._fields)]
        first = len(self.types)
        for k, (name, t) in enumerate(self.results):
            new.append((name, _store_value(fields, self._fields[first + k], t)))
        return new


# Note [Calls of one-word arguments]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Most calls pass only arrays (as their objects, Note [Arrays read by the entry
# point]) and scalars held in one word each, and `main`'s store is not among them.
# Such a call packs the values themselves (the arrays' addresses in their places)
# with one `struct.pack_into`, into a buffer kept from an earlier call whose
# argument pointers are already set, and unpacks them as they come, wrapping i32
# and f32 results in their types: a few microseconds less per call than packing
# holder by holder, which is most of the cost of calling a small function.

#: Scalar types held in one word whose value packs as it is.
_ONE_WORD = ("bool", "i32", "i64", "f32", "f64")


#: How an unpacked scalar of these types becomes its rev value.
_WRAPPERS = {"i32": I32, "f32": F32, "fixed": Fixed, "ulog": ULog}


def _holder_code(t, objects: bool = False) -> str:
    if isinstance(t, ir.StackType):
        return "qqq"
    if isinstance(t, ir.ArrayType):
        return "q" if objects else "q" * (1 + 2 * t.ndim)
    return _SCALAR_CODES[t]


def _field_count(code: str) -> int:
    """How many values `struct` packs for one holder's code."""
    return len(struct.unpack("=" + code, bytes(struct.calcsize("=" + code))))


def _packer(t, objects: bool = False, written_at=None):
    """`pack(value, fields)`: append the holder fields of one argument of type t (at
    position `written_at` when the function updates it)."""
    if isinstance(t, ir.StackType):
        return lambda stack, fields: fields.extend(_stack_words(stack, t))
    if isinstance(t, ir.ArrayType):
        if not objects and written_at is not None:
            return lambda array, fields: _pack_array(_writable(array, written_at), fields)
        if not objects:
            return _pack_array
        item = abi.ITEM_BYTES[t.elem]
        return lambda array, fields: fields.append(_object_address(array, item))
    if t == "complex":
        return lambda value, fields: fields.extend((value.real, value.imag))
    if t == "fixed":
        return lambda value, fields: fields.append(value.raw)
    if t == "ulog":
        return lambda value, fields: fields.append(value.log)
    return lambda value, fields: fields.append(value)


def _pack_array(array, fields) -> None:
    dtype = array.dtype
    itemsize = dtype.itemsize
    address = data_address(array)
    if address % dtype.alignment or not dtype.isnative:
        raise not_addressable()
    fields.append(address)
    fields += array.shape
    for stride in array.strides:
        if stride % itemsize:
            raise not_addressable()
        fields.append(stride // itemsize)


def _writable(array, position: int):
    if not array.flags.writeable:
        raise ReadOnlyArgument(position)
    return array


def _object_address(array, item: int) -> int:
    """The address of a NumPy array object of `item`-byte elements, which
    `<symbol>_pyentry` reads (anything else there would be read as one: refused)."""
    if type(array) is not np.ndarray:       # (a plain array's dtype is its signature's)
        if not isinstance(array, np.ndarray):
            raise BackendUnsupported(f"the llvm backend takes NumPy arrays, got "
                                     f"{type(array).__name__}")
        if not array.dtype.isnative or array.dtype.itemsize != item:
            raise not_addressable()
    return id(array)


def not_addressable() -> BackendUnsupported:
    """Raised while packing, before the call: the default backend ("auto") then runs
    the call on the interpreter."""
    return BackendUnsupported("the llvm backend needs aligned arrays in native byte order "
                              "with whole-element strides; pass a copy "
                              "(np.ascontiguousarray)")


def _scalar(fields: tuple, at: int, t):
    raw = fields[at]
    if t == "complex":
        return complex(raw, fields[at + 1])
    wrap = _WRAPPERS.get(t)
    return raw if wrap is None else wrap(raw)


def _store_value(fields: tuple, at: int, t):
    """A store variable's value; arrays and stacks are copied out of the memory the
    generated code allocated, which is then freed."""
    if isinstance(t, ir.StackType):
        from ...values import Stack

        return Stack(t.elem, _take_stack(fields, at, t))
    if not isinstance(t, ir.ArrayType):
        return _scalar(fields, at, t)
    shape = tuple(fields[at + 1:at + 1 + t.ndim])
    array = np.zeros(shape, dtype=_DTYPES[t.elem])
    if array.nbytes:
        ctypes.memmove(array.ctypes.data, fields[at], array.nbytes)
    _free(ctypes.c_void_p(fields[at]))
    system = {"fixed": FixedArray, "ulog": ULogArray}.get(t.elem)
    return array.view(system) if system is not None else array


def _stack_words(stack, t) -> tuple:
    """The `{data, length, capacity}` of a stack argument: its items copied into
    malloc memory."""
    try:
        data = abi.pack_items(t.elem, stack.items)
    except ValueError as error:
        raise RlangTypeError(f"a stack argument: {error}") from None
    length = len(stack.items)
    if not length:
        return 0, 0, 0
    pointer = _libc().malloc(len(data))
    if not pointer:
        raise RlangRuntimeError(f"out of memory copying a stack of {length} items")
    ctypes.memmove(pointer, data, len(data))
    return pointer, length, length


def _take_stack(fields: tuple, at: int, t) -> list:
    """The items of a stack's words after a call; its memory is freed."""
    data, length = fields[at], fields[at + 1]
    items = ctypes.string_at(data, length * abi.ITEM_BYTES[t.elem]) if length else b""
    _free(ctypes.c_void_p(data))
    return abi.unpack_items(t.elem, items)


_LIBC: list = []


def _libc():
    if not _LIBC:
        library = ctypes.CDLL(None)
        library.free.argtypes = [ctypes.c_void_p]
        library.malloc.argtypes = [ctypes.c_size_t]
        library.malloc.restype = ctypes.c_void_p
        _LIBC.append(library)
    return _LIBC[0]


def _free(pointer) -> None:
    _libc().free(pointer)


def _numpy_data_address(array) -> int:
    return array.ctypes.data


def _header_data_address(array) -> int:
    """The `data` field of the PyArrayObject, the first word after the object header
    (NumPy's stable ABI); a tenth of the cost of `array.ctypes.data`."""
    return ctypes.c_void_p.from_address(id(array) + _DATA_FIELD).value or 0


_DATA_FIELD = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)


def _choose_data_address():
    """The header read where it gives what NumPy says (checked once on a view with
    an offset), NumPy's own accessor otherwise."""
    probe = np.arange(4.0)[1:]
    if _header_data_address(probe) == probe.ctypes.data:
        return _header_data_address
    return _numpy_data_address


#: The address of an array's first element (the fastest reader this NumPy allows).
data_address = _choose_data_address()


# Note [Arrays read by the entry point]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# Packing an array's descriptor in Python (its data address, extents and strides,
# with the alignment and stride checks) cost about a microsecond per array, most
# of a small kernel's call: GMM's gradient pass takes eight arrays.  Where NumPy's
# array objects have the layout of `PyArrayObject_fields` (numpy/ndarraytypes.h:
# the object header, then `data`, `nd`, `dimensions`, `strides`), which
# `array_header()` checks once on probe arrays, Python passes each array as the
# address of its object instead, and `<symbol>_pyentry` (backends/llvm/emit.py) reads the
# fields itself.  It checks what `_pack_array` checks (the rank, the data aligned
# for the element type, strides in whole elements) for every array before the
# function runs, and returns `NOT_ADDRESSABLE` if one fails, so the call is refused
# with `not_addressable()` before anything is touched, as before; an array the
# function updates must be writable (`READ_ONLY`: a read-only memory map would
# crash the process).  Arrays of NumPy subclasses (fixed, ulog) are checked in
# Python for byte order and element size, which `signature_of` fixes for plain
# arrays.  Where the probe
# fails (another Python ABI), calls pack descriptors as before.

#: The statuses `<symbol>_pyentry` returns when an array cannot be used in place, and
#: when an array it updates is read-only (its position in ctx[abi.CTX_IVALS]).
NOT_ADDRESSABLE, READ_ONLY = 2, 3


def array_header() -> tuple | None:
    """The byte offsets of (data, nd, dimensions, strides, flags) in a NumPy array
    object, or None where the probe arrays do not show that layout."""
    if _HEADER_LAYOUT:
        return _HEADER_LAYOUT[0]
    at = ctypes.sizeof(ctypes.c_ssize_t) + ctypes.sizeof(ctypes.c_void_p)
    # PyArrayObject_fields: data, nd, dimensions, strides, base, descr, flags
    layout = (at, at + 8, at + 16, at + 24, at + 48)
    read_only = np.arange(3.0)
    read_only.flags.writeable = False
    probes = [np.arange(24.0).reshape(2, 3, 4)[:, ::2, 1:], np.zeros(5, dtype=np.int32)[1:],
              np.zeros((3, 1), dtype=np.complex128).T, np.zeros(0), read_only]

    def read(address, kind):
        return kind.from_address(address).value

    def shows(array):
        data, nd, dims, strides, flags = (id(array) + offset for offset in layout)
        if read(data, ctypes.c_void_p) != array.ctypes.data or read(nd, ctypes.c_int) != array.ndim:
            return False
        if bool(read(flags, ctypes.c_int) & WRITEABLE) != array.flags.writeable:
            return False
        extents = ctypes.cast(read(dims, ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64))
        steps = ctypes.cast(read(strides, ctypes.c_void_p), ctypes.POINTER(ctypes.c_int64))
        return (tuple(extents[k] for k in range(array.ndim)) == array.shape and
                tuple(steps[k] for k in range(array.ndim)) == array.strides)

    fits = ctypes.sizeof(ctypes.c_void_p) == 8 and data_address is _header_data_address \
        and all(shows(a) for a in probes)
    _HEADER_LAYOUT.append(layout if fits else None)
    return _HEADER_LAYOUT[0]


#: NumPy's NPY_ARRAY_WRITEABLE flag.
WRITEABLE = 0x0400


class ReadOnlyArgument(RlangTypeError):
    """A read-only array where the function updates the argument in place (status
    READ_ONLY of `<symbol>_pyentry`; `position` from 0)."""

    def __init__(self, position: int):
        super().__init__(f"argument {position + 1} is a read-only array, but the function "
                         f"updates it in place; pass a writable copy")
        self.position = position


_HEADER_LAYOUT: list = []
