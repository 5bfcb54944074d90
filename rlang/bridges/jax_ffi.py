"""Compiled rev entry points as XLA foreign functions (`jax.ffi`), for the JAX bridge
(rlang/bridges/jax.py): no Python between XLA and the compiled code.

`ffi_runner(function, values)` returns an `FfiRunner` for one specialisation of a
function on the llvm backend, or None where the foreign-function path does not
apply (the bridge then calls rlang through `jax.pure_callback`).  `values` are
stand-ins for the arguments (zeros of the shapes and dtypes JAX traced).  The
runner's `forward(*args)` and `gradient_pass(*outputs, *seeds)` are JAX operations:
the first gives every argument's final value, the second runs the gradient pass
from those outputs with the seeds as the gradients' starting values and gives the
restored inputs, then the gradients.

Note [Foreign function handlers]
~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
XLA calls a handler `XLA_FFI_Error *handler(XLA_FFI_CallFrame *frame)` (the typed
FFI of `xla/ffi/api/c_api.h`, which jaxlib ships).  For each entry point the bridge
uses, a handler is generated in LLVM IR (`_handler_ir`) with the entry point's
address built in:

- asked for its metadata (an extension of type 1 on the frame), it writes the FFI
  version it was built for and no traits;
- at the execute stage it reads the result buffers, which alias the argument
  buffers one for one (`input_output_aliases`: XLA copies an argument first where
  it is still needed), so the entry point updates them in place, as a call updates
  NumPy arrays: a scalar is its buffer's data pointer, an array a descriptor made of
  its data pointer, extents and C-order strides;
- a failed check returns an XLA error whose message is the rlang error, rendered by
  a Python callback from the failure's context words (only failures call Python).

The struct offsets below are those of the x86-64 / AArch64 C layout of API version
0.x; `ffi_runner` uses this path only where jaxlib's header says that major
version, the process is 64-bit, every float is f64 (`jax_enable_x64`), every type is
a plain bool, i32, i64 or f64 scalar or array (the pure_callback path converts the
rest), and the function does not recurse (XLA's threads have small stacks).
"""
from __future__ import annotations

import ctypes
import itertools
import re
import threading
import weakref
from pathlib import Path

import numpy as np

import jax

from ..backends import abi
from ..backends.errors import error_from_context
from ..errors import RlangError
from ..ir import nodes as ir
from ..lower.argument_types import type_of_value
from ..ir.nodes import symbol_of

#: Offsets in XLA's FFI structs (Note [Foreign function handlers]).
_FRAME_EXTENSION, _FRAME_API, _FRAME_STAGE, _FRAME_RETS = 8, 16, 32, 112
_EXTENSION_TYPE, _EXTENSION_METADATA = 8, 24
_BUFFER_DATA, _BUFFER_DIMS = 24, 40
_API_ERROR_CREATE = 48
_STAGE_EXECUTE, _METADATA_EXTENSION, _INVALID_ARGUMENT = 3, 1, 3
_PLAIN = ("bool", "i32", "i64", "f64")
_DTYPES = {"bool": np.bool_, "i32": np.int32, "i64": np.int64, "f64": np.float64}

_COUNTER = itertools.count()
_LOCK = threading.Lock()
#: The runners of each backend object (a module's `compiled`), by specialisation.
_RUNNERS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: Every handler made in this process: its engine, callback and message buffers live
#: as long as XLA may call it.
_KEPT: list = []


def api_version() -> tuple | None:
    """(major, minor) of the FFI header jaxlib ships, or None."""
    try:
        header = Path(jax.ffi.include_dir()) / "xla" / "ffi" / "api" / "c_api.h"
        text = header.read_text()
    except (OSError, AttributeError):
        return None
    major = re.search(r"#define XLA_FFI_API_MAJOR (\d+)", text)
    minor = re.search(r"#define XLA_FFI_API_MINOR (\d+)", text)
    return (int(major.group(1)), int(minor.group(1))) if major and minor else None


def ffi_runner(function, values: list):
    """An FfiRunner for `function` (an api.Function) on arguments like `values`, or
    None (module docstring)."""
    compiled = function.module.compiled
    version = api_version()
    if compiled is None or not getattr(compiled, "batches", False) or version is None \
            or version[0] != 0 or ctypes.sizeof(ctypes.c_void_p) != 8 \
            or not jax.config.jax_enable_x64:
        return None
    try:
        bound = compiled.bind(function.name, values)
        types = tuple(type_of_value(v) for v in bound)
    except RlangError:          # (the pure_callback path reports it)
        return None
    if not all(_plain(t) for t in types) or \
            any(np.dtype(_storage(t)) != np.asarray(v).dtype for t, v in zip(types, values)):
        return None
    cache = _RUNNERS.setdefault(compiled, {})
    key = (function.name, types, function.inverse)
    if key not in cache:
        try:
            cache[key] = _make_runner(compiled, function.name, types, function.inverse,
                                      version)
        except RlangError:      # the backend refuses it (BackendUnsupported), or a
            cache[key] = None   # compile-time error: the pure_callback path says so
    return cache[key]


