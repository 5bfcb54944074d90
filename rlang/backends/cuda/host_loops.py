"""Host functions of the cuda backend compiled for the CPU by Numba, so that loops
between kernel launches do not run as Python.

`outline_loops(module, anywhere)` takes the sequential loops written inline in
functions that launch kernels out into functions of their own
(`<symbol>__loop<k>`), which host code calls without a frame of their own.
`runs_anywhere(module, recursive)` lists the functions whose code can run as a
device function (no `@parallel for`, array ancilla, print or recursion at any
depth); `worth_compiling(module, anywhere)` those of them that loop, which
rlang/backends/cuda/emit.py writes once more as `C_<symbol>` (mode "cpu": device
code without atomics); `compile_for_cpu(program, space, constants)` compiles them
with `numba.njit` and puts a `CpuFunction` in place of each one's Python host code.

Note [Host loops compiled]
~~~~~~~~~~~~~~~~~~~~~~~~~~
Host code is generated Python (emit.py): right for launching kernels, slow for a
sequential loop over array elements, which costs a Python iteration (a few hundred
nanoseconds to microseconds) per element.  A function that loops and has no
`@parallel for` anywhere beneath it is what a device function is, so its device
code — the same helpers, the same checks and error records in `ctx`/`ctxf` — is
compiled once more by `numba.njit` for the CPU (the helpers of device.py
`gpu_namespace(jit=numba.njit)`, which the tests already run on the CPU), with
plain adds where device code adds atomically (one thread: nothing is shared).
Host code calls it through `CpuFunction`, which hands it the host copies of the
array mirrors (the written ones marked as changed on the host, as Python host code
would).  Numba's compilation costs about a second per function, which is more than small
calls save: a function runs as Python until its calls have spent
COMPILE_AFTER_SECONDS there, or until it gets an array of COMPILE_FROM_ELEMENTS
elements or more, and compiled from then on.  Where Numba cannot compile one (a
construct device code never meets), the function keeps running as Python and the
reason is kept in `failure`.  Functions on a call chain through recursion, which
count the call depth (rlang/ir/call_graph.py), stay Python, so that the depth
limit is reached at the interpreter's call; without numba-cuda installed, all host
code stays Python.  Functions
that launch kernels stay Python: their time is the launches'.  A loop written
inline in such a function, with nothing beneath it that launches, prints,
allocates an array or recurses, is taken out into a function of its own first
(`outline_loops`): its parameters are the variables it uses from outside, the
scalars it writes come back as a call's written arguments do, and host code calls
it without adding a frame, so that its errors name the same call chain as the
interpreter's.
"""
from __future__ import annotations

import time

import numpy as np

from ...ir import nodes as ir
from ...ir.walk import defined_vars, nested_bodies, used_vars, walk, writes
from ...types_rules import BackendUnsupported
from .kernels import device_symbols, refuse_device_constructs

_LOOPS = (ir.For, ir.While, ir.From)


def outline_loops(module: ir.Module, anywhere: list) -> tuple:
    """(the module with each outlined loop's function added, {id(loop): its symbol});
    `anywhere`: `runs_anywhere(module, …)`."""
    able = set(anywhere)
    added, outlined = {}, {}

    def visit(symbol: str, fn: ir.Function, body) -> None:
        for stmt in body:
            if isinstance(stmt, _LOOPS) and not getattr(stmt, "parallel", False) and \
                    _device_code(module, [stmt]) and all(
                        s.callee in able for s in walk([stmt]) if isinstance(s, ir.Call)):
                new = _outlined(module, fn, stmt, f"{symbol}__loop{len(outlined)}")
                added[new.symbol] = new
                outlined[id(stmt)] = new.symbol
            elif not (isinstance(stmt, ir.For) and stmt.parallel):
                for inner in nested_bodies(stmt):
                    visit(symbol, fn, inner)

    for symbol, fn in module.functions.items():
        if symbol not in able:
            visit(symbol, fn, fn.body)
    if not added:
        return module, outlined
    return ir.Module(module.entry, {**module.functions, **added}, module.sites), outlined


def _device_code(module: ir.Module, body) -> bool:
    """Whether statements could run as device code, calls aside: no array ancilla,
    print, stack or `@parallel for`."""
    try:
        refuse_device_constructs(module, body, None, "in device functions")
    except BackendUnsupported:
        return False
    return not any(isinstance(s, ir.For) and s.parallel or isinstance(s, (ir.Push, ir.Pop))
                   for s in walk(body))


