"""The host side of generated cuda-backend code: array mirrors, kernel launches, errors.

`Arr` holds one array on both sides — a NumPy array on the host and a device array
— and remembers which copy is current, so that host code and kernels each see the
latest values and data moves only when the other side needs it.  A NumPy argument
is its own host copy (updated in place at the end of the call); an argument with
`__cuda_array_interface__` (or a simulator device array) is its own device copy
and is never copied to the host unless host code reads it.  A complex array is
held as the float64 array of its parts on both sides (`pairs`: a view of the
caller's array, never a copy), a fixed array as its raw int64 values, a ulog array
as the float64 of its logarithms.

`launch` (rlang/backends/cuda/launches.py) runs a kernel; `error_from_record(ctx,
ctxf, sites, max_depth, loops)` builds the interpreter's RlangError from the record
of a failure (rlang/backends/errors.py).

`host_namespace()` is what generated host code sees: the Python helpers
(rlang/backends/cuda/scalar.py) and the names defined here.
"""
from __future__ import annotations

import struct
import sys

import numpy as np

from .. import abi
from ...ir.nodes import ArrayType, representation
from ...values import is_device_array, wrap_i64
from .scalar import CTXF_WORDS
from .launches import cuda, launch, threads_and_blocks
from .systems import namespace as helper_namespace
from .transfers import into_device, launch_kernel, to_device, to_host

#: The NumPy dtype of each element type, as arguments and results hold it (a fixed
#: array is int64 of raw values, a ulog array float64 of logarithms).
DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32,
          "f64": np.float64, "fixed": np.int64, "ulog": np.float64,
          "complex": np.complex128}

#: Host error records: the words of abi.py, then the failed kernel's number + 1
#: and the loop index of its failed iteration.
HOST_WORDS = abi.CTX_WORDS + 2


def device_bytes(value) -> tuple:
    """The device addresses [lo, hi) that a device array's elements lie in ((0, 0)
    when it has none): from `__cuda_array_interface__`, or for the simulator's
    arrays, from the NumPy array they hold."""
    if not hasattr(value, "__cuda_array_interface__"):
        host = value._ary                       # the simulator's FakeCUDAArray
        if host.size == 0:
            return 0, 0
        try:
            from numpy.lib.array_utils import byte_bounds
        except ImportError:                     # NumPy < 2
            byte_bounds = np.byte_bounds
        return byte_bounds(host)
    cai = value.__cuda_array_interface__
    shape, itemsize = tuple(cai["shape"]), np.dtype(cai["typestr"]).itemsize
    if 0 in shape:
        return 0, 0
    strides = cai.get("strides") or tuple(
        itemsize * int(np.prod(shape[k + 1:], dtype=np.int64)) for k in range(len(shape)))
    lo = hi = cai["data"][0]
    for n, stride in zip(shape, strides):
        lo, hi = lo + min(0, (n - 1) * stride), hi + max(0, (n - 1) * stride)
    return lo, hi + itemsize


def pairs(array: np.ndarray) -> np.ndarray:
    """A complex128 array as generated code indexes it: the float64 array of its
    parts, a last axis of two (re, im) added; a view, whatever the strides."""
    parts = array.real
    return np.lib.stride_tricks.as_strided(parts, shape=array.shape + (2,),
                                           strides=parts.strides + (parts.itemsize,))


def device_pairs(array):
    """A complex128 device array as float64 pairs, without a copy (C order only)."""
    try:
        return array.view(np.float64).reshape(tuple(array.shape) + (2,))
    except (ValueError, NotImplementedError):
        from ...errors import RlangTypeError

        raise RlangTypeError("the cuda backend takes device arrays of complex numbers in "
                             "C order only") from None


def from_pairs(parts: np.ndarray) -> np.ndarray:
    """A complex128 array (a copy) from float64 pairs."""
    parts = np.ascontiguousarray(parts, dtype=np.float64)
    return parts.view(np.complex128)[..., 0].copy()


def constant_array(constant) -> np.ndarray:
    """The NumPy array of an `ir.ConstArray` (as arguments hold its element type)."""
    return np.array(constant.values, dtype=DTYPES[constant.elem]).reshape(constant.shape)


def device_form(array: np.ndarray) -> np.ndarray:
    """An array as device code reads it: complex numbers as pairs, in C order."""
    return np.ascontiguousarray(pairs(array)) if array.dtype == np.complex128 else array


