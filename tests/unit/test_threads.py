"""Threads (LANGUAGE.md §14; rlang/threads.py): the thread count and its sources,
and `rlang.vmap` on the llvm backend spread over threads (Note [Batches on threads],
rlang/backends/llvm/batch.py): the same bits for 1, 2 and 4 threads, a failure at
the same item with the same arrays after it."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import rlang
from rlang.threads import run_blocks

SOURCE = """
function wave(y!, a, x: f64[:])
    for i = 0:length(x) - 1
        for j = 0:20
            y! += a * sin(x[i] * j) / (1.0 + j)
        end
    end
end

function move!(v!: f64[:], s: f64)
    for i = 0:length(v!) - 1
        v![i] += sin(s * (i + 1))
    end
end

function pick(y!, x: f64[:], i: i64)
    y! += x[i] * x[i]
end

function poke!(v!: f64[:], i: i64)
    v![0] += 1.0
    v![i] += 2.0
end
"""
COUNT = 2000        # eight blocks of 250 on 2 threads: more than one block


@pytest.fixture
def threads():
    """Set the thread count inside a test; the default again after it."""
    yield rlang.set_num_threads
    from rlang import threads as module

    module._state["count"] = None


@pytest.fixture(scope="module")
def m():
    return rlang.loads(SOURCE, backend="llvm")


def test_the_count_comes_from_set_num_threads_then_the_environment(threads):
    assert rlang.get_num_threads() >= 1
    threads(3)
    assert rlang.get_num_threads() == 3
    threads(64)                             # above the CPU count: taken
    assert rlang.get_num_threads() == 64
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(rlang.RlangTypeError, match="positive integer"):
            threads(bad)
    code = "import rlang; print(rlang.get_num_threads())"
    for value, expected in (("5", "5"), ("", str(len(os.sched_getaffinity(0))))):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, "RLANG_NUM_THREADS": value}, check=True)
        assert out.stdout.strip() == expected
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "RLANG_NUM_THREADS": "many"})
    assert "RLANG_NUM_THREADS must be a positive integer (1, 2, …), got 'many'" in out.stderr


def test_run_blocks_keeps_order_and_runs_at_most_the_count_at_once(threads):
    running, most = [0], [0]
    lock = threading.Lock()

    def block(k):
        def run():
            with lock:
                running[0] += 1
                most[0] = max(most[0], running[0])
            time.sleep(0.01)
            with lock:
                running[0] -= 1
            return k
        return run

    threads(3)
    assert run_blocks([block(k) for k in range(12)]) == list(range(12))
    assert most[0] == 3
    threads(1)
    most[0] = 0
    assert run_blocks([block(k) for k in range(4)]) == list(range(4))
    assert most[0] == 1


def _batch():
    rng = np.random.default_rng(3)
    return np.zeros(COUNT), rng.normal(size=COUNT), rng.normal(size=(COUNT, 4))


def test_batches_give_the_same_bits_on_any_number_of_threads(m, threads):
    results = {}
    for count in (1, 2, 4):
        threads(count)
        ys, a, x = _batch()
        grads = rlang.vmap(rlang.value_and_grad(m.wave, "y!"))(ys, a, x)
        called = rlang.vmap(m.wave)(ys.copy(), a, x)
        v = x.copy()
        rlang.vmap(m.move_)(v, a)
        back = v.copy()
        rlang.vmap(~m.move_)(back, a)
        results[count] = [grads[0], *grads[1], *called, v, back]
    for count in (2, 4):
        for one, other in zip(results[1], results[count]):
            np.testing.assert_array_equal(one, other)
    ys, a, x = _batch()
    expected = rlang.gradient(m.wave, (0.0, a[1234], x[1234]), loss="y!")
    assert results[4][2][1234] == expected[1]
    np.testing.assert_array_equal(results[4][3][1234], expected[2])


def test_a_failure_is_the_lowest_failing_item_with_the_same_arrays(m, threads):
    seen = {}
    for count in (1, 2, 4):
        threads(count)
        index = np.zeros(COUNT, dtype=np.int64)
        index[[700, 1500, 1999]] = 9            # three items out of bounds
        ys = np.zeros(COUNT)
        with pytest.raises(rlang.RlangRuntimeError, match="out of bounds") as error:
            rlang.vmap(m.pick)(ys, np.ones((COUNT, 3)), index)
        seen[count] = (error.value.batch_item, ys.copy(), str(error.value))
    assert seen[1][0] == 700
    for count in (2, 4):
        assert seen[count][0] == 700 and seen[count][2] == seen[1][2]
        np.testing.assert_array_equal(seen[count][1], seen[1][1])


def test_arrays_written_in_place_are_as_one_call_leaves_them_after_a_failure(m, threads):
    """The items before the failing one have run, the failing one has made the
    writes before its failure, and the items after it are untouched, also where
    other threads had run them."""
    for count in (1, 2, 4):
        threads(count)
        index = np.ones(COUNT, dtype=np.int64)
        index[[900, 1800]] = 5
        v = np.zeros((COUNT, 3))
        with pytest.raises(rlang.RlangRuntimeError) as error:
            rlang.vmap(m.poke_)(v, index)
        assert error.value.batch_item == 900
        np.testing.assert_array_equal(v[:900], [[1.0, 2.0, 0.0]] * 900)
        np.testing.assert_array_equal(v[900], [1.0, 0.0, 0.0])
        np.testing.assert_array_equal(v[901:], 0.0)


def test_blocks_run_from_inside_a_block_do_not_wait_on_a_full_pool(threads):
    """A native call on a pool thread that hands out blocks again (a batch inside a
    batch) finishes them itself when every pool thread is busy."""
    threads(2)

    def inner():
        return sum(run_blocks([lambda k=k: k for k in range(6)]))

    done = []
    worker = threading.Thread(target=lambda: done.append(run_blocks([inner] * 4)),
                              daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert done == [[15] * 4]


def test_a_forked_child_runs_blocks_on_a_pool_of_its_own(threads):
    """The parent's pool threads do not exist in a forked child: the child gets a
    pool of its own (os.register_at_fork), and its blocks really run on threads."""
    threads(2)
    assert run_blocks([lambda: 1, lambda: 2]) == [1, 2]       # the parent's pool
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:                                # the child: report and leave at once
        try:
            seen = run_blocks([lambda: threading.current_thread().name] * 8)
            from rlang import threads as module
            ok = module._state["pool"] is not None and any(
                name.startswith("rlang") for name in seen)
            os.write(writer, b"ok" if ok else repr(seen).encode())
        finally:
            os._exit(0)
    os.close(writer)
    with os.fdopen(reader, "rb") as pipe:
        answer = pipe.read()
    os.waitpid(pid, 0)
    assert answer == b"ok"


def test_a_module_called_from_many_threads_at_once_compiles_each_specialisation_once(
        monkeypatch):
    """Callers on several threads (a Dask worker with threads) share one module: its
    specialisations are compiled one at a time and each once."""
    from rlang.backends.llvm import backend

    compiled, at_once, busy = [], [0], [0]
    original = backend.compile_module

    def counting(key, build):
        busy[0] += 1
        at_once[0] = max(at_once[0], busy[0])
        time.sleep(0.02)            # (a window for a second compile to overlap)
        try:
            compiled.append(key)
            return original(key, build)
        finally:
            busy[0] -= 1

    monkeypatch.setattr(backend, "compile_module", counting)
    m = rlang.loads(SOURCE, backend="llvm")
    arguments = [(0.0, 1.5, np.arange(3.0)), (0.0, 2, np.arange(4)), (0.0, 0.5, np.ones(2))]
    expected = [rlang.loads(SOURCE, backend="interp").wave(*a) for a in arguments]
    results, errors = [], []

    def call(k):
        try:
            args = arguments[k % 3]
            results.append((k % 3, m.wave(*args), rlang.gradient(m.wave, args, loss="y!")))
        except Exception as error:     # noqa: BLE001 - reported below
            errors.append(error)

    workers = [threading.Thread(target=call, args=(k,)) for k in range(12)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not errors and len(results) == 12
    for k, outputs, _ in results:
        assert outputs[0] == pytest.approx(expected[k][0], rel=1e-12)
    assert at_once[0] == 1 and len(compiled) == len(set(compiled)) == len(m.compiled._modules)
