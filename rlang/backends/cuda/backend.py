"""The cuda backend: rev functions as Numba-CUDA kernels (LANGUAGE.md §10, docs/cuda.md).

`CudaFunctions(unit, invcheck, interpreter)` calls functions the way the
interpreter does — `call(name, args, inverse)` returns the arguments' new values,
arrays updated in place — by lowering the specialisation for the arguments' types
(rlang/lower/statements.py), writing Python source for its host part, device functions and
kernels (rlang/backends/cuda/emit.py), and compiling the device part with
`numba.cuda.jit` (under NUMBA_ENABLE_CUDASIM=1, Numba's simulator runs it).

It has the interface of the llvm backend's `LlvmFunctions` (`call`, `bind`,
`native`, `run`, `run_main`), so `rlang.gradient` and `rlang.hessian` drive it with
the same code (rlang/ad/compiled.py): `native(…, derivative="grad")` is the
adjoint transform of ~f's IR (rlang/ad/adjoint_ir.py), whose gradient kernels add to
shared gradients atomically (Note [Atomic gradients], backends/cuda/emit.py).
"""
from __future__ import annotations

import contextlib
import itertools
import linecache
import threading

import numpy as np

from ...ir import nodes as ir
from ...deep import run_deep
from ...errors import ReversibilityError, RlangError, RlangTypeError
from ...ad.derivatives import derivative_ir
from ...lower.argument_types import DTYPE_SCALARS, type_of_value
from ...ir.nodes import symbol_of
from ...lower.statements import lower
from .. import abi
from ..functions import CompiledFunctions
from .emit import write_program
from .host_loops import compile_for_cpu
from .runtime import HOST_WORDS, Arr, constant_array, device_bytes, \
    error_from_record, host_namespace, is_device_array, made_on_device, run_host
from .scalar import CTXF_WORDS

_counter = itertools.count()


class CudaFunctions(CompiledFunctions):
    #: gradients always run the forward kernels first (Note [Gradients without the
    #: forward run] is for host memory only)
    forward_free_gradients = False

    def __init__(self, unit, invcheck: bool, interpreter):
        super().__init__(unit, invcheck, interpreter)
        self._programs: dict = {}
        self._scope = threading.local()     # .mirrors: the resident arrays, by id

    @contextlib.contextmanager
    def resident(self):
        """Note [Arrays resident through a gradient]."""
        if getattr(self._scope, "mirrors", None) is not None:
            yield                           # an outer scope keeps them
            return
        self._scope.mirrors = mirrors = {}
        try:
            yield
        finally:
            self._scope.mirrors = None
            for mirror in mirrors.values():
                mirror.finish()

    def prepare_gradients(self, arrays: list) -> None:
        """In a resident scope: the gradient buffers made on the device, each the
        same as its host array already (zeros and a seed), so none is copied."""
        mirrors = getattr(self._scope, "mirrors", None)
        if mirrors is None:
            return
        fresh = [a for a in arrays if id(a) not in mirrors]
        for array, device in zip(fresh, made_on_device(fresh)):
            mirrors[id(array)] = Arr.alike(array, device)

    def types_of(self, values: list) -> tuple:
        """The IR types of bound argument values."""
        return tuple(_type_of(v) for v in values)

    # ------------------------------------------------------------------ calls
    def call(self, name: str, args: list, inverse: bool = False) -> list:
        values = self.bind(name, args)
        types = tuple(_type_of(v) for v in values)
        native = self.native(name, types, inverse)
        results = self.run(native, symbol_of(name, types, inverse), values)
        return [] if name == "main" else results   # arguments, not main's store

    def passes_as_is(self, value) -> bool:
        """Device arrays are taken as they are."""
        return is_device_array(value)

    def check_aliasing(self, fn, values: list) -> None:
        """The interpreter's rule for host arrays, and the same rule on the device."""
        host = [np.empty(0) if is_device_array(v) else v for v in values]
        self.interpreter.check_argument_aliasing(fn, host)
        self._check_device_aliasing(fn, values)

    def to_device(self, arrays: list) -> list:
        """Gradient buffers made on the device (runtime.py `made_on_device`)."""
        return made_on_device(arrays)

    def _check_device_aliasing(self, fn, values: list) -> None:
        """A written device array must not overlap another device array argument (the
        interpreter's rule for NumPy arrays; on the device, address ranges are
        compared, so interleaved views of one array count as the same memory)."""
        spans = {k: device_bytes(v) for k, v in enumerate(values) if is_device_array(v)}
        for i in sorted(self.interpreter.written.get(fn.name, frozenset()) & spans.keys()):
            for j, (lo, hi) in spans.items():
                if j != i and lo < spans[i][1] and spans[i][0] < hi:
                    raise ReversibilityError(
                        f"arguments {min(i, j) + 1} and {max(i, j) + 1} of `{fn.name}` are "
                        f"the same device memory, and `{fn.params[i].name}` is written")

    def run(self, native, symbol: str, values: list) -> list:
        return run_deep(native.call, symbol, values, self.interpreter.max_depth,
                        getattr(self._scope, "mirrors", None))

    def native(self, name: str, types: tuple, inverse: bool, derivative: str = ""):
        """The compiled program of one specialisation, or of a derivative of it
        (rlang/ad/derivatives.py)."""
        key = (name, types, inverse, derivative)
        program = self._programs.get(key)
        if program is None:
            if derivative:
                module, shadows = derivative_ir(self.lowered_for(name, types, inverse),
                                                derivative)
            else:
                module, shadows = self.lowered(name, types, inverse), frozenset()
            program = self._programs[key] = CompiledProgram(module, shadows)
        return program


