"""`rlang.cuda.stats()` and `rlang.cuda.reset_stats()` (LANGUAGE.md §10): every
launch and every copy between host and device counted, under Numba's simulator as
on a GPU; the budget of a gradient of a function made of one `@parallel for` with
device arrays (at most 64 bytes each way, 1–3 launches), calls that copy only what
they must (Note [Error buffers stay on the device], rlang/backends/cuda/runtime.py),
and gradient buffers made on the device.  The counts are the same on a GPU
(`RLANG_CUDA_REAL=1`, tests/conftest.py)."""
from __future__ import annotations

import numpy as np
import pytest

import rlang

SOURCE = """
function scale(y: f64[:], x: f64[:], w)
    @parallel for i = 0:length(x) - 1
        y[i] += w * x[i] * x[i]
    end
end

function spin(z: complex[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        z[i] += x[i] * (1.0 + 2.0im)
    end
end

function halve(y: f64[:], x: f64[:])
    @parallel for i = 0:length(x) - 1
        t ← x[i] * 0.5
        y[i] += t
        t → 0.5
    end
end
"""
N = 40

#: the program on the cuda backend (kernels compile at their first call), and the reference
CUDA, INTERP = (rlang.loads(SOURCE, backend=b) for b in ("cuda", "interp"))


def _device(array):
    from numba import cuda

    return cuda.to_device(array)


def counted(call):
    """(the call's result, the counts it made), after one warm-up call."""
    call()
    rlang.cuda.reset_stats()
    result = call()
    return result, rlang.cuda.stats()


def test_the_counters_and_their_names():
    rlang.cuda.reset_stats()
    assert rlang.cuda.stats() == {"launches": 0, "htod_copies": 0, "dtoh_copies": 0,
                                  "htod_bytes": 0, "dtoh_bytes": 0}
    snapshot = rlang.cuda.stats()
    snapshot["launches"] = 7                    # a copy: the counters are not changed
    assert rlang.cuda.stats()["launches"] == 0


def test_a_call_on_numpy_arrays_brings_back_only_what_it_wrote():
    x = np.linspace(0.0, 1.0, N)
    (y, _, _), counts = counted(lambda: CUDA.scale(np.zeros(N), x, 2.0))
    np.testing.assert_allclose(y, 2.0 * x * x)
    assert counts["launches"] == 1
    assert (counts["htod_copies"], counts["htod_bytes"]) == (2, 2 * 8 * N)   # y and x
    # y back, and the one word that says no check failed; x is only read
    assert (counts["dtoh_copies"], counts["dtoh_bytes"]) == (2, 8 * N + 8)


def test_a_gradient_on_numpy_arrays_moves_each_array_once_each_way():
    """Note [Arrays resident through a gradient]: y and x go up once for the forward
    call and the gradient pass; ȳ and x̄ are made on the device; y (changed and
    changed back) and x̄ come back once; w̄ comes back in one copy with the pass's
    status word (Note [Scalar sums come back with the status]): LANGUAGE.md §10's
    budget of 2 copies up and 4 back."""
    x = np.linspace(0.0, 1.0, N)
    expected = rlang.gradient(INTERP.scale, (np.zeros(N), x, 2.0), loss="y[3]")
    got, counts = counted(lambda: rlang.gradient(CUDA.scale, (np.zeros(N), x, 2.0),
                                                 loss="y[3]"))
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)
    assert counts["launches"] == 3          # forward, the buffers' fill, the pass
    assert (counts["htod_copies"], counts["htod_bytes"]) == (2, 2 * 8 * N)
    # the forward's check word, w̄ with the pass's check word, then y and x̄
    assert (counts["dtoh_copies"], counts["dtoh_bytes"]) == (4, 8 + 16 + 2 * 8 * N)


def test_a_call_on_device_arrays_copies_one_word():
    x, y = _device(np.linspace(0.0, 1.0, N)), _device(np.zeros(N))
    _, counts = counted(lambda: CUDA.scale(y, x, 2.0))
    assert counts == {"launches": 1, "htod_copies": 0, "dtoh_copies": 1, "htod_bytes": 0,
                      "dtoh_bytes": 8}


