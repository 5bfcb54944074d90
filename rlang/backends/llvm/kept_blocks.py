"""Large array ancillas' memory, kept from one call for the next: the process's own
compiled routines behind each module's `rev_block_take`/`rev_block_give` (which
every heap ancilla goes through; their IR and the routines' are in
backends/llvm/kept_block_code.py), with the table of kept blocks they share
(installed into each loaded module by `install`, emptied by `release_kept_blocks`).

Note [Large ancillas kept between calls]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
A recurrence kept in an ancilla array (`s ← zeros(f64, n + 1)`, n = 2·10^6) needs
16 MB for `s` and, in its gradient pass, 16 MB more for `s`'s gradient.  calloc
takes such blocks from fresh pages (glibc maps them, or gives its heap's top back
to the system when they are freed), and every page then faults twice in the loop
that fills it: once when its zero is read (`s[i] += …` reads before it writes),
once more when it is written.  The gradient spent about 30 of its 44–55 ms in the
kernel (perf: page faults, clearing pages, unmapping).  NumPy pays the faults
too; a caller running the same function again and again (an optimiser, a
sampler) pays them on every call.

So freed heap ancillas of at least KEEP_FROM bytes (128 KiB) are kept, up to
KEEP_SLOTS blocks and KEEP_BUDGET bytes in all (kept_block_code.py), in a table
shared by every compiled module of the process, and the next ancilla that fits (a
kept block of its size up to twice it) takes one and zeroes it with memset, whose
pages are already there: the gradient above went from 44 ms to 15 ms
(benchmarks/primal_speed.py).  Blocks from 128 KiB up fault too: glibc maps them
afresh, or takes them from the top of its heap and, once two of them are freed
there, gives that top back to the system (its trim threshold is twice the last
mapped block's size).  The gradient of logistic! (benchmarks/llvm/workloads.rev)
with a 0.96 MB ancilla took 1.32–1.34 ms while only blocks of 1 MiB were kept, and
0.97 ms now (with a 0.51 MB one: 0.53–0.72 ms, now 0.52–0.54 ms).  Each block
carries a 16-byte header holding its size (the data stays 16-byte aligned).
Taking and giving swap slots atomically (`xchg`, `cmpxchg`), so `@parallel for`
bodies and threaded calls may share the table; a block is only read after its
taker owns it.  Memory a program frees stays with the process, at most
KEEP_BUDGET bytes of it: the price of the speed, as with any allocator that
caches; `release_kept_blocks()` gives it back.  The routines that keep blocks are
compiled once (kept in the disk cache: a shared library where modules are linked,
Note [Code without LLVM], else object code; jit.process_code) and reached
through two hooks each module's `rev_block_take`/`rev_block_give` read: inlined
into every module, the 8-slot routines had added 30 ms to each module's
compilation.  Compiled code loaded elsewhere (a shared library of `rlang compile
--emit shared`) finds the hooks null and uses calloc and free alone.  main's
store, whose arrays Python frees, is allocated with plain calloc
(backends/llvm/ancillas.py).
"""
from __future__ import annotations

import ctypes
import threading

from ..abi import GIVE_HOOK, TAKE_HOOK, TAKE_RAW_HOOK


# ------------------------------------------------------------------ Python's side

_LOCK = threading.Lock()
_LOADED: list = []          # [code, take, give, release, held, take_raw] once loaded


def install(engine, process_code) -> None:
    """Point a loaded module's hooks (if it has them) at the process's routines,
    compiled on first use by `process_code(name, make_ir)` (jit.process_code:
    from the disk cache where they are there)."""
    take = engine.get_global_value_address(TAKE_HOOK)
    give = engine.get_global_value_address(GIVE_HOOK)
    raw = engine.get_global_value_address(TAKE_RAW_HOOK)
    if not (take or give):
        return
    routines = _routines_loaded(process_code)
    ctypes.c_void_p.from_address(take).value = routines[1]
    ctypes.c_void_p.from_address(give).value = routines[2]
    if raw:
        ctypes.c_void_p.from_address(raw).value = routines[5]


def _routines_loaded(process_code) -> list:
    with _LOCK:
        if not _LOADED:
            code = process_code("kept blocks", _routines_ir)
            address = code.get_function_address
            _LOADED[:] = [code, address("rev_kept_take"), address("rev_kept_give"),
                          ctypes.CFUNCTYPE(ctypes.c_int64)(address("rev_kept_release")),
                          ctypes.CFUNCTYPE(ctypes.c_int64)(address("rev_kept_held")),
                          address("rev_kept_take_raw")]
        return _LOADED


def _routines_ir() -> str:
    from .kept_block_code import routines

    return str(routines())


def kept_bytes() -> int:
    """The bytes the table holds now."""
    return _LOADED[4]() if _LOADED else 0


def release_kept_blocks() -> int:
    """Free every kept block (compiled code running meanwhile is safe: a block is
    taken out of its slot before it is freed); returns the bytes given back."""
    return _LOADED[3]() if _LOADED else 0