def build_module(unit, name: str, types: tuple, inverse: bool, invcheck: bool,
                 derivative: str = "") -> tuple:
    """(IR module, shadows updated atomically) of a specialisation or a derivative,
    outside any module's cache (for tests that look at the generated code)."""
    def lowered(backward: bool):
        return lower(unit, name, types, inverse != backward, invcheck)

    if not derivative:
        return lowered(False), frozenset()
    return derivative_ir(lowered, derivative)


class CompiledProgram:
    """The host functions (Python) and kernels (Numba) of one IR module."""

    def __init__(self, module: ir.Module, shadows: frozenset):
        self.module = module
        self.program = program = write_program(module, shadows)
        self.sites = module.sites
        self.loops = [plan.loop.var.name for plan in program.kernels]
        constants = {name: constant_array(c) for name, c in program.constants.items()}
        space = host_namespace(self.sites)
        space.update(constants)
        if program.kernels:
            space.update(_compile_device(program, constants))
        _exec(program.source, space)
        compile_for_cpu(program, space, constants)      # Note [Host loops compiled]
        self.space = space

    def call(self, symbol: str, values: list, max_depth: int, mirrors=None) -> list:
        """The new values of the arguments (then the store of `main`); `mirrors`:
        those of a resident scope (Note [Arrays resident through a gradient]), where
        host arrays are looked up and left, not brought back."""
        fn = self.module.functions[symbol]
        ctx = np.zeros(HOST_WORDS, dtype=np.int64)
        ctx[abi.CTX_MAX_DEPTH] = max_depth
        ctxf = np.zeros(CTXF_WORDS, dtype=np.float64)
        args = [_mirror(v, mirrors) if isinstance(p.type, ir.ArrayType) else _plain(v, p.type)
                for v, p in zip(values, fn.params)]
        try:
            result = run_host(self.space["H_" + symbol], ctx, ctxf, *args)
        finally:
            new = [(v if mirrors is not None and mirrors.get(id(v)) is a else a.finish())
                   if isinstance(a, Arr) else v for a, v in zip(args, values)]
        if result[0] != 0:
            raise error_from_record(ctx, ctxf, self.sites, max_depth, self.loops)
        back = self.program.back[symbol]
        for j, k in enumerate(back):
            new[k] = _typed(result[1 + j], fn.params[k].type)
        for var, value in zip(fn.results, result[1 + len(back):]):
            if isinstance(value, Arr):
                value = value.value(var.type.elem)
            else:
                value = _typed(value, var.type)
            new.append((var.name, value))
        return new