@pytest.mark.parametrize("name, make", [
    ("scale", lambda: (np.zeros(N), np.linspace(0.0, 1.0, N), 2.0)),
    ("spin", lambda: (np.zeros(N, dtype=complex), np.linspace(0.0, 1.0, N))),
])
def test_a_gradient_on_device_arrays_keeps_within_the_budget(name, make):
    host = make()
    loss = "y[3]" if name == "scale" else "z[3]"
    expected = rlang.gradient(getattr(INTERP, name), host, loss=loss)
    device = tuple(_device(a) if isinstance(a, np.ndarray) else a for a in host)
    got, counts = counted(lambda: rlang.gradient(getattr(CUDA, name), device, loss=loss))
    assert counts["launches"] == 3          # forward, the buffers' fill, the pass
    assert counts["htod_bytes"] <= 64 and counts["dtoh_bytes"] <= 64, counts
    for g, e in zip(got, expected):
        g = g.copy_to_host() if hasattr(g, "copy_to_host") else g
        np.testing.assert_allclose(g, e, rtol=1e-12, atol=1e-12)


def test_gradient_buffers_are_made_on_the_device_with_their_seed():
    from rlang.backends.cuda.runtime import made_on_device

    seeded = np.zeros(5)
    seeded[2] = 1.0
    mixed = np.array([1.0, 2.0, 0.0])           # more than one value: copied
    rlang.cuda.reset_stats()
    made = made_on_device([seeded, None, np.zeros((2, 3), dtype=complex), mixed])
    assert made[1] is None
    np.testing.assert_array_equal(made[0].copy_to_host(), seeded)
    np.testing.assert_array_equal(made[2].copy_to_host(), np.zeros((2, 3), dtype=complex))
    np.testing.assert_array_equal(made[3].copy_to_host(), mixed)
    counts = rlang.cuda.stats()
    assert counts["launches"] == 1 and counts["htod_copies"] == 1       # the mixed one
    assert counts["htod_bytes"] == mixed.nbytes


def test_a_failed_check_brings_its_record_back_and_later_calls_start_clean():
    x = np.full(N, 1.0)
    x[7] = 3.0
    errors = []
    for module in (INTERP, CUDA):
        with pytest.raises(rlang.RlangError) as caught:
            module.halve(np.zeros(N), x)
        errors.append(caught.value)
    assert errors[1].message == errors[0].message
    rlang.cuda.reset_stats()
    y, _ = CUDA.halve(np.zeros(N), np.ones(N))         # a clean error buffer again
    np.testing.assert_allclose(y, np.full(N, 0.5))
    assert rlang.cuda.stats()["dtoh_bytes"] == 8 * N + 8


def test_a_timeline_counts_its_calls_and_times_kernels_where_events_can():
    x = np.linspace(0.0, 1.0, N)
    CUDA.scale(np.zeros(N), x, 2.0)
    with rlang.cuda.timeline() as timeline:
        assert timeline.summary().startswith("wall 0.000 ms: kernels 0.000 ms")  # so far
        CUDA.scale(np.zeros(N), x, 2.0)
    assert timeline.counts["launches"] == 1 and len(timeline.events) == 1
    assert timeline.wall > 0 and timeline.kernel_seconds is None      # the simulator
    assert timeline.summary().endswith("1 launches, 2 copies up, 2 back")

    class Timed:                # a GPU's events: elapsed milliseconds between two
        def __init__(self, ms):
            self.ms = ms

        def elapsed_time(self, end):
            return end.ms - self.ms

    timeline.events = [(Timed(0.0), Timed(2.0)), (Timed(5.0), Timed(6.0))]
    timeline.wall = 0.004
    assert timeline.kernel_seconds == pytest.approx(0.003)
    assert timeline.summary().startswith("wall 4.000 ms: kernels 3.000 ms (75%), gaps 1.000 ms")
