"""Running deep recursions without crashing the host process.

A rev call nests several Python frames of the interpreter, so a recursion 10,000
calls deep (LANGUAGE.md §4) needs far more than Python's default stack.  `run_deep`
runs a function in a worker thread with a large stack and a high recursion limit,
and hands back its result or re-raises its exception in the caller's thread.
"""
from __future__ import annotations

import sys
import threading

#: Stack of the worker thread (virtual memory; only the touched part is used).
STACK_BYTES = 1 << 30
RECURSION_LIMIT = 400_000

_lock = threading.Lock()


def run_deep(fn, *args, **kwargs):
    """`fn(*args, **kwargs)`, run on a thread with a deep stack."""
    if getattr(_local, "inside", False):
        return fn(*args, **kwargs)
    result: dict = {}

    def target():
        _local.inside = True
        try:
            result["value"] = fn(*args, **kwargs)
        except BaseException as error:  # handed to the caller's thread below
            result["error"] = error

    with _lock:
        previous = threading.stack_size()
        threading.stack_size(STACK_BYTES)
        try:
            worker = threading.Thread(target=target, daemon=True)
            worker.start()
        except RuntimeError:        # no address space or threads left: the machine's
            from .errors import RlangRuntimeError       # limit, said so, not a traceback

            raise RlangRuntimeError(
                "rlang could not start its worker thread (it reserves 1 GiB of stack "
                "address space for deep recursions): the machine is out of memory or "
                "threads; free some and try again") from None
        finally:
            threading.stack_size(previous)
    if sys.getrecursionlimit() < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    try:
        while worker.is_alive():
            worker.join(0.05)
    except KeyboardInterrupt:
        _interrupt(worker)
        raise
    if "error" in result:
        raise result["error"]
    return result.get("value")


def _interrupt(worker: threading.Thread) -> None:
    """Deliver KeyboardInterrupt into the worker so that it stops too."""
    import ctypes

    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident),
                                               ctypes.py_object(KeyboardInterrupt))


_local = threading.local()
