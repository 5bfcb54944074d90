"""`rlang.cuda`: what the cuda backend did (LANGUAGE.md §10).

    rlang.cuda.reset_stats()
    rlang.gradient(m.f, args, loss="y")
    rlang.cuda.stats()   # {'launches': 2, 'htod_copies': 2, 'dtoh_copies': 3, …}

`stats()` returns a dict of counts since the last `reset_stats()`: `launches` (every
kernel launch), `htod_copies`, `dtoh_copies`, `htod_bytes`, `dtoh_bytes` (every copy
between host and device: of arrays, scalars or error records), the same under Numba's
simulator as on a GPU.  Importing this module loads neither Numba nor a GPU driver.
"""
from __future__ import annotations

from .backends.cuda.transfers import reset_stats, stats

__all__ = ["stats", "reset_stats"]
