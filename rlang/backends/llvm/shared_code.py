"""Compiled modules as shared libraries the process opens without LLVM (Note [Code
without LLVM]).

`linker()` is the system linker (`ld`) where modules can be linked (Linux), else
None.  `link(obj, path)` links position-independent object code into the shared
library `path`, checks that the process can open it, and tells whether it did.
`SharedCode.open(path)` opens a linked library (a private copy where this process
already has `path` open) and finds its symbols' addresses as an MCJIT engine
does: `get_function_address(name)` and `get_global_value_address(name)`, 0 where
there is none.  `cached(key, emit)` is a library kept in the disk cache under
`key`, linked from `emit()`'s object code the first time.

Note [Code without LLVM]
~~~~~~~~~~~~~~~~~~~~~~~~
A process whose code all comes from the disk cache spent most of its first call
loading LLVM: importing llvmlite's binding loads its shared library (LLVM itself,
tens of megabytes), defines its ctypes prototypes and finds the library through
importlib.resources, 30-45 ms of the 70-100 ms from `rlang.load` to GradBench
GMM's first gradient; then each module's object code went through MCJIT's
relocation.  Where the system linker is there (Linux: binutils' `ld`, present
wherever a C compiler is), a module's optimised object code is therefore emitted
position-independent (`reloc="pic"`, the small code model) and linked, once, into
a shared library beside its cache entry (`ld -shared -Bsymbolic`: 5-10 ms, against
the 1-5 s of optimising it; `-Bsymbolic` binds the module's calls of its own
functions inside it).  A later process opens that library with `dlopen` (0.1 ms),
finds the entry points and hooks with `dlsym`, and never loads LLVM unless it has
something to compile.  The library is opened RTLD_LOCAL, so two modules' symbols
of the same name do not meet; its undefined symbols (libm's functions, calloc and
free, libgcc's `__divti3`) are found in the process's global scope, as MCJIT finds
them, after libgcc_s is opened there (Note: MCJIT loads it too, jit.py).

Each opening must have globals of its own: a module's hooks (print, locals,
kept blocks, parallel loops) are globals that the loading `NativeModule` points at
its own routines, and `dlopen` of a path already open gives back the same copy.
So a library this process already has open is opened again from a private copy
of the file (a temporary file removed once open).  A library is closed when the
code loaded from it is collected, as an MCJIT engine frees its code.

An object for MCJIT is relocated by MCJIT itself, which needs the large code
model: a position-independent object's 32-bit relative addresses would overflow
unchecked where MCJIT puts its sections far apart.  So the two kinds are never
mixed: where no linker is found, the library fails to link or does not open, or
the cache directory cannot be written, modules are emitted for MCJIT as before.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import sys
import tempfile
import threading
import weakref
from pathlib import Path

from ...disk_cache import cache_dir, package_digest

#: Whether `linker()` found the linker, and its path.
_LINKER: list = []
_LOCK = threading.Lock()
_OPEN: dict = {}            # path (str) → how many SharedCode have it open
_RUNTIME: list = []         # [True] once libgcc_s was opened globally


def linker() -> str | None:
    """The path of the system linker where modules are linked as shared libraries
    (Linux only; RLANG_SHARED_CODE=0 turns it off), else None."""
    if not _LINKER:
        found = None
        if sys.platform.startswith("linux") and os.environ.get("RLANG_SHARED_CODE", "1") != "0":
            found = shutil.which("ld")
        _LINKER.append(found)
    return _LINKER[0]


def link(obj: bytes, path: Path) -> bool:
    """Link position-independent object code `obj` into the shared library `path`
    (written atomically); whether the library was written and the process can open
    it.  Nothing is left behind where it was not."""
    ld = linker()
    if ld is None:
        return False
    import subprocess       # (only where something is linked: not on a warm call)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=path.parent, prefix=".link-") as tmp:
            source, target = Path(tmp) / "module.o", Path(tmp) / "module.so"
            source.write_bytes(obj)
            done = subprocess.run([ld, "-shared", "-Bsymbolic", "-o", str(target),
                                   str(source)], capture_output=True, timeout=120)
            if done.returncode != 0 or not _opens(target):
                return False
            os.replace(target, path)
        return True
    except (OSError, subprocess.SubprocessError):
        return False


def _opens(path: Path) -> bool:
    """Whether the process can open the library at `path` (it is closed again)."""
    _load_runtime()
    try:
        handle = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)._handle
    except OSError:
        return False
    _dlclose(handle)
    return True


def _load_runtime() -> None:
    """Open the compiler's runtime library (`__divti3`: 128-bit division, which
    fixed-point `/` uses) in the process's global scope, once."""
    with _LOCK:
        if not _RUNTIME:
            try:
                ctypes.CDLL("libgcc_s.so.1", mode=os.RTLD_GLOBAL)
            except OSError:         # a module that needs it then fails to open
                pass
            _RUNTIME.append(True)


def _dlclose(handle: int) -> None:
    import _ctypes

    _ctypes.dlclose(handle)


class SharedCode:
    """A module's shared library, open in this process."""

    def __init__(self, library: ctypes.CDLL, path: str):
        self.library, self.path = library, path
        weakref.finalize(self, _closed, library._handle, path)

    @classmethod
    def open(cls, path: Path) -> "SharedCode":
        """Open the library at `path` (a private copy where it is open already);
        OSError where it cannot be opened."""
        _load_runtime()
        key = str(path)
        with _LOCK:
            first = not _OPEN.get(key)
            _OPEN[key] = _OPEN.get(key, 0) + 1
        try:
            library = (ctypes.CDLL(key, mode=os.RTLD_LOCAL) if first else
                       _private_copy(path))
        except OSError:
            _closed(None, key)
            raise
        return cls(library, key)

    def get_function_address(self, name: str) -> int:
        """The address of the symbol `name`, or 0 where the library has none."""
        try:
            return ctypes.cast(self.library[name], ctypes.c_void_p).value or 0
        except AttributeError:
            return 0

    get_global_value_address = get_function_address


def _private_copy(path: Path) -> ctypes.CDLL:
    """The library at `path` opened from a copy of its own (removed once open)."""
    with tempfile.TemporaryDirectory(prefix="rlang-code-") as tmp:
        copy = Path(tmp) / path.name
        shutil.copyfile(path, copy)
        return ctypes.CDLL(str(copy), mode=os.RTLD_LOCAL)


def _closed(handle: int | None, key: str) -> None:
    """Close a library's handle (if any) and count `key` as open once less."""
    if handle is not None:
        _dlclose(handle)
    with _LOCK:
        left = _OPEN.get(key, 0) - 1
        if left > 0:
            _OPEN[key] = left
        else:
            _OPEN.pop(key, None)


def cached(key: str, emit) -> SharedCode | None:
    """The shared library kept in the disk cache under `key` (which must cover what
    the code depends on), linked from `emit()`'s position-independent object code
    where it is not there yet; None where it cannot be linked or opened."""
    if linker() is None:
        return None
    digest = hashlib.sha256(f"{package_digest()}|{key}".encode()).hexdigest()[:32]
    path = cache_dir() / f"{digest}.so"
    if not path.exists() and not link(emit(), path):
        return None
    try:
        return SharedCode.open(path)
    except OSError:
        return None
