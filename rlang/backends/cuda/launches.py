"""Kernel launches of generated cuda code: the launch shape, the device buffers a
launch writes its error record and scalar sums into, and what comes back.

`launch(kernel, count, checked, args, ctx, ctxf, number, tracked, sums)` runs a
kernel over `count` iterations (a grid-stride loop: any count fits the grid) and
returns `(failed, sums)`: whether an iteration failed (its record, the first in the
loop's order, is then in the host's `ctx`/`ctxf`) and the new values of the outer
scalar gradients the kernel added to (Note [Atomic gradients], emit.py), given their
values before the launch in `sums`.

Note [Error buffers stay on the device]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A checked kernel records its first failure in an error buffer (ERR_WORDS words,
about 1 KB, and CTXF_WORDS doubles) and writes nothing there otherwise (`publish`,
backends/cuda/device.py).  So zeroed buffers stay on the device from launch to
launch, uploaded once, and after a launch the host reads back only the word that
says whether a check failed (8 bytes); the whole record comes back, and the
buffer is dropped, only after a failure.  Before, each launch uploaded two zeroed
buffers and read the record back: 3 copies and 2 KB per launch.  Clean buffers
are kept for the process (a launch takes one, so that callers on several threads
never share one).

Note [Scalar sums come back with the status]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A gradient kernel adds the gradients of outer scalars (`w̄` of `y[i] += w * x[i]`)
into one-element device arrays, boxes.  They used to be uploaded holding the
gradient's value and read back after the launch: two copies more per launch.  Now
the boxes are the first words of the launch's buffer, in front of its error record
(whose first word, CTX_SITE, says whether a check failed), so one copy of
8 · (parts + 1) bytes brings back the sums and the status together.  The boxes
start at zero — the pooled buffers have their box words cleared on the device by
a memset after each use, which copies nothing — and the host adds what a box
gathered to the value the gradient had before the launch.  The order of those
float additions is not the interpreter's, which the atomic adds of a GPU never
were (docs/cuda.md); in deterministic mode the gathered sum is itself fixed.
"""
from __future__ import annotations

import os
import threading
from typing import NamedTuple

import numpy as np

from .. import abi
from .privatised import ROWS_BYTES, SHARED_BYTES
from .scalar import CTXF_WORDS, ERR_INDEX, ERR_SHARED, ERR_WORDS
from .transfers import clear_on_device, into_device, launch_kernel, to_host, zeros_on_device


def simulated() -> bool:
    return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0")


def cuda():
    from numba import cuda as module

    return module