class Arr:
    """An array mirrored between the host and the device (see the module docstring).
    Complex arrays are held as float64 pairs on both sides (`pairs`); `shape` and
    `size` are those of the rev array."""

    __slots__ = ("host", "dev", "where", "shape", "size", "user", "on_host")

    def __init__(self, host=None, dev=None, user=None):
        source = host if host is not None else dev
        self.shape = tuple(source.shape)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        if np.dtype(source.dtype) == np.complex128:
            host = None if host is None else pairs(host)
            dev = None if dev is None else device_pairs(dev)
        self.host, self.dev, self.user = host, dev, user
        self.on_host = dev is None
        self.where = "host" if dev is None else "dev"

    @classmethod
    def of(cls, value) -> "Arr":
        if is_device_array(value):
            dev = value if type(value).__name__ == "FakeCUDAArray" or \
                hasattr(value, "copy_to_host") else cuda().as_cuda_array(value)
            return cls(dev=dev, user=value)
        return cls(host=value, user=value)

    @classmethod
    def alike(cls, host: np.ndarray, dev) -> "Arr":
        """A host array and a device array holding the same values (the caller's
        is the host one)."""
        mirror = cls(host=host, dev=dev, user=host)
        mirror.on_host, mirror.where = True, "both"
        return mirror

    @classmethod
    def zeros(cls, shape, elem: str):
        """An array of zeros of `elem` (a ulog zero is the logarithm −inf)."""
        try:
            fill = -np.inf if elem == "ulog" else 0
            return cls(host=np.full(shape, fill, dtype=DTYPES[elem]))
        except (MemoryError, ValueError):
            return None

    _constants: dict = {}

    @classmethod
    def constant(cls, values: np.ndarray) -> "Arr":
        """A read-only array (one mirror per constant, so its device copy is kept)."""
        mirror = cls._constants.get(id(values))
        if mirror is None or mirror.user is not values:
            mirror = cls._constants[id(values)] = cls(host=values, user=values)
        return mirror

    @classmethod
    def copy_of(cls, values: np.ndarray) -> "Arr":
        return cls(host=values.copy())

    def h(self) -> np.ndarray:
        """The host copy, current."""
        if self.where == "dev":
            fresh = to_host(self.dev)
            if self.host is None:
                self.host = fresh
            else:
                self.host[...] = fresh
            self.where = "both"
        return self.host

    def w(self) -> np.ndarray:
        """The host copy, about to be written."""
        host = self.h()
        self.where = "host"
        return host

    def d(self):
        """The device copy, current."""
        if self.where == "host":
            data = np.ascontiguousarray(self.host)
            if self.dev is None:
                self.dev = to_device(data)
            else:
                into_device(self.dev, data)
            self.where = "both"
        return self.dev

    def written_on_device(self) -> None:
        self.where = "dev"

    def finish(self):
        """Bring the caller's object up to date; returns it."""
        if self.on_host:
            self.h()
        else:
            self.d()
        return self.user

    def value(self, elem: str) -> np.ndarray:
        """A copy of the array as the interpreter holds one of `elem` (main's store)."""
        host = self.h()
        if host.ndim > len(self.shape):
            return from_pairs(host)
        from ...numbers import FixedArray, ULogArray

        copy = np.array(host, copy=True)
        system = {"fixed": FixedArray, "ulog": ULogArray}.get(elem)
        return copy.view(system) if system is not None else copy


def made_on_device(arrays: list) -> list:
    """Host arrays (None: none) as device arrays, made on the device: each array
    with at most one element that is not zero (a gradient buffer, its seed) is
    allocated there and filled by one kernel launch for all of them, without a
    copy; any other array is copied."""
    made = [None] * len(arrays)
    filled = []                     # (position, device array, seed index, seed)
    for k, array in enumerate(arrays):
        if array is None:
            continue
        nonzero = np.flatnonzero(array)
        if len(nonzero) > 1 or array.dtype not in (np.float64, np.complex128):
            made[k] = to_device(np.ascontiguousarray(array))
            continue
        seed = (int(nonzero[0]), complex(array.flat[nonzero[0]])) if len(nonzero) else \
            (-1, 0j)
        made[k] = cuda().device_array(array.shape, dtype=array.dtype)
        filled.append((made[k], *seed))
    if filled:
        _fill(filled)
    return made


def _fill(filled: list) -> None:
    """One launch that zeroes each device array and puts its seed in."""
    kinds = tuple(device.dtype == np.complex128 for device, _, _ in filled)
    kernel = _FILLS.get(kinds)
    if kernel is None:
        kernel = _FILLS[kinds] = _fill_kernel(kinds)
    args = []
    for device, at, seed in filled:
        args += [device.reshape(device.size), at, seed.real, seed.imag]
    largest = max(device.size for device, _, _ in filled)
    launch_kernel(kernel, threads_and_blocks(max(1, largest))[::-1], tuple(args))


_FILLS: dict = {}


def _fill_kernel(kinds: tuple):
    """The kernel of `_fill` for arrays of these kinds (True: complex)."""
    lines = [f"def fill({', '.join(f'a{k}, s{k}, r{k}, i{k}' for k in range(len(kinds)))}):",
             "    start = cuda.grid(1)", "    step = cuda.gridsize(1)"]
    for k, complex_ in enumerate(kinds):
        seed = f"complex(r{k}, i{k})" if complex_ else f"r{k}"
        lines += [f"    for j in range(start, a{k}.size, step):",
                  f"        a{k}[j] = {seed} if j == s{k} else {'0j' if complex_ else '0.0'}"]
    space = {"cuda": cuda()}
    exec(compile("\n".join(lines), "<rlang-cuda-fill>", "exec"), space)
    return cuda().jit(space["fill"])


