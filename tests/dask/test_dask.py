"""`rlang.dask` (rlang/dask.py, Note [Programs on workers]): gradients and calls of
a rev function over many inputs on a 2-worker LocalCluster, equal to the same runs
made one by one here, with a failing input reported as its own RlangError."""
from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("RLANG_CI"):
    import distributed          # CI installs it: a missing one is a failure
else:
    distributed = pytest.importorskip("distributed")

import rlang  # noqa: E402

from optional_parts import missing_package_message  # noqa: E402

SOURCE = """
function energy(y!, a, x: f64[:], k: i64)
    for i = 0:length(x) - 1
        y! += a * sin(x[i]) * x[(i + k) % length(x)]
    end
end
"""


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        yield client


def inputs(count: int) -> list:
    rng = np.random.default_rng(0)
    return [(0.0, float(rng.normal()), rng.normal(size=4), int(k % 3)) for k in range(count)]


@pytest.mark.parametrize("backend", ["interp", "llvm"])
def test_a_sweep_of_gradients_equals_the_one_by_one_runs(client, backend):
    m = rlang.loads(SOURCE, backend=backend)
    items = inputs(40)
    got = rlang.dask.gradients(m.energy, items, loss="y!", client=client, chunk_size=3)
    expected = [rlang.gradient(m.energy, args, loss="y!") for args in items]
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert g[0] == e[0] and g[1] == e[1] and g[3] is None
        np.testing.assert_array_equal(g[2], e[2])       # the same bits


def test_calls_and_inverses_come_back_in_input_order(client):
    m = rlang.loads(SOURCE, backend="llvm")
    items = inputs(25)
    for function in (m.energy, ~m.energy):
        got = rlang.dask.map(function, items, client=client)
        expected = [function(*[a.copy() if isinstance(a, np.ndarray) else a for a in args])
                    for args in items]
        for g, e in zip(got, expected):
            assert g[0] == e[0] and g[3] == e[3]
            np.testing.assert_array_equal(g[2], e[2])


def test_a_failing_input_is_its_own_error_and_the_others_are_kept(client):
    m = rlang.loads("""
function pick(y!, x: f64[:], i: i64)
    y! += x[i] * x[i]
end""", backend="llvm")
    x = np.array([1.0, 2.0, 3.0])
    items = [(0.0, x, 0), (0.0, x, 7), (0.0, "text", 1), (0.0, x, 2)]
    got = rlang.dask.gradients(m.pick, items, loss="y!", client=client, chunk_size=4)
    np.testing.assert_array_equal(got[0][1], [2.0, 0.0, 0.0])
    np.testing.assert_array_equal(got[3][1], [0.0, 0.0, 6.0])
    for k in (1, 2):
        assert isinstance(got[k], rlang.RlangError)
        with pytest.raises(type(got[k])) as local:
            rlang.gradient(m.pick, items[k], loss="y!")
        assert str(got[k]) == str(local.value)
    assert isinstance(got[1], rlang.RlangRuntimeError) and "out of bounds" in str(got[1])
    assert isinstance(got[2], rlang.RlangTypeError)


def test_the_program_travels_as_source_with_its_includes(client, tmp_path):
    (tmp_path / "square.rev").write_text("function square(y!, x)\n    y! += x * x\nend\n")
    main = tmp_path / "main.rev"
    main.write_text('include "square.rev"\n'
                    "function twice(y!, x)\n    square(y!, x)\n    square(y!, x)\nend\n")
    m = rlang.load(str(main), backend="llvm")
    (tmp_path / "square.rev").unlink()          # the workers cannot read it
    main.unlink()
    got = rlang.dask.gradients(m.twice, [(0.0, 1.5), (0.0, -2.0)], loss="y!", client=client)
    assert got == [(1.0, 6.0), (1.0, -8.0)]


def test_bad_uses_are_clear_errors(client):
    m = rlang.loads(SOURCE, backend="llvm")
    with pytest.raises(rlang.RlangTypeError, match="takes a function of a loaded program"):
        rlang.dask.map(len, [(1,)], client=client)
    with pytest.raises(rlang.RlangTypeError, match="sequence of argument tuples"):
        rlang.dask.map(m.energy, 5, client=client)
    with pytest.raises(rlang.RlangTypeError, match="input 1 must be a tuple"):
        rlang.dask.map(m.energy, [(0.0, 1.0, np.ones(2), 1), 3.0], client=client)
    for bad in (0, True, 2.0):
        with pytest.raises(rlang.RlangTypeError, match="chunk_size"):
            rlang.dask.map(m.energy, inputs(2), client=client, chunk_size=bad)
    with pytest.raises(rlang.RlangTypeError, match="client must be a distributed.Client"):
        rlang.dask.map(m.energy, inputs(2), client="tcp://localhost:8786")
    with pytest.raises(rlang.RlangError, match="loss"):
        rlang.dask.gradients(m.energy, inputs(2), loss="nope", client=client)
    assert rlang.dask.map(m.energy, [], client=client) == []


def test_without_a_client_a_local_cluster_is_started_and_closed():
    m = rlang.loads(SOURCE, backend="llvm")
    items = inputs(5)
    got = rlang.dask.gradients(m.energy, items, loss="y!")
    expected = [rlang.gradient(m.energy, args, loss="y!") for args in items]
    for g, e in zip(got, expected):
        np.testing.assert_array_equal(g[2], e[2])


def test_a_missing_distributed_is_a_clear_import_error():
    assert "rlang.dask needs Dask's distributed, which is not installed" in \
        missing_package_message("dask", "distributed")


def test_the_sweep_example_gives_the_local_gradients(client):
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "sweep.py"
    spec = importlib.util.spec_from_file_location("sweep_example", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    q0, p0, dq, dp = example.sweep(5, 40, client, progress=False)
    m = rlang.load(str(example.PROGRAM), backend="llvm")
    for k in (0, 7, 24):
        q, p = q0.ravel()[k], p0.ravel()[k]
        expected = rlang.gradient(m.swing, (0.0, q, p, 10.0 / 40, 40), loss="angle!")
        assert (dq.ravel()[k], dp.ravel()[k]) == expected[1:3]