def threads_and_blocks(count: int) -> tuple:
    """The launch shape: 128 threads per block (8 under the simulator, whose threads
    are Python threads), at most 65,535 blocks (at most 2 simulated): each thread
    takes every (threads · blocks)-th iteration."""
    sim = simulated()
    threads = int(os.environ.get("RLANG_CUDA_THREADS", 8 if sim else 128))
    most = int(os.environ.get("RLANG_CUDA_BLOCKS", 2 if sim else 65535))
    return threads, max(1, min(most, -(-count // threads)))


class Privatised(NamedTuple):
    """A kernel with privatised sums (Note [Privatised gradients on the GPU]): its
    variants, the positions in the launch's arguments of the arrays of its sums, and
    the numbers of its privatised boxes."""

    plain: object
    shared: object
    rows: object
    sums: object
    arrays: tuple
    boxes: tuple


_deterministic = [os.environ.get("RLANG_CUDA_DETERMINISTIC", "0") not in ("", "0")]


def set_deterministic(on: bool) -> None:
    """Deterministic mode on or off (`rlang.cuda.set_deterministic`)."""
    _deterministic[0] = bool(on)


def is_deterministic() -> bool:
    return _deterministic[0]


class _Buffers:
    """The device words of one launch: `parts` box words (float64), then, for a
    checked kernel, the error record (ERR_WORDS int64) and its doubles."""

    __slots__ = ("parts", "checked", "words", "errf")

    def __init__(self, parts: int, checked: bool):
        self.parts, self.checked = parts, checked
        self.words = zeros_on_device(parts + (ERR_WORDS if checked else 0), np.int64)
        self.errf = zeros_on_device(CTXF_WORDS, np.float64) if checked else None

    def kernel_args(self, layout: list) -> tuple:
        """(err, errf) of a checked kernel, then one float64 view per box (`layout`:
        the parts of each box)."""
        front = (self.words[self.parts:], self.errf) if self.checked else ()
        boxes, at = [], 0
        for parts in layout:
            boxes.append(self.words[at:at + parts].view(np.float64))
            at += parts
        return front + tuple(boxes)

    def read(self) -> np.ndarray:
        """The box words and the status word, in one copy (none when neither)."""
        size = self.parts + (1 if self.checked else 0)
        return to_host(self.words[:size]) if size else np.zeros(0, dtype=np.int64)

    def record(self) -> np.ndarray:
        """The whole error record (after a failure)."""
        return to_host(self.words[self.parts:])

    def clear_boxes(self) -> None:
        if self.parts:
            clear_on_device(self.words[:self.parts])


_pool: dict = {}                    # (parts, checked) → clean _Buffers
_pool_lock = threading.Lock()


def _take(parts: int, checked: bool) -> _Buffers:
    with _pool_lock:
        free = _pool.get((parts, checked))
        if free:
            return free.pop()
    return _Buffers(parts, checked)


def _give_back(buffers: _Buffers) -> None:
    buffers.clear_boxes()
    with _pool_lock:
        _pool.setdefault((buffers.parts, buffers.checked), []).append(buffers)


def launch(kernel, count: int, checked: bool, args: tuple, ctx, ctxf, number: int,
           tracked=None, sums: tuple = ()) -> tuple:
    """Run `kernel` (see the module docstring): (failed, the new `sums`).  `tracked`,
    for a kernel with owner buffers (Note [Shared writes on the GPU],
    backends/cuda/shared_writes.py): the positions in `args` of the device arrays
    the kernel writes, and (position, fill) of its owner buffers; a launch that saw
    a shared write runs again in one thread from the arrays as they were."""
    threads, blocks = threads_and_blocks(count)
    layout = [2 if isinstance(s, complex) else 1 for s in sums]
    parts = sum(layout)
    kernel, shape, rows, summing = _variant(kernel, args, layout, threads, blocks)
    if not checked and not parts:
        launch_kernel(kernel, shape, args + rows)
        _sum_rows(summing, rows, args, ())
        return False, ()
    buffers = _take(parts, checked)
    front = buffers.kernel_args(layout)
    saved = None
    if tracked is not None:
        saved = [(args[p], device_copy(args[p])) for p in tracked[0]]
    launch_kernel(kernel, shape, front + args + rows)
    _sum_rows(summing, rows, args, front[2 if checked else 0:])
    words = buffers.read()
    if checked and words[parts] != 0 and saved is not None and \
            buffers.record()[ERR_SHARED]:
        for array, copy in saved:
            array.copy_to_device(copy)
        for p, fill in tracked[1]:
            into_device(args[p], np.full(args[p].shape, fill, dtype=np.int64))
        buffers = _Buffers(parts, checked)
        launch_kernel(kernel, (1, 1), buffers.kernel_args(layout) + args)
        words = buffers.read()
    new = _added(sums, layout, words[:parts].view(np.float64))
    if not checked or words[parts] == 0:
        _give_back(buffers)
        return False, new
    record = buffers.record()
    depth = ctx[abi.CTX_DEPTH], ctx[abi.CTX_MAX_DEPTH]
    ctx[:abi.CTX_WORDS] = record[:abi.CTX_WORDS]
    ctx[abi.CTX_DEPTH], ctx[abi.CTX_MAX_DEPTH] = depth
    ctxf[:] = to_host(buffers.errf)
    ctx[abi.CTX_WORDS] = number + 1
    ctx[abi.CTX_WORDS + 1] = record[ERR_INDEX]
    return True, new


def _variant(kernel, args: tuple, layout: list, threads: int, blocks: int) -> tuple:
    """(the kernel to launch, its launch shape, the rows argument (), None or what
    `_sum_rows` needs) for a plain kernel or a `Privatised` one."""
    if not isinstance(kernel, Privatised):
        return kernel, (blocks, threads), (), None
    words = sum(int(args[p].size) for p in kernel.arrays) + \
        sum(layout[k] for k in kernel.boxes)
    if _deterministic[0]:       # rows within ROWS_BYTES: fewer blocks, then fewer threads
        fit = max(1, ROWS_BYTES // (8 * max(1, words)))
        threads = min(threads, fit)
        blocks = max(1, min(blocks, fit // threads))
        rows = zeros_on_device((blocks * threads, words), np.float64)
        return kernel.rows, (blocks, threads), (rows,), (kernel, words)
    if 8 * words <= SHARED_BYTES:
        return kernel.shared, (blocks, threads, 0, 8 * words), (), None
    return kernel.plain, (blocks, threads), (), None


def _sum_rows(summing, rows: tuple, args: tuple, boxes: tuple) -> None:
    """Deterministic mode: the kernel that adds the rows up into the arrays and boxes."""
    if summing is None:
        return
    kernel, words = summing
    targets = tuple(args[p] for p in kernel.arrays) + tuple(boxes[k] for k in kernel.boxes)
    threads, blocks = threads_and_blocks(words)
    launch_kernel(kernel.sums, (blocks, threads), (rows[0], rows[0].shape[0]) + targets)


def _added(sums: tuple, layout: list, gathered: np.ndarray) -> tuple:
    """Each scalar gradient plus what its box gathered."""
    new, at = [], 0
    for value, parts in zip(sums, layout):
        if parts == 2:
            new.append(value + complex(gathered[at], gathered[at + 1]))
        else:
            new.append(value + float(gathered[at]))
        at += parts
    return tuple(new)


def device_copy(array):
    """A copy of a device array, made on the device."""
    copy = cuda().device_array(array.shape, dtype=array.dtype)
    copy.copy_to_device(array)
    return copy
