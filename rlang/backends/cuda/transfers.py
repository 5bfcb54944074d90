"""Every kernel launch and every copy between host and device of the cuda backend,
counted (LANGUAGE.md §10: `rlang.cuda.stats()`, `rlang.cuda.reset_stats()`).

The runtime (rlang/backends/cuda/runtime.py) and the backend make launches and
copies only through the functions here: `launch_kernel(kernel, shape, args)`,
`to_device(array)`, `into_device(device, array)`, `to_host(device)`.  A copy of an
array, a scalar or an error record counts alike, by the bytes it moves; copies
made on the device (device to device) are not host↔device copies and do not count.
The counts are the same under Numba's simulator as on a GPU: they count what the
backend asks for, not what the driver does.
"""
from __future__ import annotations

import threading

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
    kernel[shape](*args)


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
