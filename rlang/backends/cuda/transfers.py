"""Every kernel launch and every copy between host and device of the cuda backend,
counted (LANGUAGE.md §10: `rlang.cuda.stats()`, `rlang.cuda.reset_stats()`).

The runtime (rlang/backends/cuda/runtime.py) and the backend make launches and
copies only through the functions here: `launch_kernel(kernel, shape, args)`,
`to_device(array)`, `into_device(device, array)`, `to_host(device)`.  A copy of an
array, a scalar or an error record counts alike, by the bytes it moves; copies
made on the device (device to device) and memory cleared on the device
(`zeros_on_device`, `clear_on_device`: a memset) are not host↔device copies and do
not count.
The counts are the same under Numba's simulator as on a GPU: they count what the
backend asks for, not what the driver does.
"""
from __future__ import annotations

import contextlib
import threading
import time

import numpy as np

_NAMES = ("launches", "htod_copies", "dtoh_copies", "htod_bytes", "dtoh_bytes")
_counts = dict.fromkeys(_NAMES, 0)
_lock = threading.Lock()


def stats() -> dict:
    """The counts since the last `reset_stats()` (a new dict)."""
    with _lock:
        return dict(_counts)


def reset_stats() -> None:
    with _lock:
        for name in _NAMES:
            _counts[name] = 0


def _count(copies: str, size: str, nbytes: int) -> None:
    with _lock:
        _counts[copies] += 1
        _counts[size] += int(nbytes)


def _cuda():
    from numba import cuda

    return cuda


def launch_kernel(kernel, shape: tuple, args: tuple) -> None:
    """`kernel[shape](*args)`, counted; every argument must already be on the
    device or a scalar (a NumPy argument would be copied behind the count's back)."""
    with _lock:
        _counts["launches"] += 1
    if not _timelines:
        kernel[shape](*args)
        return
    start, end = _cuda().event(), _cuda().event()
    start.record()
    kernel[shape](*args)
    end.record()
    for timeline in _timelines:
        timeline.events.append((start, end))


class Timeline:
    """What a stretch of cuda-backend work spent (`timeline()`): its wall time, the
    kernels' own time (CUDA events around each launch; None under the simulator,
    which times nothing) and the rest, the gaps between kernels (host code,
    copies, launch latency)."""

    def __init__(self):
        self.events: list = []
        self.wall = 0.0
        self.counts = dict.fromkeys(_NAMES, 0)      # (set when the block ends)

    @property
    def kernel_seconds(self):
        times = [start.elapsed_time(end) for start, end in self.events]
        return None if any(t < 0 for t in times) else sum(times) / 1000.0

    def summary(self) -> str:
        counts = self.counts
        kernels = self.kernel_seconds
        spent = "kernels not timed (the simulator times nothing)" if kernels is None else \
            f"kernels {kernels * 1e3:.3f} ms ({kernels / max(self.wall, 1e-12):.0%}), gaps " \
            f"{(self.wall - kernels) * 1e3:.3f} ms"
        return (f"wall {self.wall * 1e3:.3f} ms: {spent}; {counts['launches']} launches, "
                f"{counts['htod_copies']} copies up, {counts['dtoh_copies']} back")


_timelines: list = []


@contextlib.contextmanager
def timeline():
    """Record the work inside the block: `with rlang.cuda.timeline() as t: …`, then
    `t.summary()` (see `Timeline`).  Launches from other threads while the block
    runs are recorded too (the counters are the process's)."""
    record = Timeline()
    before = stats()
    _timelines.append(record)
    start = time.perf_counter()
    try:
        yield record
        _cuda().synchronize()       # (not after an error: that error is the one to see)
    finally:
        record.wall = time.perf_counter() - start
        _timelines.remove(record)
        after = stats()
        record.counts = {name: after[name] - before[name] for name in _NAMES}


def to_device(array: np.ndarray):
    """A new device array holding `array`."""
    _count("htod_copies", "htod_bytes", array.nbytes)
    return _cuda().to_device(array)


def into_device(device, array: np.ndarray) -> None:
    """Copy `array` into an existing device array."""
    _count("htod_copies", "htod_bytes", array.nbytes)
    device.copy_to_device(array)


def to_host(device) -> np.ndarray:
    """A new host array holding a device array's elements."""
    host = device.copy_to_host()
    _count("dtoh_copies", "dtoh_bytes", host.nbytes)
    return host


def zeros_on_device(shape, dtype):
    """A new device array of zeros (at least one element), cleared on the device."""
    shape = (shape,) if isinstance(shape, int) else tuple(shape)
    array = _cuda().device_array(tuple(max(1, n) for n in shape), dtype=dtype)
    clear_on_device(array)
    return array


def clear_on_device(device) -> None:
    """Set every byte of a contiguous device array to zero by a memset (under the
    simulator, in the NumPy array it holds)."""
    if type(device).__name__ == "FakeCUDAArray":
        device._ary[...] = 0
        return
    device.gpu_data.memset(0, device.nbytes)
