"""rlang/deep.py: calls on a deep-stack worker thread, kept between calls
(Note [Deep-stack workers are kept])."""

import threading

import pytest

from rlang import deep


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_a_recursion_deeper_than_the_default_limit_runs():
    assert deep.run_deep(_depth, 50_000) == 50_000


def test_the_worker_is_kept_for_the_next_call():
    deep.run_deep(int)
    workers = list(deep._idle)
    threads = threading.active_count()
    for _ in range(20):
        assert deep.run_deep(_depth, 100) == 100
    assert threading.active_count() == threads
    assert deep._idle == workers


def test_an_error_reaches_the_caller_and_the_worker_goes_on():
    with pytest.raises(ZeroDivisionError):
        deep.run_deep(lambda: 1 // 0)
    assert deep.run_deep(lambda: "next") == "next"


def test_calls_from_several_threads_at_once_each_get_a_worker():
    started = threading.Barrier(3)
    results = []

    def call():
        def job():
            started.wait(timeout=10)        # all three are running at the same time
            return threading.current_thread().name

        results.append(deep.run_deep(job))

    callers = [threading.Thread(target=call) for _ in range(3)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(timeout=30)
    assert len(results) == 3 and set(results) == {"rlang-deep"}


def test_a_call_inside_a_worker_runs_in_place():
    outer = deep.run_deep(lambda: (threading.get_ident(),
                                   deep.run_deep(threading.get_ident)))
    assert outer[0] == outer[1] != threading.get_ident()
