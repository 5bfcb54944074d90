"""`rlang.cuda`: what the cuda backend did (LANGUAGE.md §10).

    rlang.cuda.reset_stats()
    rlang.gradient(m.f, args, loss="y")
    rlang.cuda.stats()   # {'launches': 2, 'htod_copies': 2, 'dtoh_copies': 3, …}

`stats()` returns a dict of counts since the last `reset_stats()`: `launches` (every
kernel launch), `htod_copies`, `dtoh_copies`, `htod_bytes`, `dtoh_bytes` (every copy
between host and device: of arrays, scalars or error records), the same under Numba's
simulator as on a GPU.

`set_deterministic(True)` makes the gradients that many iterations of a kernel add
to come out with the same bits on every run, in the loops whose sums the backend
privatises (a fixed order of additions, at the cost of a buffer and one launch more
per such kernel; Note [Privatised gradients on the GPU],
rlang/backends/cuda/privatised.py, says which loops those are: not those checked
for shared writes with invcheck on); `is_deterministic()` says whether it is on.  The environment variable RLANG_CUDA_DETERMINISTIC=1 turns it on at start.

`timeline()` records a stretch of work: `with rlang.cuda.timeline() as t: …`, then
`t.summary()` says its wall time, how much of it the kernels ran (CUDA events
around each launch) and how much went in the gaps between them.

Importing this module loads neither Numba nor a GPU driver.
"""
from __future__ import annotations

from .backends.cuda.launches import is_deterministic, set_deterministic
from .backends.cuda.transfers import reset_stats, stats, timeline

__all__ = ["stats", "reset_stats", "set_deterministic", "is_deterministic", "timeline"]