def _plain(t) -> bool:
    return (t.elem if isinstance(t, ir.ArrayType) else t) in _PLAIN and \
        not isinstance(t, ir.StackType)


def _storage(t):
    return _DTYPES[t.elem if isinstance(t, ir.ArrayType) else t]


def _make_runner(compiled, name: str, types: tuple, inverse: bool, version: tuple):
    from ..ad.adjoint_ir import AdjointFunction
    from ..ad.symbols import shadow_type

    forward = compiled.native(name, types, inverse)
    backward = compiled.native(name, types, inverse, derivative="grad")
    if forward.recursive or backward.recursive:
        return None
    shadows = tuple(s for s in (shadow_type(t) for t in types) if s is not None)
    max_depth = compiled.interpreter.max_depth
    return FfiRunner(
        _target(forward, symbol_of(name, types, inverse), types, max_depth, version),
        _target(backward, AdjointFunction.symbol(symbol_of(name, types, not inverse)),
                types + shadows, max_depth, version),
        types, shadows)


class FfiRunner:
    """The forward and gradient-pass entry points of one specialisation as JAX
    operations (module docstring)."""

    def __init__(self, forward: str, backward: str, types: tuple, shadows: tuple):
        self.forward_target, self.backward_target = forward, backward
        self.types, self.shadows = types, shadows

    def forward(self, *args):
        return _call(self.forward_target, args)

    def gradient_pass(self, *args):
        return _call(self.backward_target, args)


def _call(target: str, args):
    specs = tuple(jax.ShapeDtypeStruct(np.shape(a), jax.numpy.result_type(a)) for a in args)
    return jax.ffi.ffi_call(target, specs, vmap_method="sequential",
                            input_output_aliases={k: k for k in range(len(args))})(*args)


def _target(native, symbol: str, types: tuple, max_depth: int, version: tuple) -> str:
    """Register a handler for `symbol` of `native`; its target name."""
    import llvmlite.binding as llvm

    from ..backends.llvm.jit import optimise, target_machine

    messages: list = []

    def report(ctx):        # a failed check: the rlang error's text, for XLA's error
        try:
            words = ctypes.cast(ctx, ctypes.POINTER(ctypes.c_int64))[:abi.CTX_WORDS]
            text = error_from_context(words, native.sites, max_depth, []).render()
        except Exception as error:      # noqa: BLE001 - nothing may escape into XLA
            text = f"rlang: a check failed ({error})"
        message = ctypes.create_string_buffer(text.encode("utf-8", "replace"))
        messages[:] = [message]         # kept until the next failure
        return ctypes.addressof(message)

    callback = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(report)
    entry = native.engine.get_function_address(symbol + "_entry")
    text = _handler_ir(types, entry, ctypes.cast(callback, ctypes.c_void_p).value,
                       max_depth, version)
    machine = target_machine()
    engine = llvm.create_mcjit_compiler(optimise(text, machine), machine)
    engine.finalize_object()
    handler = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p)(
        engine.get_function_address("rlang_ffi_handler"))
    with _LOCK:
        name = f"rlang_{next(_COUNTER)}_{symbol[:40]}"
        _KEPT.append((engine, callback, handler, messages, native))
    jax.ffi.register_ffi_target(name, jax.ffi.pycapsule(handler), platform="cpu")
    return name