def _outlined(module: ir.Module, fn: ir.Function, loop, symbol: str) -> ir.Function:
    """The function that runs `loop` of `fn`: its parameters are the variables the
    loop uses from outside (constant arrays stay constants)."""
    inner = defined_vars([loop])
    used = used_vars([loop])
    constants = tuple((v, c) for v, c in fn.constants if v in used)
    constant_vars = {v for v, _ in constants}
    params = tuple(v for v in used if v not in inner and v not in constant_vars)
    written = {place.var for place, _ in writes(module, [loop])}
    return ir.Function(symbol, fn.name, fn.inverse, params, (loop,), fn.span,
                       constants=constants,
                       written=frozenset(k for k, p in enumerate(params) if p in written))


def runs_anywhere(module: ir.Module, recursive: set) -> list:
    """The symbols whose code, with all it calls, could be a device function."""
    able = {symbol: symbol not in recursive and not fn.results and
            _device_code(module, fn.body) for symbol, fn in module.functions.items()}
    return [symbol for symbol, fn in module.functions.items()
            if able[symbol] and all(able[c] for c in device_symbols(module, fn.body))]


def worth_compiling(module: ir.Module, anywhere: list, counted: set) -> list:
    """Of `anywhere`, the functions that loop (themselves or in what they call),
    with every function they call; not those that reach a function that counts the
    call depth (`counted`: rlang/ir/call_graph.py `depth_counted_symbols`), whose
    limit the Python host code checks at the interpreter's call."""
    chosen: dict = {}
    for symbol in anywhere:
        reached = [symbol] + device_symbols(module, module.functions[symbol].body)
        if not counted.intersection(reached) and any(
                isinstance(s, _LOOPS) for r in reached for s in walk(module.functions[r].body)):
            chosen.update(dict.fromkeys(reached))
    return list(chosen)


#: A function runs as Python until its calls have spent this long in Python, or
#: until it is called with an array of at least COMPILE_FROM_ELEMENTS elements.
COMPILE_AFTER_SECONDS = 0.05
COMPILE_FROM_ELEMENTS = 4096


class CpuFunction:
    """Host code's entry to a function compiled for the CPU: called as its Python
    host function is, `(ctx, ctxf, arguments…)` with arrays as `Arr` mirrors."""

    def __init__(self, compiled, python, arrays: list):
        self.compiled, self.python = compiled, python
        self.arrays = arrays            # (position, written) of the array parameters
        self.failure = None             # why Numba could not compile it, if it could not
        self.spent = 0.0                # seconds its calls have run as Python
        self.used = False               # whether the compiled code has run

    def __call__(self, ctx, ctxf, *args):
        if self.failure is None and (self.used or self.spent >= COMPILE_AFTER_SECONDS or any(
                args[k].size >= COMPILE_FROM_ELEMENTS for k, _ in self.arrays)):
            raw = list(args)
            for k, written in self.arrays:
                raw[k] = np.asarray(args[k].w() if written else args[k].h())
            try:
                result = self.compiled(ctx, ctxf, *raw)
                self.used = True
                return result
            except Exception as error:      # Numba's typing and lowering errors
                if not _compile_error(error):
                    raise
                self.failure = f"{type(error).__name__}: {str(error).strip().splitlines()[0]}"
        start = time.perf_counter()
        try:
            return self.python(ctx, ctxf, *args)
        finally:
            self.spent += time.perf_counter() - start


def _compile_error(error: Exception) -> bool:
    from numba.core import errors

    return isinstance(error, (errors.TypingError, errors.LoweringError,
                              errors.UnsupportedError, errors.NumbaNotImplementedError))


def compile_for_cpu(program, space: dict, constants: dict) -> None:
    """Put a `CpuFunction` in `space` for each of `program.cpu` (see the Note)."""
    module = program.module
    if not program.cpu:
        return
    try:
        import numba

        from .device import gpu_namespace
    except ImportError:         # without numba-cuda, host code runs as Python
        return
    from .runtime import device_form

    cpu_space = gpu_namespace(jit=numba.njit)
    cpu_space.update({name: device_form(values) for name, values in constants.items()})
    exec(compile(program.cpu_source, "<rlang-cuda-cpu>", "exec"), cpu_space)
    for symbol in program.cpu:
        cpu_space["C_" + symbol] = numba.njit(cpu_space["C_" + symbol])
    for symbol in program.cpu:
        fn = module.functions[symbol]
        changed = fn.written | fn.accumulated
        arrays = [(k, k in changed) for k, p in enumerate(fn.params)
                  if isinstance(p.type, ir.ArrayType)]
        space["H_" + symbol] = CpuFunction(cpu_space["C_" + symbol], space["H_" + symbol],
                                           arrays)
