"""Running deep recursions without crashing the host process.

A rev call nests several Python frames of the interpreter, so a recursion 10,000
calls deep (LANGUAGE.md §4) needs far more than Python's default stack.  `run_deep`
runs a function in a worker thread with a large stack and a high recursion limit,
and hands back its result or re-raises its exception in the caller's thread.

Note [Deep-stack workers are kept]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
Starting a thread with a 1 GiB stack costs 0.2 ms, which was the whole time of a
compiled call of a small recursive function (GradBench's det at ℓ = 5 computes in
2 µs).  So a worker that has finished its job waits for the next one instead of
ending: `run_deep` hands the job to an idle worker, or starts a new one when all
are busy (calls from several threads at once each get their own), and waits for
its result.  A worker puts itself back on the idle list before it says that the job
is done, so a sequence of calls from one thread uses one worker.  An interrupt
(Ctrl-C) in the caller is delivered into the worker, which ends that job with it
and goes back to waiting; one that arrives while it waits is ignored.
"""
from __future__ import annotations

import queue
import sys
import threading

#: Stack of the worker thread (virtual memory; only the touched part is used).
STACK_BYTES = 1 << 30
RECURSION_LIMIT = 400_000

_lock = threading.Lock()        # threading.stack_size is process-wide
_idle: list["_Worker"] = []     # workers waiting for a job
_idle_lock = threading.Lock()


class _Job:
    """One call to run on a worker: `fn(*args, **kwargs)`, its outcome, and `done`."""

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.value = self.error = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.value = self.fn(*self.args, **self.kwargs)
        except BaseException as error:  # handed to the caller's thread by run_deep
            self.error = error


class _Worker:
    """A daemon thread with a deep stack that runs the jobs put on its queue."""

    def __init__(self):
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        with _lock:
            previous = threading.stack_size()
            threading.stack_size(STACK_BYTES)
            try:
                self.thread = threading.Thread(target=self._serve, daemon=True,
                                               name="rlang-deep")
                self.thread.start()
            except RuntimeError:    # no address space or threads left: the machine's
                from .errors import RlangRuntimeError   # limit, said so, not a traceback

                raise RlangRuntimeError(
                    "rlang could not start its worker thread (it reserves 1 GiB of stack "
                    "address space for deep recursions): the machine is out of memory or "
                    "threads; free some and try again") from None
            finally:
                threading.stack_size(previous)

    def _serve(self) -> None:
        _local.inside = True
        while True:
            try:
                job = self.jobs.get()
                job.run()
                job.fn = job.args = job.kwargs = None   # hold no arguments while idle
                with _idle_lock:
                    _idle.append(self)
                job.done.set()
            except BaseException:   # noqa: BLE001 - an interrupt meant for a job that
                continue            # has ended (its caller has left): keep serving


def _worker() -> _Worker:
    """An idle worker, or a new one."""
    with _idle_lock:
        if _idle:
            return _idle.pop()
    return _Worker()


def run_deep(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, run on a thread with a deep stack."""
    if getattr(_local, "inside", False):
        return fn(*args, **kwargs)
    worker = _worker()
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    job = _Job(fn, args, kwargs)
    worker.jobs.put(job)
    try:
        while not job.done.wait(0.05):
            pass
    except KeyboardInterrupt:
        _interrupt(worker.thread)
        raise
    if job.error is not None:
        error, job.error = job.error, None
        raise error
    return job.value


def _interrupt(worker: threading.Thread) -> None:
    """Deliver KeyboardInterrupt into the worker so that it stops too."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident),
                                               ctypes.py_object(KeyboardInterrupt))


_local = threading.local()
