"""The threads compiled code may use (LANGUAGE.md §14), and the pool they run on.

    rlang.set_num_threads(4); rlang.get_num_threads()      # 4

The count comes from `set_num_threads`, else the environment variable
`RLANG_NUM_THREADS`, else the CPUs this process may use.  Any n ≥ 1 is taken, also
above the CPU count.  `run_blocks(calls)` runs callables on a pool of that many
threads and returns their results in order: each callable is one native call, which
ctypes makes without the GIL, so the blocks run at once (`rlang.vmap` on the llvm
backend: rlang/backends/llvm/batch.py, Note [Batches on threads]).
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .errors import RlangTypeError

_ENVIRONMENT = "RLANG_NUM_THREADS"
_state = {"count": None, "pool": None, "pool_size": 0}
_lock = threading.Lock()


_cpus = {"pid": None, "count": 1}


def _available_cpus() -> int:
    """The CPUs this process may use, read once per process (each call of a module
    with threaded loops asks: the system call cost 1.6 µs)."""
    if _cpus["pid"] != os.getpid():
        count = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
            os.cpu_count() or 1
        _cpus.update(pid=os.getpid(), count=max(1, count))
    return _cpus["count"]


def _checked(n, where: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise RlangTypeError(f"{where} must be a positive integer (1, 2, …), got {n!r}")
    return n


def set_num_threads(n: int) -> None:
    """Let compiled code use `n` threads (n ≥ 1)."""
    _state["count"] = _checked(n, "rlang.set_num_threads: the number of threads")


def get_num_threads() -> int:
    """The number of threads compiled code may use (module docstring)."""
    if _state["count"] is not None:
        return _state["count"]
    text = os.environ.get(_ENVIRONMENT, "").strip()
    if not text:
        return _available_cpus()
    try:
        value = int(text)
    except ValueError:
        value = text
    return _checked(value, f"the environment variable {_ENVIRONMENT}")


def _forget_pool() -> None:
    """In a forked child: the parent's pool threads do not exist there (and the lock
    may have been held by one of them), so the child starts a pool of its own."""
    global _lock
    _lock = threading.Lock()
    _state["pool"], _state["pool_size"] = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def run_blocks(calls: list) -> list:
    """`[call() for call in calls]`, with at most `get_num_threads()` of them running
    at once (this thread takes calls too); an exception of a call is raised once
    every call has ended."""
    threads = min(get_num_threads(), len(calls))
    if threads <= 1:
        return [call() for call in calls]
    with _lock:
        if _state["pool_size"] < threads - 1:
            old = _state["pool"]
            _state["pool"] = ThreadPoolExecutor(threads - 1, thread_name_prefix="rlang")
            _state["pool_size"] = threads - 1
            if old is not None:
                old.shutdown(wait=False)
        pool = _state["pool"]
    waiting = iter(enumerate(calls))
    taking = threading.Lock()
    outcomes: list = [None] * len(calls)

    def work() -> None:
        while True:
            with taking:
                item = next(waiting, None)
            if item is None:
                return
            outcomes[item[0]] = _outcome(item[1])

    helpers = [pool.submit(work) for _ in range(threads - 1)]
    work()
    for helper in helpers:      # one not started has nothing left to take: it is
        if not helper.cancel():     # cancelled, so a call made from a pool thread
            helper.result()         # never waits on the pool it occupies
    for value, error in outcomes:
        if error is not None:
            raise error
    return [value for value, _ in outcomes]


def _outcome(call) -> tuple:
    try:
        return call(), None
    except BaseException as error:     # noqa: BLE001 - raised by run_blocks
        return None, error