def _handler_ir(types: tuple, entry: int, report: int, max_depth: int, version: tuple) -> str:
    """The LLVM IR of one handler (Note [Foreign function handlers])."""
    lines = []
    emit = lines.append

    def at(pointer: str, offset: int, kind: str, name: str) -> str:
        """Load a `kind` at byte `offset` from the i8* `pointer` into %name."""
        emit(f"  %{name}.b = getelementptr i8, i8* {pointer}, i64 {offset}")
        emit(f"  %{name}.p = bitcast i8* %{name}.b to {kind}*")
        emit(f"  %{name} = load {kind}, {kind}* %{name}.p")
        return f"%{name}"

    def store(value: str, kind: str, pointer: str, offset: int, name: str) -> None:
        emit(f"  %{name}.b = getelementptr i8, i8* {pointer}, i64 {offset}")
        emit(f"  %{name}.p = bitcast i8* %{name}.b to {kind}*")
        emit(f"  store {kind} {value}, {kind}* %{name}.p")

    n = len(types)
    emit("define i8* @rlang_ffi_handler(i8* %frame) {")
    emit("start:")
    ext = at("%frame", _FRAME_EXTENSION, "i8*", "ext")
    emit(f"  %has.ext = icmp ne i8* {ext}, null")
    emit("  br i1 %has.ext, label %extension, label %at.stage")
    emit("extension:")
    kind = at(ext, _EXTENSION_TYPE, "i32", "ext.type")
    emit(f"  %is.meta = icmp eq i32 {kind}, {_METADATA_EXTENSION}")
    emit("  br i1 %is.meta, label %metadata, label %at.stage")
    emit("metadata:")
    meta = at(ext, _EXTENSION_METADATA, "i8*", "meta")
    store("24", "i64", meta, 8, "v.size")           # api_version: {size, ext, major,
    store("null", "i8*", meta, 16, "v.ext")         # minor}, then the traits
    store(str(version[0]), "i32", meta, 24, "v.major")
    store(str(version[1]), "i32", meta, 28, "v.minor")
    store("0", "i32", meta, 32, "traits")
    emit("  ret i8* null")
    emit("at.stage:")
    stage = at("%frame", _FRAME_STAGE, "i32", "stage")
    emit(f"  %execute = icmp eq i32 {stage}, {_STAGE_EXECUTE}")
    emit("  br i1 %execute, label %run, label %done")
    emit("run:")
    emit(f"  %ctx = alloca [{abi.CTX_WORDS} x i64]")
    emit(f"  %ctx.w = bitcast [{abi.CTX_WORDS} x i64]* %ctx to i64*")
    emit(f"  %ctx.b = bitcast [{abi.CTX_WORDS} x i64]* %ctx to i8*")
    emit(f"  call void @llvm.memset.p0i8.i64(i8* %ctx.b, i8 0, i64 {8 * abi.CTX_WORDS}, i1 false)")
    emit(f"  %depth.p = getelementptr i64, i64* %ctx.w, i64 {abi.CTX_MAX_DEPTH}")
    emit(f"  store i64 {max_depth}, i64* %depth.p")
    emit(f"  %args = alloca [{max(n, 1)} x i8*]")
    rets = at("%frame", _FRAME_RETS, "i8**", "rets")
    for k, t in enumerate(types):
        emit(f"  %buf{k}.p = getelementptr i8*, i8** {rets}, i64 {k}")
        emit(f"  %buf{k} = load i8*, i8** %buf{k}.p")
        data = at(f"%buf{k}", _BUFFER_DATA, "i8*", f"data{k}")
        emit(f"  %arg{k}.p = getelementptr [{max(n, 1)} x i8*], [{max(n, 1)} x i8*]* %args, "
             f"i64 0, i64 {k}")
        if not isinstance(t, ir.ArrayType):
            emit(f"  store i8* {data}, i8** %arg{k}.p")
            continue
        d = t.ndim
        dims = at(f"%buf{k}", _BUFFER_DIMS, "i64*", f"dims{k}")
        emit(f"  %desc{k} = alloca [{1 + 2 * d} x i64]")
        emit(f"  %desc{k}.w = bitcast [{1 + 2 * d} x i64]* %desc{k} to i64*")
        emit(f"  %data{k}.i = ptrtoint i8* {data} to i64")
        emit(f"  store i64 %data{k}.i, i64* %desc{k}.w")
        stride = "1"
        for axis in reversed(range(d)):
            emit(f"  %ext{k}.{axis}.p = getelementptr i64, i64* {dims}, i64 {axis}")
            emit(f"  %ext{k}.{axis} = load i64, i64* %ext{k}.{axis}.p")
            emit(f"  %dslot{k}.{axis} = getelementptr i64, i64* %desc{k}.w, i64 {1 + axis}")
            emit(f"  store i64 %ext{k}.{axis}, i64* %dslot{k}.{axis}")
            emit(f"  %sslot{k}.{axis} = getelementptr i64, i64* %desc{k}.w, i64 {1 + d + axis}")
            emit(f"  store i64 {stride}, i64* %sslot{k}.{axis}")
            emit(f"  %stride{k}.{axis} = mul i64 {stride}, %ext{k}.{axis}")
            stride = f"%stride{k}.{axis}"
        emit(f"  %desc{k}.i8 = bitcast [{1 + 2 * d} x i64]* %desc{k} to i8*")
        emit(f"  store i8* %desc{k}.i8, i8** %arg{k}.p")
    emit(f"  %args.p = bitcast [{max(n, 1)} x i8*]* %args to i8**")
    emit(f"  %entry = inttoptr i64 {entry} to i32 (i64*, i8**)*")
    emit("  %status = call i32 %entry(i64* %ctx.w, i8** %args.p)")
    emit("  %failed = icmp ne i32 %status, 0")
    emit("  br i1 %failed, label %fail, label %done")
    emit("fail:")
    emit(f"  %report = inttoptr i64 {report} to i8* (i64*)*")
    emit("  %message = call i8* %report(i64* %ctx.w)")
    api = at("%frame", _FRAME_API, "i8*", "api")
    create = at(api, _API_ERROR_CREATE, "i8* (i8*)*", "create")
    emit("  %eargs = alloca [4 x i64]")
    emit("  %eargs.b = bitcast [4 x i64]* %eargs to i8*")
    store("28", "i64", "%eargs.b", 0, "e.size")       # XLA_FFI_Error_Create_Args
    store("null", "i8*", "%eargs.b", 8, "e.ext")
    store("%message", "i8*", "%eargs.b", 16, "e.message")
    store(str(_INVALID_ARGUMENT), "i32", "%eargs.b", 24, "e.code")
    emit(f"  %error = call i8* {create}(i8* %eargs.b)")
    emit("  ret i8* %error")
    emit("done:")
    emit("  ret i8* null")
    emit("}")
    emit("declare void @llvm.memset.p0i8.i64(i8*, i8, i64, i1)")
    return "\n".join(lines) + "\n"