def owner_buffer(array: Arr, words: int, fill: int):
    """A device buffer of `words` i64 per element of `array`, each `fill`."""
    return to_device(np.full(max(1, array.size * words), fill, dtype=np.int64))


def run_host(function, *args):
    """Call generated host code; a missing GPU or driver is a clear error."""
    try:
        return function(*args)
    except Exception as error:
        if type(error).__name__ in ("CudaSupportError", "CudaDriverError"):
            from ...errors import RlangError

            raise RlangError("the cuda backend found no usable CUDA GPU; set "
                             "NUMBA_ENABLE_CUDASIM=1 to run kernels in Numba's simulator "
                             f"({type(error).__name__})") from None
        raise


def nonzeros(array: Arr, elem: str, shape=None) -> int:
    """How many elements are not zero (floats and complex numbers: not within the
    tolerance; a ulog zero is the logarithm −inf); with `shape`, arrays of another
    shape count as all different."""
    if shape is not None and tuple(shape) != array.shape:
        return max(1, array.size)
    zero = np.full(array.shape, -np.inf if elem == "ulog" else 0, dtype=DTYPES[elem])
    return _differing(array.value(elem), zero)


def mismatches(array: Arr, other: Arr, elem: str) -> int:
    """How many elements differ (arrays of different shapes: all)."""
    if array.shape != other.shape:
        return max(1, array.size)
    return _differing(array.value(elem), other.value(elem))


def record_arrays(ctx, elem: str, array: Arr, other: Arr | None) -> None:
    """Record a failed array deallocation's arrays (`other`: the array it should
    equal, if any) as compiled code does (abi.py): the extents and the first elements
    in C order, in storage form; only the first failure counts."""
    if ctx[abi.CTX_SITE] != 0:
        return
    places = ((abi.CTX_ITEMS, abi.CTX_SHAPE), (abi.CTX_EXPECTED_ITEMS, abi.CTX_EXPECTED_SHAPE))
    for source, (word, shape_word) in zip((array, other), places):
        if source is None:
            continue
        value = np.asarray(source.value(elem))
        ctx[shape_word:shape_word + value.ndim] = value.shape
        first = value.reshape(-1)[:abi.STACK_ITEMS].astype(abi.ITEM_DTYPES[elem]).tobytes()
        first += bytes(-len(first) % 8)
        words = np.frombuffer(first, "<i8")
        ctx[word:word + len(words)] = words


def _differing(a: np.ndarray, b: np.ndarray) -> int:
    """How many elements differ by the equality of the checks (checks.values_equal)."""
    if a.dtype.kind in "fc":
        from ...interp.comparisons import ATOL

        with np.errstate(invalid="ignore"):
            same = (a == b) | (np.abs(a - b) <= ATOL) | (np.isnan(a) & np.isnan(b))
        return int(np.count_nonzero(~same))
    return int(np.count_nonzero(a != b))


def nbytes(shape, elem: str) -> int:
    """The bytes of an array of `shape`, wrapped to an int64 as compiled code's are
    (it goes into the error record)."""
    count = 1
    for n in shape:
        count *= n
    return wrap_i64(count * np.dtype(DTYPES[elem]).itemsize)


def host_namespace(sites, out=None) -> dict:
    """The names generated host code uses; `prt` prints `@safe print/show`."""
    from ..errors import print_line

    def prt(site, *values):
        info = sites[site]
        types = [t for _, t in info.detail[1] if t is not None]
        shown = []
        for v, t in zip(values, types):
            if isinstance(t, ArrayType):
                shown.append(v.value(t.elem))
            elif t == "complex":
                shown.append(complex(v))
            elif representation(t) in ("f32", "f64"):
                shown.append(float(v))
            else:
                shown.append(bool(v) if t == "bool" else int(v))
        (out or sys.stdout).write(print_line(info, shown) + "\n")

    space = helper_namespace()
    space.update(Arr=Arr, launch=launch, owner_buffer=owner_buffer, nonzeros=nonzeros,
                 mismatches=mismatches, nbytes=nbytes, prt=prt,
                 record_arrays=record_arrays)
    return space


def error_from_record(ctx, ctxf, sites, max_depth: int, loops):
    """The RlangError of a failed call; `loops` names the index of each kernel's loop.
    A failure inside a kernel says which iteration failed (the first in the loop's order:
    the one the interpreter reports) in a note."""
    from ..errors import error_from_context

    words = [int(w) for w in ctx[:abi.CTX_WORDS]]
    for k in range(CTXF_WORDS):
        words[abi.CTX_FVALS + k] = struct.unpack("<q", struct.pack("<d", float(ctxf[k])))[0]
    error = error_from_context(words, sites, max_depth)
    kernel = int(ctx[abi.CTX_WORDS])
    if kernel:
        index = int(ctx[abi.CTX_WORDS + 1])
        error.notes = error.notes + (f"in the iteration `{loops[kernel - 1]} = {index}` of "
                                     "a `@parallel for` on the GPU (the first, in the "
                                     "loop's order, of those that failed)",)
    return error
