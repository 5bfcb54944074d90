"""Compile IR modules to native code with llvmlite, cache them, and call them.

`compile_module(key, build)` returns a `NativeModule`: from the disk cache when an
object for `key` is there, otherwise by calling `build()` (→ `(ir.Module, llvm
module)`), optimising with the new pass manager at O3 for the host CPU, and storing
the object code and the site table under the cache directory (`RLANG_CACHE_DIR`,
default `~/.cache/rlang`).  `key` must cover the source, the argument types and the
flags (rlang/backends/llvm.py makes it).

`NativeModule.call(symbol, values)` runs an entry point on values already conformed
to the parameter types (rlang/backends/llvm.py) and returns the new values, or
raises the interpreter's RlangError when a check failed.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import pickle
from pathlib import Path


import llvmlite
import llvmlite.binding as llvm

from .. import ir
from ..errors import RlangError, RlangRuntimeError, RlangTypeError
from . import abi
from .llvm_errors import error_from_context, print_line

#: Bump when the cache format changes (changes to the compiler's own source files
#: invalidate the cache by themselves: `_compiler_digest`).
CODE_VERSION = "3"

_SCALAR_CTYPES = {"bool": ctypes.c_uint8, "i32": ctypes.c_int32, "i64": ctypes.c_int64,
                  "f32": ctypes.c_float, "f64": ctypes.c_double, "fixed": ctypes.c_int64,
                  "ulog": ctypes.c_double}

_initialised = False


def _initialise() -> None:
    global _initialised
    if not _initialised:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _load_compiler_runtime()
        _initialised = True


def _load_compiler_runtime() -> None:
    """Make the compiler's runtime routines (`__divti3`: 128-bit division, which
    fixed-point `/` uses) resolvable by the JIT, as the linker does for `gcc`."""
    import ctypes.util

    for name in (ctypes.util.find_library("gcc_s"), "libgcc_s.so.1"):
        if name:
            try:
                llvm.load_library_permanently(name)
                return
            except RuntimeError:
                continue
    raise RlangError("the llvm backend needs the GCC runtime library (libgcc_s.so.1) for "
                     "128-bit arithmetic; install libgcc-s1")


def cache_dir() -> Path:
    return Path(os.environ.get("RLANG_CACHE_DIR") or Path.home() / ".cache" / "rlang")


def target_machine(opt: int = 3, reloc: str = "default"):
    _initialise()
    target = llvm.Target.from_default_triple()
    return target.create_target_machine(cpu=llvm.get_host_cpu_name(),
                                        features=llvm.get_host_cpu_features().flatten(),
                                        opt=opt, reloc=reloc, codemodel="jitdefault"
                                        if reloc == "default" else "default")


def optimise(llvm_ir: str, machine) -> "llvm.ModuleRef":
    """Parse, verify and optimise (O3, new pass manager) LLVM IR text."""
    _initialise()
    module = llvm.parse_assembly(llvm_ir)
    module.triple = machine.triple
    module.data_layout = str(machine.target_data)
    module.verify()
    options = llvm.create_pipeline_tuning_options(speed_level=3)
    options.loop_vectorization = True
    options.slp_vectorization = True
    builder = llvm.create_pass_builder(machine, options)
    builder.getModulePassManager().run(module, builder)
    return module


_COMPILER_DIGEST: list = []


def _compiler_digest() -> str:
    """A digest of the source of the lowering and the code generator, so that a
    changed compiler never reuses code the old one cached."""
    if not _COMPILER_DIGEST:
        package = Path(__file__).resolve().parent.parent
        digest = hashlib.sha256()
        for path in sorted(package.glob("*.py")) + sorted(package.glob("backends/*.py")):
            digest.update(path.read_bytes())
        _COMPILER_DIGEST.append(digest.hexdigest()[:16])
    return _COMPILER_DIGEST[0]


def compile_module(key: str, build) -> "NativeModule":
    digest = hashlib.sha256(f"{CODE_VERSION}|{_compiler_digest()}|{llvmlite.__version__}|"
                            f"{llvm.get_host_cpu_name()}|{key}".encode()).hexdigest()[:32]
    path = cache_dir() / f"{digest}.rlo"
    if path.exists():
        try:
            with open(path, "rb") as f:
                entry, symbols, sites, obj, recursive = pickle.load(f)
            return NativeModule(entry, symbols, sites, obj, recursive)
        except Exception:       # a damaged cache entry is rebuilt
            pass
    module, llvm_module = build()
    machine = target_machine()
    optimised = optimise(str(llvm_module), machine)
    obj = machine.emit_object(optimised)
    symbols = {s: ([p.type for p in fn.params], [(r.name, r.type) for r in fn.results])
               for s, fn in module.functions.items()}
    from .llvm_emit import recursive_symbols

    recursive = bool(recursive_symbols(module))
    native = NativeModule(module.entry, symbols, list(module.sites), obj, recursive)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(temp, "wb") as f:
            pickle.dump((module.entry, symbols, list(module.sites), obj, recursive), f)
        os.replace(temp, path)
    except OSError:             # an unwritable cache only costs the next compile
        pass
    return native


class NativeModule:
    """Object code loaded into its own MCJIT engine."""

    def __init__(self, entry: str, symbols: dict, sites: list, obj: bytes,
                 recursive: bool):
        _initialise()
        self.entry, self.symbols, self.sites = entry, symbols, sites
        self.recursive = recursive      # deep native recursion needs a big stack
        machine = target_machine()
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), machine)
        self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
        self.engine.finalize_object()
        self._functions: dict = {}
        self.out = None                 # where @safe print writes (None: stdout)
        self._install_print_hook()

    def _install_print_hook(self) -> None:
        address = self.engine.get_global_value_address("rev_print_hook")
        if not address:
            return
        hook_type = ctypes.CFUNCTYPE(None, ctypes.c_int64, ctypes.POINTER(ctypes.c_double))

        def hook(site, values):
            import sys

            site_info = self.sites[site]
            count = sum(2 if t == "complex" or isinstance(t, ir.StackType) else 1
                        for _, t in site_info.detail[1] if t is not None)
            line = print_line(site_info, [values[k] for k in range(count)])
            (self.out or sys.stdout).write(line + "\n")

        self._hook = hook_type(hook)        # kept alive with the module
        ctypes.c_void_p.from_address(address).value = ctypes.cast(self._hook,
                                                                  ctypes.c_void_p).value

    def function(self, symbol: str):
        cfunc = self._functions.get(symbol)
        if cfunc is None:
            address = self.engine.get_function_address(symbol + "_entry")
            cfunc = ctypes.CFUNCTYPE(ctypes.c_int32, ctypes.c_void_p, ctypes.c_void_p)(address)
            self._functions[symbol] = cfunc
        return cfunc

    def call(self, symbol: str, values: list, max_depth: int) -> list:
        """The new values of the arguments, followed by (name, value) pairs of the
        store when the function is `main`."""
        types, results = self.symbols[symbol]
        ctx = (ctypes.c_int64 * abi.CTX_WORDS)()
        ctx[abi.CTX_MAX_DEPTH] = max_depth
        holders = []
        try:
            for value, t in zip(values, types):
                holders.append(_argument(value, t))
        except RlangError:          # a stack argument refused: free those copied before
            for holder, t in zip(holders, types):
                if isinstance(t, ir.StackType):
                    _take_stack(holder, t)
            raise
        holders += [_result_holder(t) for _, t in results]
        args = (ctypes.c_void_p * max(1, len(holders)))(
            *[ctypes.addressof(holder) for holder in holders])
        status = self.function(symbol)(ctypes.addressof(ctx), ctypes.addressof(args))
        for value, holder, t in zip(values, holders, types):
            if isinstance(t, ir.StackType):     # in place, as the interpreter's stacks
                value.items[:] = _take_stack(holder, t)
        if status != 0:
            raise error_from_context(list(ctx), self.sites, max_depth)
        new = [_result(value, holder, t) for value, holder, t in zip(values, holders, types)]
        for (name, t), holder in zip(results, holders[len(values):]):
            new.append((name, _store_value(holder, t)))
        return new


def _argument(value, t):
    if isinstance(t, ir.StackType):
        return _stack_holder(value, t)
    if isinstance(t, ir.ArrayType):
        itemsize = value.itemsize
        return (ctypes.c_int64 * (1 + 2 * t.ndim))(
            value.ctypes.data, *value.shape, *[s // itemsize for s in value.strides])
    if t == "complex":
        return (ctypes.c_double * 2)(value.real, value.imag)
    if t == "fixed":
        return ctypes.c_int64(value.raw)
    if t == "ulog":
        return ctypes.c_double(value.log)
    return _SCALAR_CTYPES[t](value)


def _result_holder(t):
    if isinstance(t, ir.StackType):
        return (ctypes.c_int64 * 3)()
    if isinstance(t, ir.ArrayType):
        return (ctypes.c_int64 * (1 + 2 * t.ndim))()
    if t == "complex":
        return (ctypes.c_double * 2)()
    return _SCALAR_CTYPES[t]()


_DTYPES = {"bool": "bool", "i32": "int32", "i64": "int64", "f32": "float32",
           "f64": "float64", "fixed": "int64", "ulog": "float64", "complex": "complex128"}


def _store_value(holder, t):
    """A store variable's value; an array is copied out of the memory the generated
    code allocated, which is then freed."""
    if isinstance(t, ir.StackType):
        from ..values import Stack

        return Stack(t.elem, _take_stack(holder, t))
    if not isinstance(t, ir.ArrayType):
        return _result(None, holder, t)
    import numpy as np

    shape = tuple(holder[1 + k] for k in range(t.ndim))
    array = np.zeros(shape, dtype=_DTYPES[t.elem])
    if array.nbytes:
        ctypes.memmove(array.ctypes.data, holder[0], array.nbytes)
    _libc().free(ctypes.c_void_p(holder[0]))
    from ..numbers import FixedArray, ULogArray

    system = {"fixed": FixedArray, "ulog": ULogArray}.get(t.elem)
    return array.view(system) if system is not None else array


def _stack_holder(stack, t):
    """The `{data, length, capacity}` words of a stack argument: its items copied into
    malloc memory, which the generated code may realloc (llvm_stacks.py)."""
    try:
        data = abi.pack_items(t.elem, stack.items)
    except ValueError as error:
        raise RlangTypeError(f"a stack argument: {error}") from None
    length = len(stack.items)
    if not length:
        return (ctypes.c_int64 * 3)(0, 0, 0)
    pointer = _libc().malloc(len(data))
    if not pointer:
        raise RlangRuntimeError(f"out of memory copying a stack of {length} items")
    ctypes.memmove(pointer, data, len(data))
    return (ctypes.c_int64 * 3)(pointer, length, length)


def _take_stack(holder, t) -> list:
    """The items of a stack's words after a call; its memory is freed."""
    data = ctypes.string_at(holder[0], holder[1] * abi.ITEM_BYTES[t.elem]) if holder[1] \
        else b""
    _libc().free(ctypes.c_void_p(holder[0]))
    holder[0] = holder[1] = holder[2] = 0
    return abi.unpack_items(t.elem, data)


_LIBC: list = []


def _libc():
    if not _LIBC:
        library = ctypes.CDLL(None)
        library.free.argtypes = [ctypes.c_void_p]
        library.malloc.argtypes = [ctypes.c_size_t]
        library.malloc.restype = ctypes.c_void_p
        _LIBC.append(library)
    return _LIBC[0]


def _result(value, holder, t):
    if isinstance(t, (ir.ArrayType, ir.StackType)):
        return value
    if t == "complex":
        return complex(holder[0], holder[1])
    raw = holder.value
    if t == "bool":
        return bool(raw)
    if t == "i32":
        from ..numbers import I32

        return I32(raw)
    if t == "f32":
        from ..numbers import F32

        return F32(raw)
    if t == "fixed":
        from ..numbers import Fixed

        return Fixed(raw)
    if t == "ulog":
        from ..numbers import ULog

        return ULog(raw)
    return raw