def _mirror(value, mirrors):
    """The Arr of an array argument: in a resident scope, the one a host array already
    has there (or a new one, kept); else a new one."""
    if mirrors is None or is_device_array(value):
        return Arr.of(value)
    mirror = mirrors.get(id(value))
    if mirror is None or mirror.user is not value:
        mirror = mirrors[id(value)] = Arr.of(value)
    return mirror


# Note [Arrays resident through a gradient]
# ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
# `rlang.gradient` is two calls: f forward, then its gradient pass from f's outputs
# (rlang/ad/compiled.py).  Each call used to copy its NumPy arrays to the device and
# the written ones back, so every input crossed twice each way and the gradient
# buffers, zeros, were uploaded.  The driver now makes both calls inside
# `functions.resident()`: a host array keeps one mirror (runtime.py `Arr`) for the
# scope, by identity, so the forward call's device copies serve the gradient pass;
# the pass's gradient buffers are made on the device (`made_on_device`), where
# their host arrays already hold the same zeros and seed, so neither side is
# copied; when the scope ends, the arrays the device changed come back, once.  The
# driver reads no array values inside the scope (ulog values, whose seeds and
# gradients it reads, and `on_outputs` keep the plain calls).  An error ends the
# scope too: the arrays are brought back before it is raised, as after a call.


def _compile_device(program, constants: dict) -> dict:
    """The kernels, jitted (device functions are compiled with them)."""
    try:
        from numba import cuda

        from .device import common_namespace, gpu_namespace
    except ImportError:
        raise RlangError("the cuda backend needs numba-cuda to run `@parallel for` "
                         "kernels: pip install 'rlang[cuda]'") from None
    from .launches import Privatised, simulated
    from .privatised import variant_names
    from .runtime import device_form

    if simulated():
        from .systems import namespace

        space = namespace()
    else:
        space = gpu_namespace()
    space.update(common_namespace(simulated()))
    space.update({name: device_form(values) for name, values in constants.items()})
    _exec(program.device_source, space)
    for symbol in program.device:
        space["D_" + symbol] = cuda.jit(device=True)(space["D_" + symbol])
    kernels = {}
    for plan in program.kernels:
        kernels[plan.name] = cuda.jit(space[plan.name])
        if plan.private:        # Note [Privatised gradients on the GPU]: `launch` picks
            variants = [cuda.jit(space[name]) for name in variant_names(plan)]
            kernels[plan.name] = Privatised(kernels[plan.name], *variants,
                                            *plan.private_positions())
    return kernels


def _exec(source: str, space: dict) -> None:
    """Run generated source, registered with linecache so that tracebacks and Numba's
    messages can quote it."""
    filename = f"<rlang-cuda-{next(_counter)}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), space)


def _type_of(value):
    """The IR type of an argument (device arrays by their dtype and rank)."""
    if is_device_array(value):
        scalar = DTYPE_SCALARS.get(np.dtype(value.dtype))
        if not value.ndim:
            raise RlangTypeError("the cuda backend takes device arrays of at least one "
                                 "dimension, not 0-d ones (pass a scalar as a number)")
        if scalar is None:
            raise RlangTypeError(f"the cuda backend does not handle device arrays of "
                                 f"{value.dtype}")
        return ir.ArrayType(scalar, value.ndim)
    return type_of_value(value, "cuda")


def _plain(value, t):
    """A scalar argument as the Python value generated code computes with (a fixed
    as its raw integer, a ulog as its logarithm)."""
    if t in ("f32", "f64"):
        return float(value)
    if t == "bool":
        return bool(value)
    if t == "fixed":
        return value.raw
    if t == "ulog":
        return value.log
    if t == "complex":
        return complex(value)
    return int(value)


def _typed(value, t):
    """A scalar result with its rev type (as the interpreter returns it)."""
    from ...numbers import F32, I32, Fixed, ULog

    if t == "bool":
        return bool(value)
    if t == "i32":
        return I32(int(value))
    if t == "f32":
        return F32(float(value))
    if t == "i64":
        return int(value)
    if t == "fixed":
        return Fixed(int(value))
    if t == "ulog":
        return ULog(float(value))
    if t == "complex":
        return complex(value)
    return float(value)
