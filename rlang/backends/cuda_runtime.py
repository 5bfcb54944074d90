"""The host side of generated cuda-backend code: array mirrors, kernel launches, errors.

`Arr` holds one array on both sides — a NumPy array on the host and a device array
— and remembers which copy is current, so that host code and kernels each see the
latest values and data moves only when the other side needs it.  A NumPy argument
is its own host copy (updated in place at the end of the call); an argument with
`__cuda_array_interface__` (or a simulator device array) is its own device copy
and is never copied to the host unless host code reads it.

`launch(kernel, count, checked, args, ctx, ctxf, number)` runs a kernel over
`count` iterations (a grid-stride loop: any count fits the grid) and, when the
kernel can fail, moves the record of its lowest failed iteration into the host's
error record.  `error_from_record(ctx, ctxf, sites, max_depth, loops)` builds the
interpreter's RlangError from it (rlang/backends/llvm_errors.py).

`host_namespace()` is what generated host code sees: the Python helpers
(rlang/backends/cuda_scalar.py) and the names defined here.
"""
from __future__ import annotations

import os
import struct
import sys

import numpy as np

from . import abi
from .cuda_scalar import namespace as scalar_namespace

_DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f32": np.float32,
           "f64": np.float64}

#: Host error records: the words of abi.py, then the failed kernel's number + 1
#: and the loop index of its failed iteration.
HOST_WORDS = abi.CTX_WORDS + 2


def simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cuda():
    from numba import cuda as module

    return module


def is_device_array(value) -> bool:
    """Whether `value` lives on the GPU (or on the simulator's pretend GPU)."""
    if isinstance(value, np.ndarray):
        return False
    if hasattr(value, "__cuda_array_interface__"):
        return True
    return type(value).__name__ == "FakeCUDAArray"


class Arr:
    """An array mirrored between the host and the device (see the module docstring)."""

    __slots__ = ("host", "dev", "where", "shape", "size", "user")

    def __init__(self, host=None, dev=None, user=None):
        self.host, self.dev, self.user = host, dev, user
        self.where = "host" if dev is None else "dev"
        source = host if host is not None else dev
        self.shape, self.size = tuple(source.shape), int(np.prod(source.shape, dtype=np.int64))

    @classmethod
    def of(cls, value) -> "Arr":
        if is_device_array(value):
            dev = value if type(value).__name__ == "FakeCUDAArray" or \
                hasattr(value, "copy_to_host") else cuda().as_cuda_array(value)
            return cls(dev=dev, user=value)
        return cls(host=value, user=value)

    @classmethod
    def zeros(cls, shape, elem: str):
        try:
            return cls(host=np.zeros(shape, dtype=_DTYPES[elem]))
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
            fresh = self.dev.copy_to_host()
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
                self.dev = cuda().to_device(data)
            else:
                self.dev.copy_to_device(data)
            self.where = "both"
        return self.dev

    def written_on_device(self) -> None:
        self.where = "dev"

    def finish(self):
        """Bring the caller's object up to date; returns it."""
        if self.host is self.user:
            self.h()
        else:
            self.d()
        return self.user


def threads_and_blocks(count: int) -> tuple:
    """The launch shape: 128 threads per block (8 under the simulator, whose threads
    are Python threads), at most 65,535 blocks (at most 2 simulated): each thread
    takes every (threads · blocks)-th iteration."""
    sim = simulated()
    threads = int(os.environ.get("RLANG_CUDA_THREADS", 8 if sim else 128))
    most = int(os.environ.get("RLANG_CUDA_BLOCKS", 2 if sim else 65535))
    return threads, max(1, min(most, -(-count // threads)))


def launch(kernel, count: int, checked: bool, args: tuple, ctx, ctxf, number: int) -> bool:
    """Run `kernel`; True when an iteration failed (its record is then in ctx)."""
    threads, blocks = threads_and_blocks(count)
    if not checked:
        kernel[blocks, threads](*args)
        return False
    from .cuda_device import ERR_INDEX, ERR_WORDS

    gpu = cuda()
    err = gpu.to_device(np.zeros(ERR_WORDS, dtype=np.int64))
    errf = gpu.to_device(np.zeros(2, dtype=np.float64))
    kernel[blocks, threads](err, errf, *args)
    record = err.copy_to_host()
    if record[abi.CTX_SITE] == 0:
        return False
    depth = ctx[abi.CTX_DEPTH], ctx[abi.CTX_MAX_DEPTH]
    ctx[:abi.CTX_WORDS] = record[:abi.CTX_WORDS]
    ctx[abi.CTX_DEPTH], ctx[abi.CTX_MAX_DEPTH] = depth
    ctxf[:] = errf.copy_to_host()
    ctx[abi.CTX_WORDS] = number + 1
    ctx[abi.CTX_WORDS + 1] = record[ERR_INDEX]
    return True


def run_host(function, *args):
    """Call generated host code; a missing GPU or driver is a clear error."""
    try:
        return function(*args)
    except Exception as error:
        if type(error).__name__ in ("CudaSupportError", "CudaDriverError"):
            from ..errors import RlangError

            raise RlangError("the cuda backend found no usable CUDA GPU; set "
                             "NUMBA_ENABLE_CUDASIM=1 to run kernels in Numba's simulator "
                             f"({type(error).__name__})") from None
        raise


def to_box(value: float):
    """A scalar gradient as a one-element device array (kernels add to it)."""
    return cuda().to_device(np.array([value], dtype=np.float64))


def from_box(box) -> float:
    return float(box.copy_to_host()[0])


def nonzeros(array: Arr) -> int:
    """How many elements are not zero (floats: not within the tolerance)."""
    values = array.h()
    if values.dtype.kind == "f":
        from ..checks import ATOL

        return int(np.count_nonzero(~(np.abs(values.astype(np.float64)) <= ATOL)))
    return int(np.count_nonzero(values))


def mismatches(array: Arr, other: Arr) -> int:
    """How many elements differ (arrays of different shapes: all)."""
    a, b = array.h(), other.h()
    if a.shape != b.shape:
        return max(1, a.size)
    if a.dtype.kind == "f":
        from ..checks import ATOL

        x, y = a.astype(np.float64), b.astype(np.float64)
        with np.errstate(invalid="ignore"):
            same = (x == y) | (np.abs(x - y) <= ATOL) | (np.isnan(x) & np.isnan(y))
        return int(np.count_nonzero(~same))
    return int(np.count_nonzero(a != b))


def nbytes(shape, elem: str) -> int:
    count = 1
    for n in shape:
        count *= n
    return count * np.dtype(_DTYPES[elem]).itemsize


def host_namespace(sites, out=None) -> dict:
    """The names generated host code uses; `prt` prints `@safe print/show`."""
    from .llvm_errors import print_line

    def prt(site, *values):
        info = sites[site]
        types = [t for _, t in info.detail[1] if t is not None]
        doubles = [float(v) if t in ("f32", "f64") else _bits(int(v))
                   for v, t in zip(values, types)]
        (out or sys.stdout).write(print_line(info, doubles) + "\n")

    space = scalar_namespace()
    space.update(Arr=Arr, launch=launch, to_box=to_box, from_box=from_box,
                 nonzeros=nonzeros, mismatches=mismatches, nbytes=nbytes, prt=prt)
    return space


def _bits(value: int) -> float:
    return struct.unpack("<d", struct.pack("<q", value))[0]


def error_from_record(ctx, ctxf, sites, max_depth: int, loops):
    """The RlangError of a failed call; `loops` names the index of each kernel's loop.
    A failure inside a kernel says which iteration failed (lowest first) in a note."""
    from .llvm_errors import error_from_context

    words = [int(w) for w in ctx[:abi.CTX_WORDS]]
    for k in range(2):
        words[abi.CTX_FVALS + k] = struct.unpack("<q", struct.pack("<d", float(ctxf[k])))[0]
    error = error_from_context(words, sites, max_depth)
    kernel = int(ctx[abi.CTX_WORDS])
    if kernel:
        index = int(ctx[abi.CTX_WORDS + 1])
        error.notes = error.notes + (f"in the iteration `{loops[kernel - 1]} = {index}` of "
                                     "a `@parallel for` on the GPU (the lowest that failed)",)
    return error
